"""A password validator Django's four do not cover: a password of 8 spaces or "aaaaaaaa" passes
the length, common-password and numeric checks, yet anybody guesses it."""

from django.core.exceptions import ValidationError

MIN_DISTINCT_CHARACTERS = 4


class VarietyValidator:
    def validate(self, password, user=None):
        if not password.strip():
            raise ValidationError("This password is only spaces.", code="password_blank")
        if len(set(password)) < MIN_DISTINCT_CHARACTERS:
            raise ValidationError(
                f"This password needs at least {MIN_DISTINCT_CHARACTERS} different characters.",
                code="password_too_simple",
            )

    def get_help_text(self):
        return f"Your password must contain at least {MIN_DISTINCT_CHARACTERS} different characters."
