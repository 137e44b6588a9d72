"""Language names and codes, read with langcodes: the one place that turns what a client wrote,
what a translation backend calls a language, and what the speech model calls it, into each other.

- ``normalize_language``: a client's "Spanish", "español", "es" or "spa" -> "es", or UnknownLanguage.
- ``short_code``: a code or tag from a backend ("eng", "pt_BR") -> "en", "pt"; never raises.
- ``whisper_language``: an ISO 639 code -> the speech model's code, or UnknownLanguage.
- ``language_label``: "es" -> "Spanish", for messages.

Only langcodes is imported here, so the API can check languages without loading the speech model.
"""

from __future__ import annotations

import unicodedata

import langcodes
from langcodes.data_dicts import LANGUAGE_ALPHA3

# The speech model's language codes (faster_whisper.tokenizer._LANGUAGE_CODES; a test checks that
# they agree). Mostly ISO 639-1; "haw" and "yue" are 639-3, and Whisper writes Javanese "jw".
WHISPER_LANGUAGES: frozenset[str] = frozenset(
    "af am ar as az ba be bg bn bo br bs ca cs cy da de el en es et eu fa fi fo fr gl gu ha haw he hi hr ht hu "
    "hy id is it ja jw ka kk km kn ko la lb ln lo lt lv mg mi mk ml mn mr ms mt my ne nl nn no oc pa pl ps pt ro "
    "ru sa sd si sk sl sn so sq sr su sv sw ta te tg th tk tl tr tt uk ur uz vi yi yo zh yue".split()
)

# Standard codes whose Whisper spelling differs.
_WHISPER_ALIASES = {
    "jv": "jw",  # Javanese
    "nb": "no",  # Norwegian Bokmål -> Whisper's "Norwegian"
    "fil": "tl",  # Filipino (langcodes turns "tl"/"tgl" into "fil")
}


class UnknownLanguage(ValueError):
    pass


def _unknown(text: str) -> UnknownLanguage:
    return UnknownLanguage(f"Unknown language: {text!r}. Use a language name or an ISO 639-1/639-3 code.")


def normalize_language(text: str) -> str:
    """The shortest ISO 639 code for a language name or code a client sent, or UnknownLanguage."""
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
        raise _unknown(text)
    try:
        found = langcodes.find(cleaned).language
    except (LookupError, ValueError):
        raise _unknown(text) from None
    if found is None:  # a name langcodes knows always has a language subtag; say so to the checker
        raise _unknown(text)
    return found


def short_code(code: str) -> str:
    """The shortest code for a language tag a program wrote: "eng" -> "en", "pt_BR" -> "pt",
    "ast" -> "ast". Unknown but well-formed codes come back lowercased."""
    try:
        return langcodes.Language.get(code.strip().replace("_", "-")).language or code.strip().lower()
    except (ValueError, LookupError, AttributeError):
        return code.strip().lower()


def language_label(code: str) -> str:
    """English name of a language code ("es" -> "Spanish"); the code itself when unknown."""
    try:
        language = langcodes.Language.get(code.strip().replace("_", "-"))
        if not language.is_valid():
            return code
        return language.display_name()
    except (ValueError, LookupError, AttributeError):
        return code


def whisper_language(code: str) -> str:
    """The speech model's code for an ISO 639-1 / 639-3 (or BCP 47) code: "spa" -> "es",
    "en-US" -> "en", "cmn" -> "zh". UnknownLanguage for languages the model does not know."""
    if not isinstance(code, str) or not code.strip():
        raise UnknownLanguage(f"Empty or invalid language code: {code!r}")
    raw = code.strip().replace("_", "-")
    if raw.lower() in WHISPER_LANGUAGES:
        return raw.lower()
    for macro in (False, True):
        try:
            language = langcodes.Language.get(langcodes.standardize_tag(raw, macro=macro)).language
        except (ValueError, langcodes.tag_parser.LanguageTagError):
            break
        if language:
            language = _WHISPER_ALIASES.get(language, language)
            if language in WHISPER_LANGUAGES:
                return language
    raise UnknownLanguage(f"Language code {code!r} is not supported by Whisper.")


def speech_language_choices() -> list[tuple[str, str]]:
    """(code, English name) of every language the speech model knows, by name: a form's choices."""
    return sorted(((code, language_label(code)) for code in WHISPER_LANGUAGES), key=lambda item: item[1])


def speech_language_codes() -> list[str]:
    """The language_code values the OpenAPI document lists: the standard code (ISO 639-1 where
    there is one, else ISO 639-3) of every language the speech model knows. whisper_language
    reads more spellings of them (639-3 codes, any case, BCP 47 tags); the list stays short, since
    a client generated from the document, and every test of it, walks the whole list."""
    codes = {langcodes.Language.get(normalize_language(code)).language for code in WHISPER_LANGUAGES}
    return sorted(code for code in codes if code)


def target_language_names() -> list[str]:
    """The target_languages values the OpenAPI document lists: the English name of every language
    with an ISO 639-1 code or that the speech model knows. normalize_language reads more (codes,
    any case, names in other languages, any language langcodes knows)."""
    names = set()
    for code in {*LANGUAGE_ALPHA3, *WHISPER_LANGUAGES}:
        try:
            language = normalize_language(code)
        except UnknownLanguage:
            continue
        name = language_label(language)
        if name.isprintable() and _reads_as(name, language):
            names.add(name)
    return sorted(names)


def _reads_as(name: str, code: str) -> bool:
    try:
        return normalize_language(name) == code
    except UnknownLanguage:
        return False
