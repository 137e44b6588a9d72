"""Email confirmation for self-service sign-ups: a one-time link (Django's password-reset token
machinery, with its own salt) mailed through Django's email backend (settings: a file under
var/mail in `make run`, SMTP when EMAIL_HOST is set).

The token hashes the login's state, `is_active` included, so a link stops working once it has
been used, and after PASSWORD_RESET_TIMEOUT seconds."""

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode


class EmailConfirmationTokenGenerator(PasswordResetTokenGenerator):
    key_salt = "accounts.confirmation.EmailConfirmationTokenGenerator"

    def _make_hash_value(self, user, timestamp):
        return f"{super()._make_hash_value(user, timestamp)}{user.is_active}"


confirmation_tokens = EmailConfirmationTokenGenerator()


def confirmation_link(request, user) -> str:
    path = reverse(
        "accounts:confirm",
        kwargs={"uid": urlsafe_base64_encode(force_bytes(user.pk)), "token": confirmation_tokens.make_token(user)},
    )
    return request.build_absolute_uri(path)


def send_confirmation(request, user) -> None:
    link = confirmation_link(request, user)
    body = render_to_string("accounts/email/confirm.txt", {"link": link, "email": user.email})
    send_mail("Confirm your email address", body, None, [user.email])


def user_from_link(uid: str, token: str):
    """The login the link was made for, or None if the link is wrong, used or expired."""
    try:
        user = get_user_model().objects.get(pk=int(urlsafe_base64_decode(uid).decode()))
    except (ValueError, TypeError, OverflowError, get_user_model().DoesNotExist):
        return None
    return user if confirmation_tokens.check_token(user, token) else None
