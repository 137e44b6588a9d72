"""Password reset by mail and password change while signed in: Django's own views
(django.contrib.auth.views), with what this service adds around them.

- Reset: the same page whether or not the address has a login, in the same time: the request
  counts and queues, and the hooks worker mails (Django's form mails only an existing, active
  login, and swallows a mail server's failure); the link built on PUBLIC_BASE_URL, not the
  request's Host; mails limited per client address and per recipient
  (accounts.password_services), counted for every address alike. The link is
  Django's token: single-use (it hashes the password and last sign-in) and expiring
  (PASSWORD_RESET_TIMEOUT). A new password ends every session of the login, this browser's too
  (Django's session auth hash): the holder signs in with it.
- Change: the current password is checked through authenticate(), so django-axes counts a wrong
  one as a failed sign-in and a locked-out address is refused (429), as on the sign-in page:
  a borrowed session cannot guess the password here without limit. update_session_auth_hash keeps
  this browser signed in; every other session of the login ends on its next request.
"""

from django import forms
from django.contrib import messages
from django.contrib.auth import authenticate
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpResponseRedirect
from django.urls import reverse_lazy

from . import tasks
from .client import client_address
from .forms import HolderPasswordResetForm
from .password_services import ResetRefused, password_reset_admit


class PasswordResetRequestView(auth_views.PasswordResetView):
    form_class = HolderPasswordResetForm
    success_url = reverse_lazy("accounts:password-reset-sent")

    def form_valid(self, form):
        """Count the request and queue its mail: the same work whether or not the address has a
        login (the worker looks it up: accounts.password_services.password_reset_mail)."""
        email = form.cleaned_data["email"]
        try:
            password_reset_admit(email, client_address=client_address(self.request))
        except ResetRefused as refused:
            form.add_error(None, str(refused))
            return self.render_to_response(self.get_context_data(form=form), status=429)
        tasks.mail_password_reset.delay(email)  # the worker looks the address up, after the count's commit
        return HttpResponseRedirect(self.get_success_url())


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
