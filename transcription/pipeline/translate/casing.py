"""Capitals in a translated sentence cut over several cues: a cue that continues a sentence starts
in lower case, unless its first word always has a capital (a name, a German noun, "I")."""

from __future__ import annotations

from transcription.pipeline.recognition.words import ends_sentence, language_key

LEADING_PUNCT = "\"'“‘«¿¡([—–-"


def always_capitalised(word: str, source: str, translation: str, language: str | None) -> bool:
    """Whether ``word`` keeps its capital inside a sentence: "I" in English, acronyms, any German
    noun, and a word written with a capital inside the source or the rest of the translation
    (a name)."""
    bare = word.strip(LEADING_PUNCT + ".,;:!?…»”’)")
    if not bare or not bare[0].isupper():
        return True
    if language_key(language) == "de" or (bare == "I" and language_key(language) == "en"):
        return True
    if len(bare) > 1 and bare.isupper():
        return True
    # inside the source once, or inside the translation somewhere besides this cue's start
    for text, enough in ((source, 1), (translation, 2)):
        words = text.split()
        inside = sum(
            1
            for before, after in zip(words, words[1:])
            if after.strip(LEADING_PUNCT + ".,;:!?…»”’)") == bare and not ends_sentence(before)
        )
        if inside >= enough:
            return True
    return False


def capitalised_like(translation: str, source: str) -> str:
    """The translation of a sentence starts with a capital when the source's does (Apertium may
    put a pronoun of its own first: "ils ne sont pas là")."""
    start = next((ch for ch in source if ch.isalpha()), "")
    at = next((i for i, ch in enumerate(translation) if ch.isalpha()), None)
    if start.isupper() and at is not None and translation[at].islower():
        return translation[:at] + translation[at].upper() + translation[at + 1 :]
    return translation


def continue_lowercase(parts: list[str], source: str, translation: str, language: str | None) -> list[str]:
    """A cue that continues a sentence does not start with a capital letter unless its first word
    always has one (``always_capitalised``)."""
    out = list(parts)
    for k in range(1, len(out)):
        previous = next((part for part in reversed(out[:k]) if part), "")
        words = out[k].split()
        if not words or not previous or ends_sentence(previous.split()[-1]):
            continue
        first = words[0]
        if always_capitalised(first, source, translation, language):
            continue
        at = next(i for i, ch in enumerate(first) if ch not in LEADING_PUNCT)
        out[k] = out[k].replace(first, first[:at] + first[at].lower() + first[at + 1 :], 1)
    return out
