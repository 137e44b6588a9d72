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


class SignupForm(forms.Form):
    email = forms.EmailField(label="Email", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="At least 8 characters, not a common password.",
    )

    def clean_email(self):
        User = get_user_model()
        email = User.objects.normalize_email(self.cleaned_data["email"]).strip()
        if User.objects.filter(username__iexact=email).exists() or User.objects.filter(email__iexact=email).exists():
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
