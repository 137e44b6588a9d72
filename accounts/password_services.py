"""The limits on password-reset mails: the writes behind accounts.password_views' reset form.

Django's PasswordResetView mails the link (its token is single-use: it hashes the login's password
and last sign-in, so a new password or a sign-in kills it; and it expires after
PASSWORD_RESET_TIMEOUT). What Django leaves open is how often: a reset form is a way to mail anybody,
as often as one likes. So, as for sign-up's confirmation mails, each request is a row
(PasswordResetRequest), counted per client address (PASSWORD_RESETS_PER_HOUR) and per recipient
(PASSWORD_RESET_MAILS_PER_HOUR). Every request counts, whether or not the address has a login, and
a refusal reads the same either way: the reset form never tells who has an account.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from .models import PasswordResetRequest

KEPT = timedelta(hours=1)


class ResetRefused(Exception):
    """Why no reset mail goes out; the page answers 429 with this message."""


def _serialize_on(*names: str) -> None:
    """Requests for one recipient or from one address, one at a time until commit, so that
    concurrent POSTs cannot all pass the count (PostgreSQL advisory locks; SQLite, the embedded
    default, has one writer at a time anyway)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for name in sorted(set(names)):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"accounts.password_reset:{name}"])


@transaction.atomic
def password_reset_admit(email: str, *, client_address: str | None) -> None:
    """Count a reset request for `email` from `client_address`, or raise ResetRefused when either
    has had its hour's worth. Called before Django's form mails anything."""
    email = get_user_model().objects.normalize_email(email).strip()
    _serialize_on(email.upper(), client_address or "")
    now = timezone.now()
    PasswordResetRequest.objects.filter(created_at__lt=now - KEPT).delete()
    hour_ago = now - KEPT
    if client_address and (
        PasswordResetRequest.objects.filter(client_address=client_address, created_at__gte=hour_ago).count()
        >= settings.PASSWORD_RESETS_PER_HOUR
    ):
        raise ResetRefused("Too many password resets asked from your address. Try again in an hour.")
    if (
        PasswordResetRequest.objects.filter(email__iexact=email, created_at__gte=hour_ago).count()
        >= settings.PASSWORD_RESET_MAILS_PER_HOUR
    ):
        raise ResetRefused(
            "Several reset links have been asked for this address in the last hour: use the latest one,"
            " or try again later."
        )
    PasswordResetRequest.objects.create(email=email, client_address=client_address or None)
