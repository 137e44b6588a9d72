"""Fields that refuse what they cannot read, instead of coercing it (DRF would turn 123 into "123"
and "yes" into True). A wrong JSON type is a 422 naming the field."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from transcription.pipeline.languages import UnknownLanguage, normalize_language, whisper_language


class StrictCharField(serializers.CharField):
    default_error_messages = {"not_a_string": "Input should be a valid string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"not_a_boolean": "Input should be a valid boolean (true or false)."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("not_a_boolean")
        return data


class StrictChoiceField(serializers.ChoiceField):
    default_error_messages = {"invalid_choice": "Input should be one of: {choices}."}

    def to_internal_value(self, data):
        if not isinstance(data, str) or data not in self.choices:
            self.fail("invalid_choice", choices=", ".join(f"'{c}'" for c in self.choices))
        return data


@extend_schema_field(
    {"type": "string", "description": "ISO 639-1 or ISO 639-3 code of the spoken language; null detects it."}
)
class LanguageCodeField(StrictCharField):
    default_error_messages = {"unknown_language": "{message}"}

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("default", None)
        kwargs.setdefault("max_length", 12)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            whisper_language(value)
        except UnknownLanguage as error:
            self.fail("unknown_language", message=str(error))
        return value


class TargetLanguagesField(serializers.ListField):
    """Language names or ISO codes, at most 10; duplicates (by language) are collapsed, the
    first spelling the client used is kept."""

    default_error_messages = {
        "not_a_list": "Input should be a valid list.",
        "max_length": "At most {max_length} target languages are allowed.",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("default", None)
        kwargs.setdefault("max_length", 10)
        kwargs.setdefault("child", TargetLanguageField())
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        values = super().to_internal_value(data)
        seen, unique = set(), []
        for value in values:
            code = normalize_language(value)
            if code not in seen:
                seen.add(code)
                unique.append(value)
        return unique


class TargetLanguageField(StrictCharField):
    default_error_messages = {"unknown_language": "{message}"}

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 100)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            normalize_language(value)
        except UnknownLanguage as error:
            self.fail("unknown_language", message=str(error))
        return value


@extend_schema_field(OpenApiTypes.STR)
class UrlField(StrictCharField):
    """Any string: a URL that cannot be fetched is not a 422 but a job that fails with a reason."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 2048)
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("trim_whitespace", True)
        super().__init__(**kwargs)
