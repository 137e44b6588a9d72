"""What billing does when another app announces something: an opened account gets its sign-up
allowance (accounts.signals.account_opened, sent inside the transaction that opens it)."""

from django.dispatch import receiver

from accounts.signals import account_opened

from .services import grant_signup_minutes


@receiver(account_opened, dispatch_uid="billing.grant_signup_allowance")
def grant_signup_allowance(sender, account, minutes: int, **kwargs) -> None:
    grant_signup_minutes(account, minutes)
