"""Email confirmation for self-service sign-ups: a link to a page whose button (a CSRF-protected
POST, with the password chosen at sign-up) confirms; mailed through Django's email backend
(settings: a file under var/mail in `make run`, SMTP when EMAIL_HOST is set).

The link is /account/confirm/<sign-up id>/<secret>/: the secret is random, only its digest is
stored (Signup.secret_digest), so the database does not hold working links. A link works once
(Signup.used_at), for EMAIL_CONFIRMATION_SECONDS, and only while no login holds the address.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from .models import Signup


def new_secret() -> tuple[str, str]:
    """(secret for the link, digest to store)."""
    secret = secrets.token_urlsafe(32)
    return secret, secret_digest(secret)


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def public_link(path: str) -> str:
    """`path` on PUBLIC_BASE_URL: a mailed link never takes its host or port from the request's
    `Host` header, which the sender chooses (any port of an allowed host passes Django's check)."""
    return settings.PUBLIC_BASE_URL.rstrip("/") + path


def confirmation_link(signup: Signup, secret: str) -> str:
    return public_link(reverse("accounts:confirm", kwargs={"uid": str(signup.pk), "token": secret}))


def send_confirmation(signup: Signup, secret: str) -> None:
    link = confirmation_link(signup, secret)
    hours = settings.EMAIL_CONFIRMATION_SECONDS // 3600
    body = render_to_string(
        "accounts/email/confirm.txt", {"link": link, "email": signup.email, "lifetime": _lifetime(hours)}
    )
    send_mail("Confirm your email address", body, None, [signup.email])


def send_signup_notice(signup: Signup) -> None:
    """To the holder of an address that has an account, instead of a link: someone signed up with
    it (sign-up answers alike either way, so only the mailbox learns the address is taken)."""
    body = render_to_string(
        "accounts/email/signup_taken.txt",
        {"email": signup.email, "sign_in": public_link(reverse("accounts:login"))},
    )
    send_mail("Someone tried to sign up with your address", body, None, [signup.email])


def _lifetime(hours: int) -> str:
    if hours >= 48 and hours % 24 == 0:
        return f"{hours // 24} days"
    return f"{hours} hours" if hours != 1 else "an hour"


def signup_from_link(uid: str, token: str) -> Signup | None:
    """The pending sign-up the link was made for, or None if the link is wrong, used or expired."""
    if not uid.isdigit() or len(uid) > 18:
        return None
    signup = Signup.objects.filter(pk=int(uid), used_at__isnull=True).first()
    if signup is None or not hmac.compare_digest(signup.secret_digest, secret_digest(token)):
        return None
    if signup.created_at < timezone.now() - timedelta(seconds=settings.EMAIL_CONFIRMATION_SECONDS):
        return None
    return signup
