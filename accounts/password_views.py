"""Password reset by mail and password change while signed in: Django's own views
(django.contrib.auth.views), with what this service adds around them.

- Reset: the same page whether or not the address has a login (Django's form mails only an
  existing, active login, and swallows a mail server's failure); mails limited per client address
  and per recipient (accounts.password_services), counted for every address alike. The link is
  Django's token: single-use (it hashes the password and last sign-in) and expiring
  (PASSWORD_RESET_TIMEOUT). A new password ends every session of the login, this browser's too
  (Django's session auth hash): the holder signs in with it.
- Change: the current password is checked through authenticate(), so django-axes counts a wrong
  one as a failed sign-in and a locked-out address is refused (429), as on the sign-in page:
  a borrowed session cannot guess the password here without limit. update_session_auth_hash keeps
  this browser signed in; every other session of the login ends on its next request.
"""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm, PasswordResetForm
from django.urls import reverse_lazy

from .client import client_address
from .password_services import ResetRefused, password_reset_admit


class HolderPasswordResetForm(PasswordResetForm):
    """Django's form, which also mails an active login that has no password yet (an account an
    operator made with `create_account` and no --password): the mailbox's holder sets a first one,
    without asking support for a shell. Deactivated logins still get nothing."""

    def get_users(self, email):
        active = get_user_model()._default_manager.filter(email__iexact=email, is_active=True)
        return (user for user in active if user.email.casefold() == email.casefold())


def lifetime_words(seconds: int) -> str:
    """'an hour', '2 hours', '45 minutes', '3 days': how long a mailed link works, for the mail."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}s" if count != 1 else ("an hour" if unit == "hour" else f"a {unit}")
    return f"{seconds} seconds"


class PasswordResetRequestView(auth_views.PasswordResetView):
    form_class = HolderPasswordResetForm
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"
    success_url = reverse_lazy("accounts:password-reset-sent")

    @property
    def extra_email_context(self):
        return {"lifetime": lifetime_words(settings.PASSWORD_RESET_TIMEOUT)}

    def form_valid(self, form):
        try:
            password_reset_admit(form.cleaned_data["email"], client_address=client_address(self.request))
        except ResetRefused as refused:
            form.add_error(None, str(refused))
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().form_valid(form)


class PasswordResetSentView(auth_views.PasswordResetDoneView):
    pass


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    success_url = reverse_lazy("accounts:password-reset-complete")


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    pass


class CountedPasswordChangeForm(PasswordChangeForm):
    """Django's form, its current-password check made a sign-in attempt (see the module)."""

    def __init__(self, user, *args, request=None, **kwargs):
        super().__init__(user, *args, **kwargs)
        self.request = request

    def clean_old_password(self):
        old_password = self.cleaned_data["old_password"]
        # None for a wrong password (axes records the failure) and for a locked-out address
        # (axes marks the request; its middleware answers with the lockout page).
        if authenticate(self.request, username=self.user.get_username(), password=old_password) is None:
            raise forms.ValidationError(self.error_messages["password_incorrect"], code="password_incorrect")
        return old_password


class PasswordChangeView(auth_views.PasswordChangeView):
    form_class = CountedPasswordChangeForm
    success_url = reverse_lazy("accounts:api")

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "request": self.request}

    def form_valid(self, form):
        response = super().form_valid(form)  # saves, and keeps this session (update_session_auth_hash)
        messages.success(self.request, "Password changed. Every other browser signed in to your account is signed out.")
        return response
