"""Turn timed words into a clean transcript and broadcast-style subtitles.

Pure functions over the dataclasses of :mod:`transcription.pipeline.types`; nothing here knows about
Django, files or the speech model.

    segments = clean_words(segments, verbatim=False, tag_audio_events=True, language="en")
    txt = transcript_text(segments)
    cues = build_cues(segments, language="en")
    srt, vtt = to_srt(cues), to_webvtt(cues)

Subtitle rules (see ``build_cues``): at most 42 characters a line and 2 lines a cue, at most 20
characters a second, each cue on screen 1 to 7 seconds, cues never overlap, breaks at sentence ends,
pauses and speaker changes rather than after an article or preposition, and "- " dashes only when
the speaker changes inside a cue. All times inside ``build_cues`` are whole milliseconds, so what
SRT/WebVTT store (milliseconds) is exactly what was checked.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import pysubs2

from .types import Segment, Word

__all__ = [
    "Cue",
    "MAX_LINE_CHARS",
    "MAX_LINES",
    "MAX_CPS",
    "MIN_DURATION",
    "MAX_DURATION",
    "CUE_GAP",
    "clean_words",
    "transcript_text",
    "build_cues",
    "to_srt",
    "to_webvtt",
    "from_srt",
    "wrap_lines",
]

MAX_LINE_CHARS = 42
MAX_LINES = 2
MAX_CPS = 20.0
MIN_DURATION = 1.0  # seconds
MAX_DURATION = 7.0  # seconds
CUE_GAP = 0.08  # seconds between two cues: two frames at 25 fps

_MIN_MS = int(MIN_DURATION * 1000)
_MAX_MS = int(MAX_DURATION * 1000)
_GAP_MS = int(round(CUE_GAP * 1000))
_MS_PER_CHAR = 1000.0 / MAX_CPS
_PAUSE_MS = 500  # a gap between words at least this long is a pause, a good place to break
_CLOSE_GAP_MS = 500  # shorter gaps between cues are closed (end extended) to avoid flicker
_MAX_LEAD_MS = 500  # a cue may appear this much before its first word when it needs the time
_DASH = "- "


@dataclass
class Cue:
    start: float  # seconds, whole milliseconds
    end: float
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# --------------------------------------------------------------------------------------------
# Words
# --------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?…。！？]['\"”’»)\]]*$")
# Words whose full stop ends no sentence: titles and common abbreviations (an initial, "J.", neither).
_ABBREVIATIONS = frozenset(
    "mr. mrs. ms. dr. prof. st. jr. sr. vs. etc. e.g. i.e. approx. dept. sra. sig. hr. fr.".split()
)
_CLAUSE_END = re.compile(r"[,;:，、；：—–-]['\"”’»)\]]*$")
_TRAILING_PUNCT = re.compile(r"[^\w\]]+$")
_MUSIC_CHARS = "♪♫♬♩🎵🎶"
_OPENING_PUNCT = set("¿¡«“‘\"'([{")
_ATTACHING_PUNCT = set(",.;:!?…)]}»”’\"'%。，、；：！？")


def _core(text: str) -> str:
    """The word itself: lowercased, without surrounding punctuation."""
    return re.sub(r"^[\W_]+|[\W_]+$", "", text.strip()).lower()


def _has_word_chars(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _is_tag(text: str) -> bool:
    text = text.strip()
    return len(text) > 2 and text[0] == "[" and text[-1] == "]"


def _is_nospace_char(ch: str) -> bool:
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


def _segment_words(segment: Segment) -> list[Word]:
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


def _language_key(language: str | None) -> str | None:
    if not language:
        return None
    return re.split(r"[-_]", language.strip().lower())[0] or None


# --------------------------------------------------------------------------------------------
# clean_words
# --------------------------------------------------------------------------------------------

_FILLERS = {
    # "um" is a word in German and Portuguese, "er" in German: fillers depend on the language.
    "en": r"u+m+|u+h+m*|e+r+m*|h+m+|m{2,}|a+h+",
    "de": r"ä+h+m*|ö+h+m*|e+h+m+|h+m+|m{2,}",
    "fr": r"e+u+h+|h+e+u+|h+u+m+|h+m+|m{2,}",
    "es": r"e+h+m*|e+m+|a+h+|h+m+|m{2,}",
    "it": r"e+h+m*|h+m+|m{2,}",
    "pt": r"e+h+m*|h+m+|m{2,}",
    "nl": r"e+u+h+m*|u+h+m*|e+h+m+|h+m+|m{2,}",
}
_FILLERS_OTHER = r"h+m+|m{2,}|u+h+m+|e+h+m+"
_FILLER_RES = {key: re.compile(rf"^(?:{pattern})$") for key, pattern in _FILLERS.items()}
_FILLER_OTHER_RE = re.compile(rf"^(?:{_FILLERS_OTHER})$")

# Words that are legitimately doubled ("had had", "very very", "bye bye"): never de-duplicated.
_DOUBLES = {
    "en": {"had", "that", "is", "very", "really", "no", "yes", "yeah", "bye", "ha", "haha", "hey", "ho", "la",
           "na", "da", "blah", "bla", "knock", "go", "well", "more", "many", "far", "again", "over", "round",
           "now", "there", "never", "come", "tick", "tock", "boom", "bang", "hip"},
    "de": {"die", "das", "der", "den", "dem", "sie", "ja", "nein", "so", "na"},
    "fr": {"nous", "vous", "non", "oui", "si", "très"},
    "es": {"no", "sí", "si", "ya", "muy", "bueno"},
    "it": {"no", "sì", "si", "molto"},
    "pt": {"não", "sim", "muito"},
    "nl": {"nee", "ja", "heel"},
}
_CONJUNCTIONS = {"and", "or", "und", "oder", "et", "ou", "y", "o", "e", "en", "of"}
_STUTTER_PRONE = {"i", "we", "you", "he", "she", "it", "they", "the", "a", "an", "and", "but", "to", "in", "my",
                  "je", "il", "le", "la", "ich", "er", "es", "yo", "el", "de"}


def _is_filler(word: Word, language: str | None) -> bool:
    core = _core(word.text)
    if not core:
        return False
    regex = _FILLER_RES.get(language, _FILLER_OTHER_RE) if language else _FILLER_RES["en"]
    return bool(regex.match(core))


def ends_sentence(text: str) -> bool:
    """Whether a word ends a sentence: "then." and "what?\"" do; "Mr.", "e.g." and "J." do not."""
    text = text.strip()
    if not _SENTENCE_END.search(text):
        return False
    word = text.lstrip("".join(_OPENING_PUNCT)).lower()
    if word in _ABBREVIATIONS:
        return False
    return not (len(word) == 2 and word[0].isalpha() and word[1] == "." and word != "i.")  # "J.", not "I."


def _capitalize(word: Word) -> Word:
    text = word.text
    for index, ch in enumerate(text):
        if ch.isalpha():
            if ch.islower():
                return replace(word, text=text[:index] + ch.upper() + text[index + 1:])
            return word
        if ch.isdigit():
            return word
    return word


def _starts_upper(text: str) -> bool:
    for ch in text:
        if ch.isalpha():
            return ch.isupper()
    return False


def _event_tag(content: str) -> str | None:
    """Normalised tag for the inside of "[...]", "(...)" or "*...*"; None to drop it."""
    content = content.strip()
    if content and all(ch in _MUSIC_CHARS or not ch.isalnum() for ch in content) and any(
            ch in _MUSIC_CHARS for ch in content):
        return "music"
    content = re.sub(r"[\[\]()*]", " ", content)
    content = re.sub(r"[^\w\s'-]", "", content).lower()
    content = re.sub(r"[\s_]+", " ", content).strip(" -'")
    if not content:
        return None
    if content in {"blank audio", "blank", "silence", "no speech", "no audio", "empty"}:
        return None
    if "music" in content or any(ch in _MUSIC_CHARS for ch in content):
        return "music"
    if "applau" in content or "clapping" in content:
        return "applause"
    if content.startswith("laugh") or " laugh" in content or content in {"chuckles", "chuckling", "giggles"}:
        return "laughter"
    return content


_BRACKETS = {"[": "]", "(": ")", "*": "*"}
_MAX_EVENT_WORDS = 5


def _split_events(words: list[Word]) -> list[tuple[str, Word]]:
    """Tag ("event", Word(text=tag)) or ("word", Word) items; music notes and bracketed or
    parenthesised non-speech become events."""
    items: list[tuple[str, Word]] = []
    index = 0
    while index < len(words):
        word = words[index]
        text = word.text.strip()
        opener = text[:1]
        if opener in _BRACKETS:
            closer = _BRACKETS[opener]
            end_index = None
            for look in range(index, min(len(words), index + _MAX_EVENT_WORDS)):
                body = words[look].text.strip()
                body = body[1:] if look == index else body
                if closer in body:
                    end_index = look
                    break
            if end_index is not None:
                content = " ".join(w.text.strip() for w in words[index:end_index + 1])
                content = content[1:content.rfind(closer)]
                tag = _event_tag(content)
                last = words[end_index]
                if tag:
                    items.append(("event", Word(start=word.start, end=last.end, text=f" [{tag}]")))
                tail = last.text.strip()[last.text.strip().rfind(closer) + 1:]
                if _has_word_chars(tail):  # "[Music]Hello": keep the word
                    items.append(("word", replace(last, text=" " + tail)))
                index = end_index + 1
                continue
            if opener in "[(" and len(text) > 1:  # stray bracket: keep the word without it
                word = replace(word, text=word.text.replace(opener, "", 1))
                text = word.text.strip()
        if any(ch in _MUSIC_CHARS for ch in text):
            stripped = "".join(ch for ch in text if ch not in _MUSIC_CHARS).strip()
            music = Word(start=word.start, end=word.end, text=" [music]")
            if not _has_word_chars(stripped):
                items.append(("event", music))
            else:
                lead = text[0] in _MUSIC_CHARS
                rebuilt = replace(word, text=(" " if word.text[:1].isspace() or lead else "") + stripped)
                if lead:
                    items.append(("event", music))
                items.append(("word", rebuilt))
                if not lead:
                    items.append(("event", music))
            index += 1
            continue
        items.append(("word", word))
        index += 1
    # one tag for a run of the same event ("♪ ♪ ♪")
    merged: list[tuple[str, Word]] = []
    for kind, word in items:
        if kind == "event" and merged and merged[-1][0] == "event" and merged[-1][1].text == word.text:
            merged[-1] = ("event", replace(merged[-1][1], end=max(merged[-1][1].end, word.end)))
        else:
            merged.append((kind, word))
    return merged


def _collapse_inner_stutter(word: Word) -> Word:
    """"I-I" -> "I", "w-we" -> "we", "th-th-the" -> "The"; leaves "bye-bye", "so-so", "re-record", "e-mail"."""
    text = word.text
    lead = text[: len(text) - len(text.lstrip())]
    match = re.match(r"^([\W_]*)(\w+(?:-\w+)+)([\W_]*)$", text.strip())
    if not match:
        return word
    prefix, hyphenated, suffix = match.groups()
    parts = hyphenated.split("-")
    last = parts[-1]
    low = last.lower()
    for part in (p.lower() for p in parts[:-1]):
        if part == low:
            if len(low) > 1 and low not in _STUTTER_PRONE:
                return word  # "bye-bye", "so-so"
        elif not (low.startswith(part) and (len(part) == 1 or not re.search(r"[aeiouyäöüéèàáíóú]", part))):
            return word  # "re-record", "e-mail", "x-ray"
    if parts[0][:1].isupper() and last[:1].islower():
        last = last[:1].upper() + last[1:]
    return replace(word, text=lead + prefix + last + suffix)


def _broken_off(word: Word, following: Word | None) -> bool:
    """"th-" before "the", "I-" before "I", "wh- we": a fragment the speaker abandoned."""
    body = word.text.strip()
    if not re.search(r"\w(?:-|--|–|—)$", body):
        return False
    stem = _core(body)
    if not stem:
        return False
    if following is None:
        return len(stem) <= 2  # "and then we- " at the end of a segment
    nxt = _core(following.text)
    if not nxt:
        return False
    if nxt.startswith(stem):
        return True
    return len(stem) <= 2 and nxt not in _CONJUNCTIONS


def _transfer_sentence_end(previous: Word, dropped: Word) -> Word:
    """"there, um." -> "there." : the dropped word's sentence end moves to the previous word."""
    trailing = _TRAILING_PUNCT.search(dropped.text.strip())
    if not trailing:
        return previous
    end = re.search(r"[.!?…]+", trailing.group(0))
    if not end or ends_sentence(previous.text):
        return previous
    text = re.sub(r"[,;:\s]+$", "", previous.text)
    if not _has_word_chars(text):
        return previous
    return replace(previous, text=text + end.group(0))


def _remove_disfluencies(words: list[Word], language: str | None) -> list[Word]:
    out: list[Word] = []
    capitalize_next = False
    doubles = _DOUBLES.get(language or "en", set())

    def boundary(index: int) -> bool:
        """Whether a sentence starts after out[index] (before the first word when index < 0)."""
        return index < 0 or ends_sentence(out[index].text) or _is_tag(out[index].text)

    def drop(word: Word) -> None:
        nonlocal capitalize_next
        if boundary(len(out) - 1) and _starts_upper(word.text):
            capitalize_next = True
        if not out or _is_tag(out[-1].text):
            return
        out[-1] = _transfer_sentence_end(out[-1], word)
        # "the plan is, uh, fine" -> "the plan is fine"; but "So, um, I" -> "So, I"
        if (re.search(r",\W*$", word.text) and out[-1].text.endswith(",") and len(out) >= 2
                and not boundary(len(out) - 2)):
            out[-1] = replace(out[-1], text=out[-1].text[:-1])

    for index, original in enumerate(words):
        if index == len(words) - 1 and out and not _is_tag(out[-1].text) and (
                _is_filler(original, language) or _broken_off(original, None)):
            drop(original)
            # "hello there, uh" -> "hello there": the comma belonged to the filler
            out[-1] = replace(out[-1], text=re.sub(r"[,;:]+$", "", out[-1].text))
            break
        word = _collapse_inner_stutter(original)
        following = words[index + 1] if index + 1 < len(words) else None
        if _is_tag(word.text):
            out.append(word)
            capitalize_next = False
            continue
        if _is_filler(word, language) or _broken_off(word, following):
            drop(word)
            continue
        core = _core(word.text)
        if (out and core and not core.isdigit() and core not in doubles and _core(out[-1].text) == core
                and not ends_sentence(out[-1].text) and not _is_tag(out[-1].text)):
            earlier = out.pop()
            if boundary(len(out) - 1) and _starts_upper(earlier.text):
                capitalize_next = True
        if capitalize_next:
            word = _capitalize(word)
            capitalize_next = False
        out.append(word)
        # two-word repetitions: "in the in the house" -> "in the house"
        if len(out) >= 4:
            a, b, c, d = out[-4:]
            cores = [_core(w.text) for w in (a, b, c, d)]
            if (all(cores) and cores[0] == cores[2] and cores[1] == cores[3] and cores[0] != cores[1]
                    and not any(_is_tag(w.text) for w in (a, b)) and not ends_sentence(a.text)
                    and not ends_sentence(b.text) and not cores[0].isdigit()):
                del out[-4:-2]
                if boundary(len(out) - 3) and _starts_upper(a.text):
                    out[-2] = _capitalize(out[-2])
    return out


def _attach_punctuation(words: list[Word]) -> list[Word]:
    """Punctuation-only words (" ,", " -") join their neighbour, so no ", ," debris remains."""
    out: list[Word] = []
    prefix: Word | None = None
    for word in words:
        body = word.text.strip()
        if not body:
            continue
        if _has_word_chars(body) or _is_tag(body):
            if prefix is not None:
                lead = word.text[: len(word.text) - len(word.text.lstrip())] or " "
                word = replace(word, text=lead + prefix.text.strip() + body, start=min(prefix.start, word.start))
                prefix = None
            out.append(word)
            continue
        if not out and prefix is None and set(body) <= set("-—–"):
            continue  # a leading dash marks a new speaker; dashes are added back by build_cues
        if body[0] in _OPENING_PUNCT and body[0] not in _ATTACHING_PUNCT:
            prefix = word if prefix is None else replace(prefix, text=prefix.text + body)
            continue
        if not out:
            continue
        previous = out[-1]
        stem = previous.text.rstrip()
        if stem.endswith(body) or (body in {",", ";", ":"} and _TRAILING_PUNCT.search(stem)):
            continue  # ", ," or ". ,"
        glue = "" if body[0] in _ATTACHING_PUNCT else " "
        out[-1] = replace(previous, text=stem + glue + body, end=max(previous.end, word.end))
    return out


def _merge_repeated_tags(words: list[Word]) -> list[Word]:
    out: list[Word] = []
    for word in words:
        if out and _is_tag(word.text) and word.text.strip() == out[-1].text.strip():
            out[-1] = replace(out[-1], end=max(out[-1].end, word.end))
        else:
            out.append(word)
    return out


def clean_words(segments: list[Segment], *, verbatim: bool, tag_audio_events: bool,
                language: str | None = None) -> list[Segment]:
    """Drop or normalise non-speech and disfluencies; return new segments (inputs are untouched).

    verbatim=False removes fillers (um, uh, er, hmm, mm, ah... chosen by ``language``, an ISO 639-1
    code such as whisper's; when None it is guessed from function words, falling back to English)
    and stutters ("I I I think", "in the in the", "th- the", "I-I"), moving a sentence end
    that sat on a removed word to the word before it and re-capitalising a sentence that lost its
    first word. tag_audio_events=True turns "[Music]", "(applause)", "*laughs*", "♪" into "[music]",
    "[applause]", "[laughter]"...; False removes them. Empty segments are dropped, text is rebuilt
    from the words, and start/end follow the first/last word that remains when an edge word went.
    Segments without word timestamps get words spread over the segment.
    """
    language = _language_key(language) or _guess_language(
        w.text for segment in segments for w in _segment_words(segment))
    result: list[Segment] = []
    for segment in segments:
        original = _segment_words(segment)
        words: list[Word] = []
        for kind, word in _split_events(original):
            if kind == "event" and not tag_audio_events:
                continue
            words.append(word)
        words = _attach_punctuation(words)
        if not verbatim:
            words = _remove_disfluencies(words, language)
            words = _merge_repeated_tags(_attach_punctuation(words))
        if not words:
            continue
        text = re.sub(r"\s+", " ", "".join(w.text for w in words)).strip()
        if not text:
            continue
        first_same = original and words[0].start == original[0].start
        last_same = original and words[-1].end == original[-1].end
        start = segment.start if first_same else words[0].start
        end = segment.end if last_same else words[-1].end
        result.append(replace(segment, start=start, end=max(start, end), text=text, words=words))
    return result


# --------------------------------------------------------------------------------------------
# transcript_text
# --------------------------------------------------------------------------------------------

def _renumber(speakers: list[int | None]) -> list[int]:
    numbers: dict[int, int] = {}
    out = []
    for speaker in speakers:
        key = 1 if speaker is None else speaker
        out.append(numbers.setdefault(key, len(numbers) + 1))
    return out


def _clock(seconds: float) -> str:
    total = max(0, math.floor(seconds))
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def transcript_text(segments: list[Segment]) -> str:
    """One paragraph per speaker turn, "[HH:MM:SS] Speaker N: text", a blank line between turns.

    Consecutive segments of one speaker make one turn, stamped with its start (floored to the
    second). Speaker None counts as speaker 1; speakers are renumbered 1, 2, ... in order of first
    appearance. Returns "" when there is no text, else ends with one newline.
    """
    kept = [s for s in segments if s.text.strip()]
    numbers = _renumber([s.speaker for s in kept])
    turns: list[tuple[float, int, list[str]]] = []
    for segment, speaker in zip(kept, numbers):
        text = re.sub(r"\s+", " ", segment.text).strip()
        if turns and turns[-1][1] == speaker:
            turns[-1][2].append(text)
        else:
            turns.append((segment.start, speaker, [text]))
    if not turns:
        return ""
    return "\n\n".join(f"[{_clock(start)}] Speaker {speaker}: {' '.join(texts)}"
                       for start, speaker, texts in turns) + "\n"


# --------------------------------------------------------------------------------------------
# build_cues
# --------------------------------------------------------------------------------------------

# A line or a cue never ends on one of these (when it carries no punctuation).
_NO_BREAK_AFTER = {
    "en": {"a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about",
           "as", "and", "or", "but", "nor", "if", "than", "my", "your", "his", "her", "its", "our", "their", "i",
           "this", "these", "those", "some", "any", "no", "every", "each", "over", "under", "between", "through",
           "during", "without", "within", "upon", "via", "per", "because", "while", "although", "whether",
           "not", "very", "mr", "mrs", "ms", "dr"},
    "es": {"el", "la", "los", "las", "un", "una", "unos", "unas", "de", "del", "al", "a", "en", "con", "por",
           "para", "y", "e", "o", "u", "ni", "que", "sin", "sobre", "entre", "hacia", "desde", "hasta", "mi",
           "mis", "tu", "tus", "su", "sus", "lo", "se", "no", "muy", "pero"},
    "fr": {"le", "la", "les", "l'", "un", "une", "des", "du", "de", "d'", "au", "aux", "à", "en", "dans", "sur",
           "sous", "avec", "pour", "par", "et", "ou", "mais", "que", "qu'", "ce", "cette", "ces", "mon", "ma",
           "mes", "ton", "ta", "tes", "son", "sa", "ses", "notre", "votre", "leur", "leurs", "je", "tu", "il",
           "elle", "nous", "vous", "ils", "elles", "ne", "se", "très", "chez", "vers", "sans", "entre"},
    "de": {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines", "und",
           "oder", "aber", "mit", "von", "zu", "zum", "zur", "im", "in", "an", "am", "auf", "aus", "bei", "für",
           "nach", "über", "unter", "vor", "durch", "gegen", "ohne", "um", "dass", "wenn", "als", "ob", "weil",
           "mein", "meine", "dein", "deine", "sein", "seine", "ihr", "ihre", "unser", "unsere", "sehr", "nicht"},
    "it": {"il", "lo", "la", "i", "gli", "le", "un", "uno", "una", "di", "del", "della", "dei", "delle", "da",
           "dal", "in", "nel", "nella", "con", "su", "sul", "per", "tra", "fra", "e", "o", "ma", "che", "non"},
    "pt": {"o", "a", "os", "as", "um", "uma", "uns", "umas", "de", "do", "da", "dos", "das", "em", "no", "na",
           "nos", "nas", "com", "por", "para", "pelo", "pela", "e", "ou", "mas", "que", "não", "muito"},
    "nl": {"de", "het", "een", "van", "in", "op", "aan", "met", "voor", "naar", "en", "of", "maar", "dat",
           "om", "bij", "uit", "door", "te", "niet"},
}
_NO_BREAK_ALL = set().union(*_NO_BREAK_AFTER.values())
# Poor but tolerable places to end a line or cue: pronouns and auxiliaries before their verb,
# intensifiers, question words ("we | are", "so | much", "about how | subtitles").
_WEAK_BREAK_AFTER = {
    "en": {"so", "too", "really", "quite", "just", "more", "most", "less", "will", "would", "can", "could",
           "should", "shall", "may", "might", "must", "is", "are", "was", "were", "be", "been", "being", "have",
           "has", "had", "do", "does", "did", "am", "we", "you", "he", "she", "it", "they", "who", "which",
           "what", "how", "when", "where", "why", "that", "there", "i'm", "it's", "we're", "you're", "they're",
           "don't", "can't", "won't", "didn't", "isn't"},
    "es": {"es", "son", "está", "están", "ha", "han", "más", "muy", "como", "cuando", "donde"},
    "fr": {"est", "sont", "a", "ont", "plus", "comme", "quand", "où", "qui", "c'est"},
    "de": {"ist", "sind", "hat", "haben", "wird", "werden", "ich", "wir", "er", "es", "sie", "noch", "so"},
}
_WEAK_BREAK_ALL = set().union(*_WEAK_BREAK_AFTER.values())


def _guess_language(texts) -> str | None:
    """The language whose function words are most frequent among ``texts`` (words as whisper
    writes them), when they make up at least a tenth of them; None when unsure. Used only when the
    caller does not say, so that e.g. German "um" and "er" are not taken for English fillers."""
    counts = dict.fromkeys(_NO_BREAK_AFTER, 0)
    total = 0
    for text in texts:
        core = _core(text)
        if not core:
            continue
        total += 1
        for key, words in _NO_BREAK_AFTER.items():
            if core in words:
                counts[key] += 1
    best = max(counts, key=counts.__getitem__)
    if total == 0 or counts[best] < max(3, total / 10):
        return None
    if sorted(counts.values())[-2] == counts[best]:
        return None
    return best


@dataclass
class _Tok:
    text: str
    start: int  # ms
    end: int
    speaker: int
    glue: bool  # no space before it (continuation of the previous token)
    seg_end: bool = False


def _split_long(tok: _Tok) -> list[_Tok]:
    """A token longer than a line is cut into pieces (after "-", "/", "." or "_" when one lies in
    the second half of the piece), glued to each other, time shared by length."""
    pieces, rest = [], tok.text
    while len(rest) > MAX_LINE_CHARS:
        cut = max((rest.rfind(ch, MAX_LINE_CHARS // 2, MAX_LINE_CHARS) for ch in "-/._"), default=-1)
        cut = cut + 1 if cut > 0 else MAX_LINE_CHARS
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    total = sum(len(p) for p in pieces)
    out, at = [], tok.start
    for index, piece in enumerate(pieces):
        end = tok.end if index == len(pieces) - 1 else at + (tok.end - tok.start) * len(piece) // total
        out.append(_Tok(piece, at, end, tok.speaker, tok.glue if index == 0 else True,
                        tok.seg_end if index == len(pieces) - 1 else False))
        at = end
    return out


def _tokens(segments: list[Segment]) -> list[_Tok]:
    toks: list[_Tok] = []
    last_start = 0
    prefix: str | None = None
    for segment in segments:
        speaker = 1 if segment.speaker is None else segment.speaker
        first_in_segment = True
        for word in _segment_words(segment):
            raw = word.text
            text = re.sub(r"\s+", " ", raw.strip())
            if not text:
                continue
            start = max(0, last_start, int(round(word.start * 1000)))
            end = max(start, int(round(word.end * 1000)))
            if not _has_word_chars(text) and not _is_tag(text):
                if first_in_segment and prefix is None and set(text) <= set("-—–"):
                    continue  # a leading dash marks a new speaker
                if text[0] in _OPENING_PUNCT and text[0] not in _ATTACHING_PUNCT:
                    prefix = text if prefix is None else prefix + text
                elif toks:
                    glue = "" if text[0] in _ATTACHING_PUNCT else " "
                    toks[-1].text = toks[-1].text + glue + text
                    toks[-1].end = max(toks[-1].end, end)
                continue
            if prefix is not None:
                text, prefix = prefix + text, None
            if not toks:
                glue = False
            elif first_in_segment:
                glue = _is_nospace_char(toks[-1].text[-1]) and _is_nospace_char(text[0])
            else:
                glue = not raw[:1].isspace()
            if toks and first_in_segment:
                toks[-1].seg_end = True
            toks.append(_Tok(text, start, end, speaker, glue))
            last_start = start
            first_in_segment = False
    if toks:
        toks[-1].seg_end = True
    out: list[_Tok] = []
    for tok in toks:
        out.extend(_split_long(tok) if len(tok.text) > MAX_LINE_CHARS else [tok])
    return out


class _Planner:
    """Chooses cue boundaries (dynamic programming over break points) and line breaks."""

    CUE_COST = 4.0

    def __init__(self, toks: list[_Tok], no_break: set[str], weak_break: set[str]):
        self.toks = toks
        n = len(toks)
        self.n = n
        self.sep = [0 if k == 0 or t.glue else 1 for k, t in enumerate(toks)]
        self.prefix = [0] * (n + 1)
        for k, tok in enumerate(toks):
            self.prefix[k + 1] = self.prefix[k] + self.sep[k] + len(tok.text)
        self.change = [0] * (n + 1)  # change[k]: speaker changes between tokens 0..k-1
        self.pause_cost = [0.0] * (n + 1)
        self.sentence = [0] * (n + 1)
        for k in range(n):
            changed = k > 0 and toks[k].speaker != toks[k - 1].speaker
            self.change[k + 1] = self.change[k] + changed
            gap = toks[k].start - toks[k - 1].end if k > 0 else 0
            self.pause_cost[k + 1] = self.pause_cost[k] + max(0, gap - _PAUSE_MS) / 250.0
            self.sentence[k + 1] = self.sentence[k] + ends_sentence(toks[k].text)
        self.no_break = [self._no_break(t.text, no_break) for t in toks]
        self.weak_break = [self._no_break(t.text, weak_break) for t in toks]
        self.break_cost = [self._break_cost(k) for k in range(n)]

    @staticmethod
    def _no_break(text: str, words: set[str]) -> bool:
        if not text[-1:].isalnum() and text[-1:] != "'":
            return False  # carries punctuation
        core = text.lower().strip("\"“‘«¿¡(")
        return core in words

    def _gap_after(self, k: int) -> int:
        return self.toks[k + 1].start - self.toks[k].end if k + 1 < self.n else 10 ** 9

    def _break_cost(self, k: int) -> float:
        """Cost of ending a cue after token k."""
        if k + 1 >= self.n:
            return 0.0
        tok, nxt = self.toks[k], self.toks[k + 1]
        gap = self._gap_after(k)
        if tok.speaker != nxt.speaker:
            cost = 0.0
        elif _is_tag(tok.text) or _is_tag(nxt.text):
            cost = 0.5
        elif ends_sentence(tok.text):
            cost = 0.0
        elif gap >= _PAUSE_MS:
            cost = 1.0
        elif _CLAUSE_END.search(tok.text):
            cost = 4.0
        elif tok.seg_end:
            cost = 6.0
        else:
            cost = 12.0
        if nxt.glue:
            cost += 30.0
        if self.no_break[k]:
            cost += 1000.0
        elif self.weak_break[k] and cost > 1.0:
            cost += 8.0
        return cost

    def length(self, i: int, j: int) -> int:
        """Characters of tokens i..j-1 on one line."""
        return self.prefix[j] - self.prefix[i] - self.sep[i]

    def layout(self, i: int, j: int) -> tuple[float, int | None, bool] | None:
        """(cost, line break before token k or None, dashes) for tokens i..j-1; None if they do not
        fit in two lines."""
        changes = self.change[j] - self.change[i + 1]
        if changes > 1:
            return None
        if changes == 1:
            k = next(m for m in range(i + 1, j) if self.toks[m].speaker != self.toks[m - 1].speaker)
            if (len(_DASH) + self.length(i, k) > MAX_LINE_CHARS
                    or len(_DASH) + self.length(k, j) > MAX_LINE_CHARS):
                return None
            return 0.0, k, True
        total = self.length(i, j)
        if total <= MAX_LINE_CHARS:
            return 0.0, None, False
        if total > MAX_LINES * MAX_LINE_CHARS + 1:
            return None
        best: tuple[float, int | None, bool] | None = None
        for k in range(i + 1, j):
            top, bottom = self.length(i, k), self.length(k, j)
            if top > MAX_LINE_CHARS:
                break
            if bottom > MAX_LINE_CHARS:
                continue
            cost = (top - bottom) * 0.7 if top > bottom else (bottom - top) * 0.25
            last = self.toks[k - 1].text
            if self.no_break[k - 1]:
                cost += 1000.0
            elif self.weak_break[k - 1]:
                cost += 8.0
            if ends_sentence(last):
                cost -= 20.0
            elif _CLAUSE_END.search(last):
                cost -= 10.0
            elif self._gap_after(k - 1) >= _PAUSE_MS:
                cost -= 6.0
            if self.toks[k].glue:
                cost += 40.0
            if (k - i == 1 and top < 10) or (j - k == 1 and bottom < 10):
                cost += 30.0  # a lone short word on a line
            if j - k == 1 and self.toks[k].text.isdigit():
                cost += 500.0  # SRT readers take a last line of digits for the next cue's number
            if best is None or cost < best[0]:
                best = (cost, k, False)
        return best

    def chars(self, i: int, j: int, layout: tuple[float, int | None, bool]) -> int:
        """Displayed characters, the line break counted as one (a space)."""
        return self.length(i, j) + (2 * len(_DASH) if layout[2] else 0)

    def cue_cost(self, i: int, j: int, layout: tuple[float, int | None, bool]) -> float:
        toks = self.toks
        # the punctuation bonus of a line break chooses between layouts; it must not make a cue that
        # straddles a sentence end cheaper than two cues
        cost = self.CUE_COST + 0.5 * max(0.0, layout[0])
        if j < self.n:
            cost += self.break_cost[j - 1]
        if layout[2]:
            cost += 6.0  # prefer a new cue at a speaker change
        span = toks[j - 1].end - toks[i].start
        if span > _MAX_MS:
            cost += 300.0 + (span - _MAX_MS) / 50.0
        need = max(_MIN_MS, self.chars(i, j, layout) * _MS_PER_CHAR)
        room = (toks[j].start - _GAP_MS if j < self.n else 10 ** 9) - toks[i].start + _MAX_LEAD_MS
        if need > room:
            cost += (need - room) / 100.0
        cost += self.pause_cost[j] - self.pause_cost[i + 1]
        if j < self.n and self.break_cost[j - 1] >= 4 and self.sentence[j - 1] - self.sentence[i] > 0:
            cost += 6.0  # a sentence ends inside but the cue ends mid-sentence
        return cost

    def plan(self) -> list[tuple[int, int, tuple[float, int | None, bool]]]:
        n = self.n
        best = [math.inf] * (n + 1)
        back: list[tuple[int, tuple[float, int | None, bool]] | None] = [None] * (n + 1)
        best[0] = 0.0
        for j in range(1, n + 1):
            for i in range(j - 1, -1, -1):
                if self.length(i, j) > MAX_LINES * MAX_LINE_CHARS + 1:
                    break
                layout = self.layout(i, j)
                if layout is None:
                    if self.change[j] - self.change[i + 1] > 1:
                        break
                    continue
                cost = best[i] + self.cue_cost(i, j, layout)
                if cost < best[j]:
                    best[j] = cost
                    back[j] = (i, layout)
        cues = []
        j = n
        while j > 0:
            i, layout = back[j]  # type: ignore[misc]
            cues.append((i, j, layout))
            j = i
        return cues[::-1]

    def join(self, i: int, j: int) -> str:
        return "".join(("" if k == i or self.toks[k].glue else " ") + self.toks[k].text for k in range(i, j))

    def lines(self, i: int, j: int, layout: tuple[float, int | None, bool]) -> list[str]:
        _, k, dashes = layout
        if k is None:
            return [self.join(i, j)]
        if dashes:
            return [_DASH + self.join(i, k), _DASH + self.join(k, j)]
        return [self.join(i, k), self.join(k, j)]


def _timing(spans: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Display times (ms) for cues given (first word start, last word end, characters).

    Each cue shows from its first word (up to _MAX_LEAD_MS earlier when it needs the time and there
    is silence before it) until its last word ends or it has been up long enough to be read at
    MAX_CPS (and at least MIN_DURATION), capped at MAX_DURATION, and never before the previous cue
    has gone plus _GAP_MS. Speech too fast to read at MAX_CPS therefore makes cues lag behind the
    audio until the next pause, rather than break a rule. Gaps shorter than _CLOSE_GAP_MS are then
    closed to avoid flicker."""
    times: list[tuple[int, int]] = []
    previous_end = -_GAP_MS
    for index, (first, last, chars) in enumerate(spans):
        need = max(_MIN_MS, math.ceil(chars * _MS_PER_CHAR))
        floor = max(0, previous_end + _GAP_MS)
        start = max(floor, first)
        if index + 1 < len(spans):
            latest_end = spans[index + 1][0] - _GAP_MS
            if start + need > latest_end:
                start = max(floor, first - _MAX_LEAD_MS, min(start, latest_end - need))
        end = min(max(last, start + need), start + _MAX_MS)
        times.append((start, end))
        previous_end = end
    for index in range(len(times) - 1):
        start, end = times[index]
        gap = times[index + 1][0] - end
        if _GAP_MS < gap < _GAP_MS + _CLOSE_GAP_MS:
            times[index] = (start, min(times[index + 1][0] - _GAP_MS, start + _MAX_MS))
    return times


def build_cues(segments: list[Segment], *, language: str | None = None) -> list[Cue]:
    """Subtitle cues from the segments' word timestamps.

    At most MAX_LINE_CHARS (42) characters a line and MAX_LINES (2) lines a cue; a word longer than
    a line is cut into pieces. Cue boundaries are chosen by dynamic programming over all break
    points: speaker changes, sentence ends and pauses (> 0.5 s) are cheap, commas cost a little,
    anything else more, and ending a cue or line after an article, preposition or conjunction
    (English, Spanish, French, German, Italian, Portuguese, Dutch; ``language`` picks one list,
    None guesses it from the words and uses them all when unsure) is avoided whenever any other
    layout exists; after a pronoun, auxiliary or intensifier it costs extra. A cue holds at most
    two speakers, each on its own line starting with "- "; otherwise there are no speaker labels.
    Two-line cues break where the lines are balanced or bottom-heavy, preferably at punctuation,
    never leaving one short word alone. Times: see ``_timing``; every cue lasts 1-7 s, reads at
    <= 20 characters a second (line break counted as a space, dashes included) and ends at least
    CUE_GAP before the next one starts. Input words are used as they are: clean them first.
    """
    toks = _tokens(segments)
    if not toks:
        return []
    key = _language_key(language) or _guess_language(tok.text for tok in toks)
    if key in _NO_BREAK_AFTER:
        planner = _Planner(toks, _NO_BREAK_AFTER[key], _WEAK_BREAK_AFTER.get(key, set()))
    else:
        planner = _Planner(toks, _NO_BREAK_ALL, _WEAK_BREAK_ALL)
    plan = planner.plan()
    texts = [planner.lines(i, j, layout) for i, j, layout in plan]
    spans = [(toks[i].start, toks[j - 1].end, len(" ".join(lines))) for (i, j, _), lines in zip(plan, texts)]
    return [Cue(start=start / 1000, end=end / 1000, lines=lines)
            for (start, end), lines in zip(_timing(spans), texts)]


# --------------------------------------------------------------------------------------------
# SRT / WebVTT
# --------------------------------------------------------------------------------------------

def _event_text(lines: list[str], *, vtt: bool) -> str:
    out = []
    for line in lines:
        line = line.replace("\\", "\u2216")  # "\N", "\n", "\h" mean something to pysubs2
        if vtt:
            line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out.append(line)
    return r"\N".join(out)


def _ssafile(cues: list[Cue], *, vtt: bool) -> pysubs2.SSAFile:
    subs = pysubs2.SSAFile()
    for cue in cues:
        subs.append(pysubs2.SSAEvent(start=int(round(cue.start * 1000)), end=int(round(cue.end * 1000)),
                                     text=_event_text(cue.lines, vtt=vtt)))
    return subs


def to_srt(cues: list[Cue]) -> str:
    """SubRip text; "" for no cues. Braces are kept literally (no ASS override parsing)."""
    return _ssafile(cues, vtt=False).to_string("srt", keep_ssa_tags=True)


def to_webvtt(cues: list[Cue]) -> str:
    """WebVTT text, starting with "WEBVTT"; just the header for no cues. &, < and > are escaped."""
    return _ssafile(cues, vtt=True).to_string("vtt", keep_ssa_tags=True)


def from_srt(text: str) -> list[Cue]:
    """Cues from SubRip text as ``to_srt`` writes it (times in seconds, lines split on line breaks).
    HTML-looking text is kept as it is, not turned into styling."""
    subs = pysubs2.SSAFile.from_string(text, format_="srt", keep_html_tags=True)
    cues = []
    for event in subs.events:
        lines = [line.strip() for line in re.split(r"\\N|\n", event.text)]
        cues.append(Cue(start=event.start / 1000, end=event.end / 1000, lines=[line for line in lines if line]))
    return cues


# --------------------------------------------------------------------------------------------
# Re-wrapping text that was not built from timed words (translations)
# --------------------------------------------------------------------------------------------

def _wrap_tokens(text: str) -> list[tuple[str, bool]]:
    """(token, glued to the previous one) for ``text``: its words, and single characters inside a
    run of a script written without spaces, so that such text can break anywhere."""
    tokens: list[tuple[str, bool]] = []
    for word in text.split():
        glue, piece = False, ""
        for ch in word:
            if (piece and ch not in _ATTACHING_PUNCT and (_is_nospace_char(ch) or _is_nospace_char(piece[-1]))
                    and not all(c in _OPENING_PUNCT for c in piece)):
                tokens.append((piece, glue))
                glue, piece = True, ""
            piece += ch
        tokens.append((piece, glue))
    return tokens


def wrap_lines(text: str, max_chars: int = MAX_LINE_CHARS, max_lines: int = MAX_LINES, *,
               language: str | None = None) -> list[str]:
    """``text`` on as few lines as fit ``max_chars`` each (at most ``max_lines``), balanced.

    Lines break where their lengths are closest (a longer bottom line costs less than a longer top
    one), preferably after punctuation, and not after an article, preposition or conjunction of
    ``language`` (all the known languages when None) when anything else fits. Text too long for
    ``max_lines`` lines still gets exactly ``max_lines`` balanced lines (longer than ``max_chars``)
    rather than losing words; a word longer than a line is never cut. "" gives [].
    """
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return []
    if len(text) <= max_chars or max_lines <= 1:
        return [text]
    tokens = _wrap_tokens(text)
    n = len(tokens)
    key = _language_key(language)
    no_break = _NO_BREAK_AFTER.get(key, _NO_BREAK_ALL) if key else _NO_BREAK_ALL
    weak_break = _WEAK_BREAK_AFTER.get(key, set()) if key else _WEAK_BREAK_ALL
    prefix = [0]
    for index, (tok, glue) in enumerate(tokens):
        prefix.append(prefix[-1] + (0 if index == 0 or glue else 1) + len(tok))

    def length(i: int, j: int) -> int:
        return prefix[j] - prefix[i] - (0 if i == 0 or tokens[i][1] else 1)

    def break_cost(k: int) -> float:
        """Cost of a line ending after token k."""
        last = tokens[k][0]
        cost = 0.0
        if ends_sentence(last):
            cost -= 20.0
        elif _CLAUSE_END.search(last):
            cost -= 10.0
        core = last.lower().strip("\"“‘«¿¡(")
        if last[-1:].isalnum() or last[-1:] == "'":
            if core in no_break:
                cost += 1000.0
            elif core in weak_break:
                cost += 8.0
        return cost

    lines_needed = min(max_lines, n, max(2, math.ceil(len(text) / max_chars)))
    for count in range(lines_needed, min(max_lines, n) + 1):
        target = prefix[n] / count
        # best[c][j]: cost of tokens 0..j-1 on c lines
        best = [[math.inf] * (n + 1) for _ in range(count + 1)]
        back = [[0] * (n + 1) for _ in range(count + 1)]
        best[0][0] = 0.0
        for c in range(1, count + 1):
            for j in range(c, n + 1):
                for i in range(c - 1, j):
                    if best[c - 1][i] == math.inf:
                        continue
                    size = length(i, j)
                    over = max(0, size - max_chars)
                    cost = best[c - 1][i] + over * 100.0 + abs(size - target) * (0.7 if c < count else 0.25)
                    if j < n:
                        cost += break_cost(j - 1)
                        if j - i == 1 and size < 10:
                            cost += 30.0  # a lone short word on a line
                    elif j - i == 1 and size < 10 and count > 1:
                        cost += 30.0
                    if cost < best[c][j]:
                        best[c][j] = cost
                        back[c][j] = i
        bounds, j = [], n
        for c in range(count, 0, -1):
            i = back[c][j]
            bounds.append((i, j))
            j = i
        bounds.reverse()
        lines = ["".join(("" if k == i or tokens[k][1] else " ") + tokens[k][0] for k in range(i, j))
                 for i, j in bounds]
        if all(len(line) <= max_chars for line in lines) or count == min(max_lines, n):
            return lines
    return [text]  # not reached
