from django import forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.forms import AuthenticationForm


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
            # Django says "wrong email or password" for a sign-up not yet confirmed, whose
            # login is inactive; say what to do instead (only to someone who knows the password).
            User = get_user_model()
            user = User.objects.filter(username__iexact=self.cleaned_data.get("username") or "").first()
            password = self.cleaned_data.get("password") or ""
            if user is not None and not user.is_active and user.last_login is None and user.check_password(password):
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

    # A sign-up not confirmed yet with this email: the view mails its link again.
    unconfirmed_user = None

    def clean_email(self):
        User = get_user_model()
        email = User.objects.normalize_email(self.cleaned_data["email"]).strip()
        existing = (
            User.objects.filter(username__iexact=email).first() or User.objects.filter(email__iexact=email).first()
        )
        if existing is not None and not existing.is_active and existing.last_login is None:
            self.unconfirmed_user = existing
        elif existing is not None:
            raise forms.ValidationError("An account with this email already exists. Sign in instead.")
        return email

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


class ConfirmForm(forms.Form):
    """The server-side half of a confirmation step: the POST must carry confirm=yes."""

    confirm = forms.CharField()

    def clean_confirm(self):
        if self.cleaned_data["confirm"] != "yes":
            raise forms.ValidationError("Not confirmed.")
        return True
