from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm, PasswordResetForm

from .services import signup_pending_with


class HolderPasswordResetForm(PasswordResetForm):
    """Django's form, which also mails an active login that has no password yet (an account an
    operator made with `create_account` and no --password): the mailbox's holder sets a first one,
    without asking support for a shell. Deactivated logins still get nothing."""

    def get_users(self, email):
        active = get_user_model()._default_manager.filter(email__iexact=email, is_active=True)
        return (user for user in active if user.email.casefold() == email.casefold())


class EmailAuthenticationForm(AuthenticationForm):
    """Django's sign-in form; the username of an account's login is its email address."""

    username = forms.CharField(
        label="Email",
        max_length=254,
        widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}),
    )

    def clean(self):
        try:
            return super().clean()
        except forms.ValidationError as error:
            # Django says "wrong email or password" for an address with no login yet; to someone
            # who knows the password of a sign-up still waiting for its link, say what to do.
            email = self.cleaned_data.get("username") or ""
            password = self.cleaned_data.get("password") or ""
            if email and password and self.get_user() is None and signup_pending_with(email, password):
                raise forms.ValidationError(
                    "Confirm your email address first: open the link we sent you.", code="unconfirmed"
                ) from error
            raise


class SignupForm(forms.Form):
    email = forms.EmailField(label="Email", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, not like your email, not a common password, not only digits.",
    )

    def clean_email(self):
        return get_user_model().objects.normalize_email(self.cleaned_data["email"]).strip()

    def clean(self):
        cleaned = super().clean()
        password = cleaned.get("password")
        if password:
            User = get_user_model()
            try:
                password_validation.validate_password(
                    password, User(username=cleaned.get("email") or "", email=cleaned.get("email") or "")
                )
            except forms.ValidationError as error:
                self.add_error("password", error)
        return cleaned


class SignupConfirmForm(forms.Form):
    """The confirmation page's button: the password chosen at sign-up, so that whoever confirms
    holds both the mailbox and the password (a link someone else asked for confirms nothing)."""

    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password", "autofocus": True}),
        help_text="The password you chose when you signed up.",
    )


class ConfirmForm(forms.Form):
    """The server-side half of a confirmation step: the POST must carry confirm=yes."""

    confirm = forms.CharField()

    def clean_confirm(self):
        if self.cleaned_data["confirm"] != "yes":
            raise forms.ValidationError("Not confirmed.")
        return True
