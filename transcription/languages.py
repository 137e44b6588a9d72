"""Language names and codes as clients send them, read with langcodes.

Clients may name a language ("Spanish", "español") or give an ISO 639-1 / 639-3 code
("es", "spa"), in any case. Everything is normalised to the shortest standard code ("es").
"""
from __future__ import annotations

import langcodes


class UnknownLanguage(ValueError):
    pass


def normalize_language(text: str) -> str:
    """Return the shortest ISO 639 code for a language name or code, or raise UnknownLanguage."""
    cleaned = text.strip()
    if not cleaned:
        raise UnknownLanguage("Language must not be empty.")
    if cleaned.isascii() and cleaned.isalpha() and len(cleaned) in (2, 3):
        tag = langcodes.Language.get(cleaned.lower())
        if tag.is_valid() and tag.language and tag.has_name_data():
            return tag.language
    try:
        return langcodes.find(cleaned).language
    except (LookupError, ValueError):
        raise UnknownLanguage(f"Unknown language: {text!r}. Use a language name or an ISO 639-1/639-3 code.") from None


def language_name(code: str) -> str:
    return langcodes.Language.get(code).display_name()


# The recogniser's own codes differ from ISO in a few places.
_SPEECH_ALIASES = {"jv": "jw", "nb": "no"}


def speech_languages() -> frozenset[str]:
    """Codes the speech model (Whisper) recognises."""
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    return frozenset(_LANGUAGE_CODES)


def speech_language(code: str) -> str:
    """Map an ISO 639-1/639-3 code to the speech model's code, or raise UnknownLanguage."""
    normalized = normalize_language(code)
    normalized = _SPEECH_ALIASES.get(normalized, normalized)
    if normalized not in speech_languages():
        raise UnknownLanguage(f"The speech model does not recognise the language {code!r}.")
    return normalized
