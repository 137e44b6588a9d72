"""Clean recognised words before they become text: fillers and stutters out (unless verbatim),
audio events as tags or not at all. Pure functions over pipeline dataclasses; no Django.

Fillers are per language (en/de/fr/es/it/pt/nl; unknown -> only hmm/mm/uhm-style), so German
"um"/"er" and Portuguese "um" survive. Stutters: repeated words and two-word phrases, "I-I"/"w-we",
broken-off "th- the". Kept: legitimate doubles ("had had", "very very", "bye-bye"), repeats across
a sentence end ("Yes. Yes."), numbers. Audio events: [..], (..), *..* of <= 5 words and music notes
-> lowercase tags (`[music]`, `[applause]`, `[laughter]`), runs merged, [BLANK_AUDIO]/[silence]
always dropped. Repetition loops (a word or group more than three times in a row, a piece of a word
four times over) are cut to one turn: ``repetition``.
"""

from __future__ import annotations

import re
from dataclasses import replace

from transcription.pipeline.recognition import repetition
from transcription.pipeline.recognition.words import (
    ATTACHING_PUNCT,
    MUSIC_CHARS,
    OPENING_PUNCT,
    TRAILING_PUNCT,
    ends_sentence,
    guess_language,
    has_word_chars,
    is_tag,
    language_key,
    segment_words,
    word_core,
)
from transcription.pipeline.types import Segment, Word

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
    "en": {
        "had",
        "that",
        "is",
        "very",
        "really",
        "no",
        "yes",
        "yeah",
        "bye",
        "ha",
        "haha",
        "hey",
        "ho",
        "la",
        "na",
        "da",
        "blah",
        "bla",
        "knock",
        "go",
        "well",
        "more",
        "many",
        "far",
        "again",
        "over",
        "round",
        "now",
        "there",
        "never",
        "come",
        "tick",
        "tock",
        "boom",
        "bang",
        "hip",
    },
    "de": {"die", "das", "der", "den", "dem", "sie", "ja", "nein", "so", "na"},
    "fr": {"nous", "vous", "non", "oui", "si", "très"},
    "es": {"no", "sí", "si", "ya", "muy", "bueno"},
    "it": {"no", "sì", "si", "molto"},
    "pt": {"não", "sim", "muito"},
    "nl": {"nee", "ja", "heel"},
}
_CONJUNCTIONS = {"and", "or", "und", "oder", "et", "ou", "y", "o", "e", "en", "of"}
_STUTTER_PRONE = {
    "i",
    "we",
    "you",
    "he",
    "she",
    "it",
    "they",
    "the",
    "a",
    "an",
    "and",
    "but",
    "to",
    "in",
    "my",
    "je",
    "il",
    "le",
    "la",
    "ich",
    "er",
    "es",
    "yo",
    "el",
    "de",
}


def _is_filler(word: Word, language: str | None) -> bool:
    core = word_core(word.text)
    if not core:
        return False
    regex = _FILLER_RES.get(language, _FILLER_OTHER_RE) if language else _FILLER_RES["en"]
    return bool(regex.match(core))


def _capitalize(word: Word) -> Word:
    text = word.text
    for index, ch in enumerate(text):
        if ch.isalpha():
            if ch.islower():
                return replace(word, text=text[:index] + ch.upper() + text[index + 1 :])
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
    if (
        content
        and all(ch in MUSIC_CHARS or not ch.isalnum() for ch in content)
        and any(ch in MUSIC_CHARS for ch in content)
    ):
        return "music"
    content = re.sub(r"[\[\]()*]", " ", content)
    content = re.sub(r"[^\w\s'-]", "", content).lower()
    content = re.sub(r"[\s_]+", " ", content).strip(" -'")
    if not content:
        return None
    if content in {"blank audio", "blank", "silence", "no speech", "no audio", "empty"}:
        return None
    if "music" in content or any(ch in MUSIC_CHARS for ch in content):
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
            bracketed = _bracketed_event(words, index)
            if bracketed is not None:
                found, index = bracketed
                items += found
                continue
            if opener in "[(" and len(text) > 1:  # stray bracket: keep the word without it
                word = replace(word, text=word.text.replace(opener, "", 1))
                text = word.text.strip()
        items += _music_items(word, text) if any(ch in MUSIC_CHARS for ch in text) else [("word", word)]
        index += 1
    # one tag for a run of the same event ("♪ ♪ ♪")
    merged: list[tuple[str, Word]] = []
    for kind, word in items:
        if kind == "event" and merged and merged[-1][0] == "event" and merged[-1][1].text == word.text:
            merged[-1] = ("event", replace(merged[-1][1], end=max(merged[-1][1].end, word.end)))
        else:
            merged.append((kind, word))
    return merged


def _bracketed_event(words: list[Word], index: int) -> tuple[list[tuple[str, Word]], int] | None:
    """The items of a bracketed event starting at words[index] ("[door closes]", "(laughs)",
    "*sigh*": at most _MAX_EVENT_WORDS words) and the index after it; None when it does not close."""
    word = words[index]
    closer = _BRACKETS[word.text.strip()[:1]]
    end_index = None
    for look in range(index, min(len(words), index + _MAX_EVENT_WORDS)):
        body = words[look].text.strip()
        body = body[1:] if look == index else body
        if closer in body:
            end_index = look
            break
    if end_index is None:
        return None
    items: list[tuple[str, Word]] = []
    content = " ".join(w.text.strip() for w in words[index : end_index + 1])
    content = content[1 : content.rfind(closer)]
    tag = _event_tag(content)
    last = words[end_index]
    if tag:
        items.append(("event", Word(start=word.start, end=last.end, text=f" [{tag}]")))
    tail = last.text.strip()[last.text.strip().rfind(closer) + 1 :]
    if has_word_chars(tail):  # "[Music]Hello": keep the word
        items.append(("word", replace(last, text=" " + tail)))
    return items, end_index + 1


def _music_items(word: Word, text: str) -> list[tuple[str, Word]]:
    """A word with music notes: a [music] event, before or after what is left of the word."""
    stripped = "".join(ch for ch in text if ch not in MUSIC_CHARS).strip()
    music = Word(start=word.start, end=word.end, text=" [music]")
    if not has_word_chars(stripped):
        return [("event", music)]
    lead = text[0] in MUSIC_CHARS
    rebuilt = replace(word, text=(" " if word.text[:1].isspace() or lead else "") + stripped)
    return [("event", music), ("word", rebuilt)] if lead else [("word", rebuilt), ("event", music)]


def _collapse_inner_stutter(word: Word) -> Word:
    """ "I-I" -> "I", "w-we" -> "we", "th-th-the" -> "The"; leaves "bye-bye", "so-so", "re-record", "e-mail"."""
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
    """ "th-" before "the", "I-" before "I", "wh- we": a fragment the speaker abandoned."""
    body = word.text.strip()
    if not re.search(r"\w(?:-|--|–|—)$", body):
        return False
    stem = word_core(body)
    if not stem:
        return False
    if following is None:
        return len(stem) <= 2  # "and then we- " at the end of a segment
    nxt = word_core(following.text)
    if not nxt:
        return False
    if nxt.startswith(stem):
        return True
    return len(stem) <= 2 and nxt not in _CONJUNCTIONS


def _transfer_sentence_end(previous: Word, dropped: Word) -> Word:
    """ "there, um." -> "there." : the dropped word's sentence end moves to the previous word."""
    trailing = TRAILING_PUNCT.search(dropped.text.strip())
    if not trailing:
        return previous
    end = re.search(r"[.!?…]+", trailing.group(0))
    if not end or ends_sentence(previous.text):
        return previous
    text = re.sub(r"[,;:\s]+$", "", previous.text)
    if not has_word_chars(text):
        return previous
    return replace(previous, text=text + end.group(0))


def _is_tag_word(text: str) -> bool:
    """A tag, also with the punctuation attached after it ("[laughter],")."""
    return is_tag(text.strip().rstrip(",.;:?!"))


def _remove_disfluencies(words: list[Word], language: str | None) -> list[Word]:
    return _Disfluencies(language).clean(words)


class _Disfluencies:
    """One pass over the words: fillers and broken-off words dropped, repeated words and two-word
    repetitions collapsed, the capital of a dropped sentence start passed on."""

    def __init__(self, language: str | None):
        self.language = language
        self.out: list[Word] = []
        self.capitalize_next = False
        self.doubles = _DOUBLES.get(language or "en", set())

    def boundary(self, index: int) -> bool:
        """Whether a sentence starts after out[index] (before the first word when index < 0)."""
        return index < 0 or ends_sentence(self.out[index].text) or _is_tag_word(self.out[index].text)

    def clean(self, words: list[Word]) -> list[Word]:
        out = self.out
        for index, original in enumerate(words):
            if index == len(words) - 1 and self._trailing_filler(original):
                self.drop(original)
                # "hello there, uh" -> "hello there": the comma belonged to the filler
                out[-1] = replace(out[-1], text=re.sub(r"[,;:]+$", "", out[-1].text))
                break
            word = _collapse_inner_stutter(original)
            following = words[index + 1] if index + 1 < len(words) else None
            if _is_tag_word(word.text):
                out.append(word)
                self.capitalize_next = False
                continue
            if _is_filler(word, self.language) or _broken_off(word, following):
                self.drop(word)
                continue
            self._drop_repeated(word)
            if self.capitalize_next:  # a tag keeps its case; the word after it starts upper
                word = _capitalize(word)
                self.capitalize_next = False
            out.append(word)
            self._drop_two_word_repetition()
        return out

    def _trailing_filler(self, word: Word) -> bool:
        out = self.out
        return (
            bool(out)
            and not _is_tag_word(out[-1].text)
            and (_is_filler(word, self.language) or _broken_off(word, None))
        )

    def drop(self, word: Word) -> None:
        out = self.out
        if self.boundary(len(out) - 1) and _starts_upper(word.text):
            self.capitalize_next = True
        if not out or _is_tag_word(out[-1].text):
            return
        out[-1] = _transfer_sentence_end(out[-1], word)
        # "the plan is, uh, fine" -> "the plan is fine"; but "So, um, I" -> "So, I"
        if (
            re.search(r",\W*$", word.text)
            and out[-1].text.endswith(",")
            and len(out) >= 2
            and not self.boundary(len(out) - 2)
        ):
            out[-1] = replace(out[-1], text=out[-1].text[:-1])

    def _drop_repeated(self, word: Word) -> None:
        """ "the the" -> "the": the earlier of two same words goes (not a number, not "bye bye")."""
        out = self.out
        core = word_core(word.text)
        if (
            out
            and core
            and not core.isdigit()
            and core not in self.doubles
            and word_core(out[-1].text) == core
            and not ends_sentence(out[-1].text)
            and not _is_tag_word(out[-1].text)
        ):
            earlier = out.pop()
            if self.boundary(len(out) - 1) and _starts_upper(earlier.text):
                self.capitalize_next = True

    def _drop_two_word_repetition(self) -> None:
        """ "in the in the house" -> "in the house"."""
        out = self.out
        if len(out) < 4:
            return
        a, b, c, d = out[-4:]
        cores = [word_core(w.text) for w in (a, b, c, d)]
        if (
            all(cores)
            and cores[0] == cores[2]
            and cores[1] == cores[3]
            and cores[0] != cores[1]
            and not any(_is_tag_word(w.text) for w in (a, b))
            and not ends_sentence(a.text)
            and not ends_sentence(b.text)
            and not cores[0].isdigit()
        ):
            del out[-4:-2]
            if self.boundary(len(out) - 3) and _starts_upper(a.text):
                out[-2] = _capitalize(out[-2])


def _attach_punctuation(words: list[Word]) -> list[Word]:
    """Punctuation-only words (" ,", " -") join their neighbour, so no ", ," debris remains."""
    out: list[Word] = []
    prefix: Word | None = None
    for word in words:
        body = word.text.strip()
        if not body:
            continue
        if has_word_chars(body) or is_tag(body):
            if prefix is not None:
                lead = word.text[: len(word.text) - len(word.text.lstrip())] or " "
                word = replace(word, text=lead + prefix.text.strip() + body, start=min(prefix.start, word.start))
                prefix = None
            out.append(word)
            continue
        if not out and prefix is None and set(body) <= set("-—–"):
            continue  # a leading dash marks a new speaker; dashes are added back by build_cues
        if body[0] in OPENING_PUNCT and body[0] not in ATTACHING_PUNCT:
            prefix = word if prefix is None else replace(prefix, text=prefix.text + body)
            continue
        if not out:
            continue
        previous = out[-1]
        stem = previous.text.rstrip()
        if stem.endswith(body) or (body in {",", ";", ":"} and TRAILING_PUNCT.search(stem)):
            continue  # ", ," or ". ,"
        glue = "" if body[0] in ATTACHING_PUNCT else " "
        out[-1] = replace(previous, text=stem + glue + body, end=max(previous.end, word.end))
    return out


def _merge_repeated_tags(words: list[Word]) -> list[Word]:
    """ "[music] [music]" and "[music], [music]." become one tag, with the last one's punctuation."""
    out: list[Word] = []
    for word in words:
        core = word.text.strip().rstrip(",.?!")
        if out and _is_tag_word(word.text) and core == out[-1].text.strip().rstrip(",.?!"):
            text = out[-1].text[: len(out[-1].text) - len(out[-1].text.lstrip())] + word.text.strip()
            out[-1] = replace(out[-1], text=text, end=max(out[-1].end, word.end))
        else:
            out.append(word)
    return out


def clean_words(
    segments: list[Segment], *, verbatim: bool, tag_audio_events: bool, language: str | None = None
) -> list[Segment]:
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
    language = language_key(language) or guess_language(w.text for segment in segments for w in segment_words(segment))
    result: list[Segment] = []
    for segment in segments:
        original = segment_words(segment)
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
    # no loop reaches an output (txt, srt, webvtt, the segments, what is translated or burned): a word
    # or group said more than three times in a row is cut to once, unless a verbatim job's words
    # sound said that way (repetition.said_that_way)
    return repetition.cut_segment_loops(result, verbatim=verbatim)
