"""Fields that refuse what they cannot read, instead of coercing it (DRF would turn 123 into "123"
and "yes" into True). A wrong JSON type is a 422 naming the field."""

import ipaddress
import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from transcription.job_options import KEY_TERM_MAX_LENGTH
from transcription.pipeline.recognition.languages import UnknownLanguage, normalize_language, whisper_language


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
    {
        "$ref": "#/components/schemas/LanguageCode",
        "description": "ISO 639-1 or ISO 639-3 code of the spoken language; null (the default) detects it.",
    }
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


@extend_schema_field(
    {
        "type": "array",
        "items": {"$ref": "#/components/schemas/LanguageName"},
        "maxItems": 10,
        "description": "Language names or ISO 639-1/639-3 codes (case-insensitive), at most 10; duplicates are "
        "collapsed. Each one is charged: see the pricing rules above.",
    }
)
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
        # More than 10 items is a 422 even when some repeat (the document says maxItems 10), and
        # counted as sent, before any item is looked up: 300,000 x "es" costs nothing to refuse,
        # and 100,000 unknown names do not each get an entry in the 422.
        if isinstance(data, list) and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
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


# A key term holds no control character (C0, DEL, C1) nor line or paragraph separator, and something
# besides spaces; published as this pattern and checked with it (ECMAScript and Python read it alike:
# U+FEFF, a space to ECMAScript's \s and not to Python's, is named apart).
_CONTROL = r"[\u0000-\u001f\u007f-\u009f\u2028\u2029]"
_TERM_CHAR = r"[^\u0000-\u001f\u007f-\u009f\u2028\u2029]"
_TERM_SOLID = r"[^\s\ufeff\u0000-\u001f\u007f-\u009f\u2028\u2029]"
KEY_TERM_PATTERN = f"^{_TERM_CHAR}*{_TERM_SOLID}{_TERM_CHAR}*$"


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": KEY_TERM_MAX_LENGTH, "pattern": KEY_TERM_PATTERN})
class KeyTermField(StrictCharField):
    """One key term: 1 to `max_length` characters as sent (spaces at either end then dropped),
    something besides spaces, no control character."""

    default_error_messages = {
        "control": "A key term may not hold a control character or a line break.",
        "blank": "A key term may not be empty.",
        "max_length": "A key term must have at most {max_length} characters.",
    }

    def to_internal_value(self, data):
        if isinstance(data, str):
            if self.max_length is not None and len(data) > self.max_length:  # as sent, as the schema counts
                self.fail("max_length", max_length=self.max_length)
            if not re.fullmatch(KEY_TERM_PATTERN, data):
                self.fail("control" if re.search(_CONTROL, data) else "blank")
        return super().to_internal_value(data)


class KeyTermsField(serializers.ListField):
    """Names and terms recognition is biased towards (transcription.job_options, `key_terms`):
    at most `max_length` of them, each a KeyTermField; a term sent twice is kept once."""

    default_error_messages = {
        "not_a_list": "Input should be a valid list.",
        "max_length": "At most {max_length} key terms are allowed.",
    }

    def __init__(self, *, term_length: int, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("default", list)
        kwargs.setdefault("child", KeyTermField(max_length=term_length))
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        # counted as sent, before any item is looked at (as target_languages)
        if isinstance(data, list) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return list(dict.fromkeys(super().to_internal_value(data)))


# RFC 3986: scheme ":" hier-part ["?" query] ["#" fragment], checked piece by piece.
_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
_URI = re.compile(
    r"^[A-Za-z][A-Za-z0-9+.\-]*:"
    r"(?://(?P<authority>[^/?#]*)(?:/" + _PCHAR + r"*)*|(?:/|" + _PCHAR + r")*)"
    r"(?:\?(?:" + _PCHAR + r"|[/?])*)?"
    r"(?:#(?:" + _PCHAR + r"|[/?])*)?$"
)
_AUTHORITY = re.compile(
    r"^(?:(?:[A-Za-z0-9\-._~!$&'()*+,;=:]|%[0-9A-Fa-f]{2})*@)?"
    r"(?:\[(?P<ipv6>[^\]]*)\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)"
    r"(?::[0-9]*)?$"
)


def is_absolute_uri(value: str) -> bool:
    """Whether `value` is an absolute URI by RFC 3986, what OpenAPI's `format: uri` means."""
    match = _URI.match(value)
    if not match:
        return False
    authority = match.group("authority")
    if authority is None:
        return True
    host = _AUTHORITY.match(authority)
    if not host:
        return False
    if host.group("ipv6") is not None:
        try:
            ipaddress.IPv6Address(host.group("ipv6"))
        except ValueError:
            return False
    return True


@extend_schema_field(
    {
        "type": "string",
        "format": "uri",
        "maxLength": 2048,
        "description": "Address of the video (an absolute URI). One that cannot be fetched is not refused here: "
        "the job ends `failed` with the reason in `error`.",
    }
)
class UrlField(StrictCharField):
    """An absolute URI (RFC 3986), as the document says. A URI that cannot be fetched (another
    scheme, a private host, a missing file) is not a 422 but a job that fails with a reason."""

    default_error_messages = {"not_a_uri": "Input should be a URL, an absolute URI such as https://example.com/video."}

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 2048)
        # Taken as sent: " https://…" is not a URI, and the document says so.
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not is_absolute_uri(value):
            self.fail("not_a_uri")
        return value


SPEAKER_NAME_MAX_CHARS = 40
# A name goes where `txt` and WebVTT put "Speaker N": "[00:00:03] Alice: ..." and "<v Alice>", so it
# holds no line break (any of those str.splitlines knows), ":", "<" or ">", and something besides
# spaces. The same pattern is published in the document and checked here (ECMAScript and Python read
# it alike); spaces at either end are then dropped.
_NAME_CHAR = r"[^\u0000:<>\r\n\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]"
_NAME_SOLID = r"[^\u0000:<>\s\u001c-\u001e\u0085\u2028\u2029]"
# Nor does it end in "--": "<v Q&A -->" holds "-->", which ends a WebVTT cue (the spec forbids it in
# cue text); names stored before this rule are rendered safely by pipeline.transcripts.speaker_names.
SPEAKER_NAME_PATTERN = f"^(?![\\s\\S]*--\\s*$){_NAME_CHAR}*{_NAME_SOLID}{_NAME_CHAR}*$"
SPEAKER_NAME_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": SPEAKER_NAME_MAX_CHARS,
    "pattern": SPEAKER_NAME_PATTERN,
}


@extend_schema_field(
    {
        **SPEAKER_NAME_SCHEMA,
        "description": "1 to 40 characters without line breaks, `:`, `<` or `>`, not ending in `--`; spaces at "
        "either end are dropped.",
        "examples": ["Alice"],
    }
)
class SpeakerNameField(StrictCharField):
    """A speaker's name, as `txt` ("[00:00:03] Alice: ...") and WebVTT ("<v Alice>") can carry it."""

    default_error_messages = {
        "forbidden": "A name may not hold a line break, ':', '<' or '>'.",
        "cue_end": "A name may not end in '--' (in WebVTT, '-->' ends a cue).",
        "blank": "A name must have 1 to 40 characters.",
        "max_length": "A name must have 1 to 40 characters.",
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", SPEAKER_NAME_MAX_CHARS)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        # (a null character: DRF's own message below; the pattern leaves it out, as DRF refuses it)
        if (
            isinstance(data, str)
            and "\x00" not in data
            and data.strip()
            and not re.fullmatch(SPEAKER_NAME_PATTERN, data)
        ):
            self.fail(
                "cue_end" if data.strip().endswith("--") and re.fullmatch(_NAME_CHAR + "*", data) else "forbidden"
            )
        return super().to_internal_value(data)


@extend_schema_field(
    {
        "type": "object",
        "propertyNames": {"pattern": "^[1-9][0-9]{0,3}$"},
        "additionalProperties": {"anyOf": [SPEAKER_NAME_SCHEMA, {"type": "null"}]},
        "minProperties": 1,
        "description": 'Names by the `N` of `Speaker N` in the job\'s `txt`: `{"1": "Alice"}`. A name is 1 to 40 '
        "characters without line breaks, `:`, `<` or `>`, not ending in `--`; null gives the speaker back its number.",
        "examples": [{"1": "Alice", "2": "Bob"}],
    }
)
class SpeakerNamesField(serializers.Field):
    """{"1": "Alice", "2": null}: every entry checked, each error under its own key."""

    default_error_messages = {
        "not_an_object": 'Input should be an object of names by speaker number, such as {{"1": "Alice"}}.',
        "empty": "Give at least one speaker a name.",
        "not_a_number": "A key is the N of 'Speaker N' in the job's transcript: a whole number from 1.",
    }

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_an_object")
        if not data:
            self.fail("empty")
        names, errors = {}, {}
        for key, value in data.items():
            if not (isinstance(key, str) and key.isascii() and key.isdigit() and 0 < int(key) < 10000):
                errors[key] = [serializers.ErrorDetail(self.error_messages["not_a_number"], code="not_a_number")]
                continue
            if value is None:
                names[str(int(key))] = None
                continue
            try:
                names[str(int(key))] = SpeakerNameField().run_validation(value)
            except serializers.ValidationError as error:
                errors[key] = error.detail
        if errors:
            raise serializers.ValidationError(errors)
        return names

    def to_representation(self, value):
        return value
