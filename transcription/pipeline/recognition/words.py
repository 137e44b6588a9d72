"""What the text stages know about words as the speech model writes them: sentence and clause
ends, punctuation that attaches, audio-event tags, scripts written without spaces, and each
language's function words (where a line must not end, and how a language is guessed).

Pure functions over the dataclasses of :mod:`transcription.pipeline.types`. Used by cleaning,
captions, line breaking and sentence splitting in asr.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from transcription.pipeline.types import Segment, Word

SENTENCE_END = re.compile(r"[.!?…。！？]['\"”’»)\]]*$")
# Words whose full stop ends no sentence: titles and common abbreviations (an initial, "J.", neither).
_ABBREVIATIONS = frozenset(
    "mr. mrs. ms. dr. prof. st. jr. sr. vs. etc. e.g. i.e. approx. dept. sra. sig. hr. fr.".split()
)
CLAUSE_END = re.compile(r"[,;:，、；：—–-]['\"”’»)\]]*$")
TRAILING_PUNCT = re.compile(r"[^\w\]]+$")
MUSIC_CHARS = "♪♫♬♩🎵🎶"
OPENING_PUNCT = set("¿¡«“‘\"'([{")
ATTACHING_PUNCT = set(",.;:!?…)]}»”’\"'%。，、；：！？")


def word_core(text: str) -> str:
    """The word itself: lowercased, without surrounding punctuation."""
    return re.sub(r"^[\W_]+|[\W_]+$", "", text.strip()).lower()


def has_word_chars(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def is_tag(text: str) -> bool:
    text = text.strip()
    return len(text) > 2 and text[0] == "[" and text[-1] == "]"


def is_nospace_char(ch: str) -> bool:
    """Scripts written without spaces between words (CJK, kana, Thai, Lao, Khmer, Myanmar)."""
    if not ch:
        return False
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x9FFF  # CJK radicals, kana, CJK unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables (spaced, but tokens arrive glued)
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
        or 0x0E00 <= code <= 0x0EFF  # Thai, Lao
        or 0x1000 <= code <= 0x109F  # Myanmar
        or 0x1780 <= code <= 0x17FF  # Khmer
        or 0x20000 <= code <= 0x2FFFF
    )


def segment_words(segment: Segment) -> list[Word]:
    """The segment's words; a segment without word timestamps gets words spread over its time in
    proportion to their length, so that everything downstream can work on words."""
    if segment.words:
        return list(segment.words)
    parts = segment.text.split()
    if not parts:
        return []
    total = sum(len(p) + 1 for p in parts)
    span = max(0.0, segment.end - segment.start)
    words, at = [], segment.start
    for part in parts:
        length = span * (len(part) + 1) / total
        words.append(Word(start=at, end=at + length, text=" " + part))
        at += length
    return words


def language_key(language: str | None) -> str | None:
    if not language:
        return None
    return re.split(r"[-_]", language.strip().lower())[0] or None


def ends_sentence(text: str) -> bool:
    """Whether a word ends a sentence: "then." and "what?\"" do; "Mr.", "e.g." and "J." do not."""
    text = text.strip()
    if not SENTENCE_END.search(text):
        return False
    original = text.lstrip("".join(OPENING_PUNCT))
    word = original.lower()
    if word in _ABBREVIATIONS:
        return False
    # "J." is an initial; "I." and a lower-case one-letter word ("a." in Galician, "é." in Portuguese) end one
    return not (len(word) == 2 and original[0].isupper() and word[1] == "." and word != "i.")


# A line or a cue never ends on one of these (when it carries no punctuation).
NO_BREAK_AFTER = {
    "en": {
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "about",
        "as",
        "and",
        "or",
        "but",
        "nor",
        "if",
        "than",
        "my",
        "your",
        "his",
        "her",
        "its",
        "our",
        "their",
        "i",
        "this",
        "these",
        "those",
        "some",
        "any",
        "no",
        "every",
        "each",
        "over",
        "under",
        "between",
        "through",
        "during",
        "without",
        "within",
        "upon",
        "via",
        "per",
        "because",
        "while",
        "although",
        "whether",
        "not",
        "very",
        "mr",
        "mrs",
        "ms",
        "dr",
    },
    "es": {
        "el",
        "la",
        "los",
        "las",
        "un",
        "una",
        "unos",
        "unas",
        "de",
        "del",
        "al",
        "a",
        "en",
        "con",
        "por",
        "para",
        "y",
        "e",
        "o",
        "u",
        "ni",
        "que",
        "sin",
        "sobre",
        "entre",
        "hacia",
        "desde",
        "hasta",
        "mi",
        "mis",
        "tu",
        "tus",
        "su",
        "sus",
        "lo",
        "se",
        "no",
        "muy",
        "pero",
    },
    "fr": {
        "le",
        "la",
        "les",
        "l'",
        "un",
        "une",
        "des",
        "du",
        "de",
        "d'",
        "au",
        "aux",
        "à",
        "en",
        "dans",
        "sur",
        "sous",
        "avec",
        "pour",
        "par",
        "et",
        "ou",
        "mais",
        "que",
        "qu'",
        "ce",
        "cette",
        "ces",
        "mon",
        "ma",
        "mes",
        "ton",
        "ta",
        "tes",
        "son",
        "sa",
        "ses",
        "notre",
        "votre",
        "leur",
        "leurs",
        "je",
        "tu",
        "il",
        "elle",
        "nous",
        "vous",
        "ils",
        "elles",
        "ne",
        "se",
        "très",
        "chez",
        "vers",
        "sans",
        "entre",
    },
    "de": {
        "der",
        "die",
        "das",
        "den",
        "dem",
        "des",
        "ein",
        "eine",
        "einen",
        "einem",
        "einer",
        "eines",
        "und",
        "oder",
        "aber",
        "mit",
        "von",
        "zu",
        "zum",
        "zur",
        "im",
        "in",
        "an",
        "am",
        "auf",
        "aus",
        "bei",
        "für",
        "nach",
        "über",
        "unter",
        "vor",
        "durch",
        "gegen",
        "ohne",
        "um",
        "dass",
        "wenn",
        "als",
        "ob",
        "weil",
        "mein",
        "meine",
        "dein",
        "deine",
        "sein",
        "seine",
        "ihr",
        "ihre",
        "unser",
        "unsere",
        "sehr",
        "nicht",
    },
    "it": {
        "il",
        "lo",
        "la",
        "i",
        "gli",
        "le",
        "un",
        "uno",
        "una",
        "di",
        "del",
        "della",
        "dei",
        "delle",
        "da",
        "dal",
        "in",
        "nel",
        "nella",
        "con",
        "su",
        "sul",
        "per",
        "tra",
        "fra",
        "e",
        "o",
        "ma",
        "che",
        "non",
    },
    "pt": {
        "o",
        "a",
        "os",
        "as",
        "um",
        "uma",
        "uns",
        "umas",
        "de",
        "do",
        "da",
        "dos",
        "das",
        "em",
        "no",
        "na",
        "nos",
        "nas",
        "com",
        "por",
        "para",
        "pelo",
        "pela",
        "e",
        "ou",
        "mas",
        "que",
        "não",
        "muito",
    },
    "nl": {
        "de",
        "het",
        "een",
        "van",
        "in",
        "op",
        "aan",
        "met",
        "voor",
        "naar",
        "en",
        "of",
        "maar",
        "dat",
        "om",
        "bij",
        "uit",
        "door",
        "te",
        "niet",
    },
}
NO_BREAK_ALL = set().union(*NO_BREAK_AFTER.values())
# Poor but tolerable places to end a line or cue: pronouns and auxiliaries before their verb,
# intensifiers, question words ("we | are", "so | much", "about how | subtitles").
WEAK_BREAK_AFTER = {
    "en": {
        "so",
        "too",
        "really",
        "quite",
        "just",
        "more",
        "most",
        "less",
        "will",
        "would",
        "can",
        "could",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "do",
        "does",
        "did",
        "am",
        "we",
        "you",
        "he",
        "she",
        "it",
        "they",
        "who",
        "which",
        "what",
        "how",
        "when",
        "where",
        "why",
        "that",
        "there",
        "i'm",
        "it's",
        "we're",
        "you're",
        "they're",
        "don't",
        "can't",
        "won't",
        "didn't",
        "isn't",
    },
    "es": {"es", "son", "está", "están", "ha", "han", "más", "muy", "como", "cuando", "donde"},
    "fr": {"est", "sont", "a", "ont", "plus", "comme", "quand", "où", "qui", "c'est"},
    "de": {"ist", "sind", "hat", "haben", "wird", "werden", "ich", "wir", "er", "es", "sie", "noch", "so"},
}
WEAK_BREAK_ALL = set().union(*WEAK_BREAK_AFTER.values())


def guess_language(texts: Iterable[str]) -> str | None:
    """The language whose function words are most frequent among ``texts`` (words as whisper
    writes them), when they make up at least a tenth of them; None when unsure. Used only when the
    caller does not say, so that e.g. German "um" and "er" are not taken for English fillers."""
    counts = dict.fromkeys(NO_BREAK_AFTER, 0)
    total = 0
    for text in texts:
        core = word_core(text)
        if not core:
            continue
        total += 1
        for key, words in NO_BREAK_AFTER.items():
            if core in words:
                counts[key] += 1
    best = max(counts, key=counts.__getitem__)
    if total == 0 or counts[best] < max(3, total / 10):
        return None
    if sorted(counts.values())[-2] == counts[best]:
        return None
    return best
