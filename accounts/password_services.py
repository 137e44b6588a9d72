"""The limits on password-reset mails: the writes behind accounts.password_views' reset form.

Django's PasswordResetView mails the link (its token is single-use: it hashes the login's password
and last sign-in, so a new password or a sign-in kills it; and it expires after
PASSWORD_RESET_TIMEOUT). What Django leaves open is how often: a reset form is a way to mail anybody,
as often as one likes. So, as for sign-up's confirmation mails, each request is a row
(PasswordResetRequest), counted per client address (PASSWORD_RESETS_PER_HOUR) and per recipient
(PASSWORD_RESET_MAILS_PER_HOUR). Every request counts, whether or not the address has a login, and
a refusal reads the same either way: the reset form never tells who has an account.

Nor does its timing (issue 56): the request only counts and queues; password_reset_mail, on the
`hooks` worker (accounts.tasks), looks the address up and mails, so the answer takes the same work
whether or not a login holds the address (an SMTP exchange took hundreds of milliseconds, only
for addresses with an account). Its link begins with PUBLIC_BASE_URL, never the request's `Host`,
which a sender chooses within ALLOWED_HOSTS (any port of it) and so could point the link elsewhere.
"""

from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from .forms import HolderPasswordResetForm
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


def lifetime_words(seconds: int) -> str:
    """'an hour', '2 hours', '45 minutes', '3 days': how long a mailed link works, for the mail."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}s" if count != 1 else ("an hour" if unit == "hour" else f"a {unit}")
    return f"{seconds} seconds"


def password_reset_mail(email: str) -> None:
    """Mail the reset link to the login of `email`, when one holds it (Django's form: an active
    login only; a mail server's failure is logged, not raised). Run by the hooks worker for every
    admitted request alike, so that the web's answer never waits on it."""
    form = HolderPasswordResetForm({"email": email})
    if not form.is_valid():  # the view's own form let it through: nothing to do for a bad address
        return
    base = settings.PUBLIC_BASE_URL.rstrip("/")
    form.save(
        domain_override=urlsplit(base).netloc,
        use_https=base.startswith("https://"),
        email_template_name="registration/password_reset_email.txt",
        subject_template_name="registration/password_reset_subject.txt",
        extra_email_context={"lifetime": lifetime_words(settings.PASSWORD_RESET_TIMEOUT), "base_url": base},
    )
