"""Writes for accounts and tokens."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from billing.services import grant_signup_minutes

from .models import Account, ApiToken
from .tokens import PREFIX_LENGTH, new_token, token_digest


@transaction.atomic
def account_create(email: str, *, password: str | None = None, minutes: int | None = None) -> Account:
    """Create a login and its account, with the sign-up allowance (FREE_MINUTES unless given)."""
    User = get_user_model()
    email = User.objects.normalize_email(email).strip()
    user = User(username=email, email=email)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    account = Account.objects.create(user=user)
    grant_signup_minutes(account, settings.FREE_MINUTES if minutes is None else minutes)
    return account


@transaction.atomic
def token_issue(account: Account) -> str:
    """Create the account's token, or replace the existing one (which stops working at once).

    Returns the token itself: the only time it is ever seen.
    """
    token = new_token()
    ApiToken.objects.filter(account=account).delete()
    ApiToken.objects.create(account=account, prefix=token[:PREFIX_LENGTH], digest=token_digest(token))
    return token


def token_revoke(account: Account) -> bool:
    """Delete the account's token; returns whether there was one."""
    deleted, _ = ApiToken.objects.filter(account=account).delete()
    return deleted > 0
