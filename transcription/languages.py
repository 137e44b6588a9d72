"""Language names and codes as clients send them, read with langcodes.

Clients may name a language ("Spanish", "español") or give an ISO 639-1 / 639-3 code
("es", "spa"), in any case. Everything is normalised to the shortest standard code ("es").
"""
from __future__ import annotations

import unicodedata

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
    # No language name holds a control character, and langcodes' name index crashes on a NUL
    # (SystemError from marisa-trie): refuse them before the lookup.
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in cleaned):
        raise UnknownLanguage(f"Unknown language: {text!r}. Use a language name or an ISO 639-1/639-3 code.")
    try:
        return langcodes.find(cleaned).language
    except (LookupError, ValueError):
        raise UnknownLanguage(f"Unknown language: {text!r}. Use a language name or an ISO 639-1/639-3 code.") from None


def language_name(code: str) -> str:
    return langcodes.Language.get(code).display_name()


def speech_language(code: str) -> str:
    """The speech model's code for an ISO 639-1/639-3 code, or raise UnknownLanguage.

    The mapping itself lives with the recogniser (pipeline.asr.whisper_language).
    """
    from .pipeline.asr import whisper_language

    try:
        return whisper_language(code)
    except ValueError as error:
        raise UnknownLanguage(str(error)) from None
