from django.conf import settings
from django.db import models
from django.db.models.functions import Upper


class Account(models.Model):
    """A paying customer: one login (Django user), one API token, one minute balance."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="account")
    plan = models.ForeignKey("billing.Plan", null=True, blank=True, on_delete=models.PROTECT, related_name="accounts")
    renews_on = models.DateField(null=True, blank=True, help_text="Next date the plan's monthly minutes are granted.")
    # When and by whom the current plan was assigned (billing.services.plan_change): renewals
    # grant no period that began before it, and name the person on their ledger entries.
    plan_assigned_on = models.DateField(null=True, blank=True, editable=False)
    plan_assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, editable=False, on_delete=models.PROTECT, related_name="+"
    )
    # The client address a self-service sign-up came from (sign-ups per address are limited);
    # empty for accounts made by operators.
    signup_address = models.GenericIPAddressField(null=True, blank=True, editable=False)
    # Signed file links (transcription.storage.artifacts) made up to this moment no longer work: set when
    # the token is revoked or replaced (accounts.services), so a leaked link dies with its token.
    file_links_revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.email

    @property
    def email(self) -> str:
        return self.user.email


class ApiToken(models.Model):
    """The account's one API token. Only a SHA-256 digest is stored; the token is shown once."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="api_token")
    prefix = models.CharField(max_length=16, help_text="First characters of the token, for recognising it.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.prefix}…"


class Signup(models.Model):
    """A self-service sign-up waiting for its mailed link: the address, the password chosen (hashed)
    and the digest of the link's secret. It holds no login and no account: those are made when the
    link's page is confirmed (accounts.services.signup_confirm), with this row's password, and every
    other pending sign-up of the address is discarded then. Rows are kept for an hour at least, since
    they are also the count of confirmation mails sent (per recipient, per client address)."""

    email = models.EmailField(max_length=254)
    password = models.CharField(max_length=128, help_text="Hashed; emptied once the sign-up is used or discarded.")
    secret_digest = models.CharField(max_length=64, unique=True)
    client_address = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Confirmed, or discarded because another sign-up of the address was: the link is dead.
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(Upper("email"), "created_at", name="signup_email_created"),
            models.Index(fields=["client_address", "created_at"], name="signup_address_created"),
        ]

    def __str__(self):
        return self.email


class PasswordResetRequest(models.Model):
    """One request for a password-reset mail, whether or not the address has a login (the answer
    is the same either way, so the count must be too): the count behind the per-recipient and
    per-client-address limits (accounts.password_services). Rows older than an hour are deleted by
    the next request. The link itself is Django's token, stored nowhere."""

    email = models.EmailField(max_length=254)
    client_address = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [
            models.Index(Upper("email"), "created_at", name="reset_email_created"),
            models.Index(fields=["client_address", "created_at"], name="reset_address_created"),
        ]

    def __str__(self):
        return self.email
