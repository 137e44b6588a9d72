"""A finished job's transcript corrected by its owner: edits applied to the kept segments document
(JobSegments: ``[{start, end, text, speaker, words: [{start, end, word}]}]``) and the job's text and
subtitles made again from it. Plain functions over plain data; nothing of Django.

An edit names its segment by the ``index`` the last GET gave it, however many edits come before it
in the same request: the edits are applied in order to the document, and each segment remembers the
index it was read with. A segment an earlier edit of the same request split or merged away can no
longer be named (its index would be ambiguous); the client reads the document again.

Every edit is checked; a bad one is reported with its position and field and the others are still
checked, so one answer names every mistake; nothing is applied unless every edit is good.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transcription.pipeline.recognition.words import is_nospace_char
from transcription.pipeline.transcripts import captions, paragraphs
from transcription.pipeline.types import Segment, Word

TEXT_MAX_CHARS = 500
SPEAKER_MAX = 9999  # the N of "Speaker N" a name may be given (speaker names' keys have 1 to 4 digits)
OPS = ("text", "speaker", "split", "merge", "times", "restore")

# What a segment's text may hold (docs/decisions/api.md, "What edited text may hold"). It is one line
# of `txt` and of a cue, read by people: characters a person could mean (markup, braces,
# backslashes, timestamps, "->") are kept and escaped where each output needs it (captions,
# burn.ass); what is invisible and changes how the rest reads is refused, naming the character:
_REFUSED = (
    # line and paragraph breaks of every kind (a segment is one line; a split makes two)
    (re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"), "a line break (split the segment instead)"),
    # the other C0 and C1 controls and DEL: no meaning in a transcript
    (re.compile(r"[\x00-\x1f\x7f-\x9f]"), "a control character"),
    # embeddings, overrides and isolates reorder what follows them, unseen ("Trojan Source");
    # the marks U+200E, U+200F and U+061C a right-to-left writer needs stay allowed
    (re.compile(r"[\u202a-\u202e\u2066-\u2069]"), "an invisible direction override"),
    # a byte-order mark, interlinear annotations, noncharacters and halves of surrogate pairs
    (re.compile(r"[\ufeff\ufff9-\ufffb\ufffe\uffff\ufdd0-\ufdef\ud800-\udfff]"), "an invisible format character"),
    # ends a cue in SRT and WebVTT: no spoken text needs it (an arrow is "->" or "→")
    (re.compile(r"-->"), "'-->', which ends a subtitle cue (write '->' or '→')"),
)

Document = list[dict[str, Any]]
# the document being edited: (the index the last GET gave the segment, or -1 for a new piece, segment)
Current = list[tuple[int, dict[str, Any]]]


@dataclass
class EditProblem:
    edit: int  # the edit's position in the request
    field: str
    message: str


class EditsRefused(Exception):
    def __init__(self, problems: list[EditProblem]):
        super().__init__("; ".join(f"edits[{p.edit}].{p.field}: {p.message}" for p in problems))
        self.problems = problems


class _Bad(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def apply_edits(
    segments: Document, edits: Sequence[dict[str, Any]], *, duration: float, original: Document
) -> Document:
    """The document after `edits`, in order; raises EditsRefused naming every bad edit. `duration`
    bounds the times (seconds of media, 0 when unknown: then only the order is checked); `original`
    is what a `restore` brings back."""
    current: Current = [(index, segment) for index, segment in enumerate(segments)]
    gone: dict[int, str] = {}  # GET index -> what an earlier edit did to it
    problems: list[EditProblem] = []
    for number, edit in enumerate(edits):
        try:
            current = _apply(current, gone, number, edit, duration, original)
        except _Bad as bad:
            problems.append(EditProblem(number, bad.field, bad.message))
    if problems:
        raise EditsRefused(problems)
    return [segment for _, segment in current]


def _apply(
    current: Current, gone: dict[int, str], number: int, edit: dict[str, Any], duration: float, original: Document
) -> Current:
    op = edit.get("op")
    if op == "restore":
        gone.clear()
        gone.update({index: f"restored by edits[{number}]" for index in range(len(current))})
        return [(-1, _copy(segment)) for segment in original]
    position = _position(current, gone, edit.get("index"))
    read_as, segment = current[position]
    if op == "text":
        changed = with_text(segment, edit.get("text"), read_as)
    elif op == "speaker":
        pieces = _with_speaker(segment, edit, current)
        if len(pieces) > 1:
            gone[read_as] = f"cut by edits[{number}]"
        return current[:position] + [(read_as if len(pieces) == 1 else -1, p) for p in pieces] + current[position + 1 :]
    elif op == "split":
        first, second = _split(segment, edit.get("word"))
        gone[read_as] = f"split by edits[{number}]"
        return current[:position] + [(-1, first), (-1, second)] + current[position + 1 :]
    elif op == "merge":
        if position + 1 >= len(current):
            raise _Bad("index", "The last segment has no next segment to merge with.")
        following = current[position + 1]
        changed = _merged(segment, following[1])
        gone[following[0]] = f"merged into segment {read_as} by edits[{number}]"
        return current[:position] + [(read_as, changed)] + current[position + 2 :]
    elif op == "times":
        changed = _retimed(segment, edit, current, position, duration)
    else:
        raise _Bad("op", f"Unknown edit; one of: {', '.join(OPS)}.")
    return current[:position] + [(read_as, changed)] + current[position + 1 :]


def _position(current: Current, gone: dict[int, str], index: Any) -> int:
    if not isinstance(index, int) or isinstance(index, bool):
        raise _Bad("index", "A segment's index, as the last GET numbered it, is required.")
    if gone.get(index):
        raise _Bad("index", f"Segment {index} was {gone[index]}; read the document again to name its parts.")
    for position, (read_as, _) in enumerate(current):
        if read_as == index:
            return position
    raise _Bad("index", f"There is no segment {index}; the last one is {max(0, len(current) - 1)}.")


def _copy(segment: dict[str, Any]) -> dict[str, Any]:
    return {**segment, "words": [dict(word) for word in segment.get("words", [])]}


def check_text(text: Any, index: Any = None) -> str:
    """`text` stripped, or _Bad naming the segment (`index`) and what its text may not hold."""
    whose = "A segment's" if index is None else f"Segment {index}'s"
    if not isinstance(text, str):
        raise _Bad("text", "A text is required.")
    cleaned: str = text.strip()
    if not 1 <= len(cleaned) <= TEXT_MAX_CHARS:
        raise _Bad("text", f"{whose} text must have 1 to {TEXT_MAX_CHARS} characters; use merge to remove one.")
    for pattern, what in _REFUSED:
        found = pattern.search(cleaned)
        if found:
            char = found.group()
            name = f"U+{ord(char):04X} {unicodedata.name(char, '')}".strip() if len(char) == 1 else repr(char)
            raise _Bad(
                "text",
                f"{whose} text may not hold {what}: {name} at character {found.start() + 1}.",
            )
    return cleaned


def with_text(segment: dict[str, Any], text: Any, index: Any = None) -> dict[str, Any]:
    """The segment saying `text`: the same words keep their times; otherwise the new words share
    the segment's time in proportion to their length (no model is run to time them)."""
    text = check_text(text, index)
    tokens = text.split()
    old = segment.get("words", [])
    if len(tokens) == len(old):
        # a word a person typed is certain; one left as the model heard it keeps its probability
        words = [
            word if word["word"] == token else {**word, "word": token, "probability": 1.0}
            for word, token in zip(old, tokens)
        ]
    else:
        start, end = segment["start"], segment["end"]
        total = sum(len(token) + 1 for token in tokens)
        words, at = [], start
        for token in tokens:
            span = (end - start) * (len(token) + 1) / total
            words.append({"start": round(at, 3), "end": round(at + span, 3), "word": token, "probability": 1.0})
            at += span
        words[-1]["end"] = end
    return {**segment, "text": text, "words": words}


def _speaker(value: Any, current: Current) -> int:
    known = {segment["speaker"] for _, segment in current}
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= SPEAKER_MAX:
        raise _Bad("speaker", f"A speaker's number (1 to {SPEAKER_MAX}) is required.")
    if value not in known and value != max(known, default=0) + 1:
        held = ", ".join(str(n) for n in sorted(known))
        raise _Bad("speaker", f"Speaker {value} is neither one of this job's ({held}) nor the next new one.")
    return value


def _word_bound(value: Any, field: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _Bad(field, f"A word's position in segment's words, {low} to {high}.")
    return value


def _with_speaker(segment: dict[str, Any], edit: dict[str, Any], current: Current) -> list[dict[str, Any]]:
    """The segment given to `speaker`; with `from_word`/`to_word` (inclusive), only that run of its
    words, which becomes a segment of its own (the segment is cut before and after it)."""
    speaker = _speaker(edit.get("speaker"), current)
    words = segment.get("words", [])
    if edit.get("from_word") is None and edit.get("to_word") is None:
        return [{**segment, "speaker": speaker}]
    if not words:
        raise _Bad("from_word", "This segment has no words to choose from.")
    first = _word_bound(edit.get("from_word", 0), "from_word", 0, len(words) - 1)
    last = _word_bound(edit.get("to_word", len(words) - 1), "to_word", first, len(words) - 1)
    runs = [(0, first, segment["speaker"]), (first, last + 1, speaker), (last + 1, len(words), segment["speaker"])]
    return [_piece(words[a:b], who) for a, b, who in runs if b > a]


def _piece(words: list[dict[str, Any]], speaker: int) -> dict[str, Any]:
    return {
        "start": words[0]["start"],
        "end": words[-1]["end"],
        "text": " ".join(word["word"] for word in words),
        "speaker": speaker,
        "words": [dict(word) for word in words],
    }


def _split(segment: dict[str, Any], word: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    words = segment.get("words", [])
    if len(words) < 2:
        raise _Bad("word", "A segment of fewer than two words cannot be split.")
    at = _word_bound(word, "word", 1, len(words) - 1)
    return _piece(words[:at], segment["speaker"]), _piece(words[at:], segment["speaker"])


def _merged(segment: dict[str, Any], following: dict[str, Any]) -> dict[str, Any]:
    if segment["speaker"] != following["speaker"]:
        raise _Bad(
            "index",
            f"The next segment is Speaker {following['speaker']}'s, this one Speaker {segment['speaker']}'s: "
            "give them the same speaker first.",
        )
    return {
        "start": segment["start"],
        "end": following["end"],
        "text": f"{segment['text']} {following['text']}".strip(),
        "speaker": segment["speaker"],
        "words": [dict(w) for w in segment.get("words", []) + following.get("words", [])],
    }


def _seconds(value: Any, field: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        raise _Bad(field, "A time in seconds is required.")
    return round(float(value), 3)


def _spoken(segment: dict[str, Any]) -> bool:
    return bool(segment["text"] or segment.get("words"))


def _retimed(
    segment: dict[str, Any], edit: dict[str, Any], current: Current, position: int, duration: float
) -> dict[str, Any]:
    """The segment at new `start`/`end`, inside the media and between its neighbours; its words
    keep their places in it (stretched or shrunk with it)."""
    start = _seconds(edit.get("start", segment["start"]), "start")
    end = _seconds(edit.get("end", segment["end"]), "end")
    # a voice heard under another's words (an empty segment overlapping theirs, results.build_results)
    # neither bounds nor is bounded by the spoken segments
    spoken = _spoken(segment)
    before = [s for _, s in current[:position] if spoken and _spoken(s)]
    after = [s for _, s in current[position + 1 :] if spoken and _spoken(s)]
    earliest = float(before[-1]["end"]) if before else 0.0
    latest = float(after[0]["start"]) if after else (duration or float("inf"))
    if start < earliest:
        raise _Bad("start", f"The start must be at or after {earliest:.3f} s (the previous segment's end).")
    if end > latest:
        where = "the next segment's start" if after else "the end of the media"
        raise _Bad("end", f"The end must be at or before {latest:.3f} s ({where}).")
    if end <= start:
        raise _Bad("end", "The end must come after the start.")
    old_start, old_span = float(segment["start"]), float(segment["end"] - segment["start"]) or 1.0

    def moved(t: float) -> float:
        return round(start + (t - old_start) * (end - start) / old_span, 3)

    words = [{**w, "start": moved(w["start"]), "end": moved(w["end"])} for w in segment.get("words", [])]
    return {**segment, "start": start, "end": end, "words": words}


def segment(record: dict[str, Any]) -> Segment:
    """A document's segment as the text stages read it. The document keeps each word without its
    leading space; it gets one back unless both sides of it are of a script written without spaces
    (the speech model writes Chinese or Japanese words glued, cue_tokens.Reader), so that a job's
    cues made from its kept segments are the ones the speech stage made (results.build_results)."""
    words: list[Word] = []
    for w in record.get("words", []):
        text = w["word"]
        glued = bool(words) and bool(text) and is_nospace_char(words[-1].text[-1:]) and is_nospace_char(text[0])
        words.append(Word(w["start"], w["end"], text if glued else " " + text, w.get("probability", 1.0)))
    return Segment(
        record["start"], record["end"], " " + record["text"], words, record["speaker"], record.get("audio_event")
    )


@dataclass(frozen=True)
class SizeLimits:
    """How large a document may grow: words and characters per second of the job (config.settings)."""

    words_per_second: float
    chars_per_second: float
    min_words: int
    min_chars: int

    def bounds(self, duration: float) -> tuple[int, int]:
        return (
            max(self.min_words, math.floor(duration * self.words_per_second)),
            max(self.min_chars, math.floor(duration * self.chars_per_second)),
        )


class TooLarge(Exception):
    """The edits would make the document larger than its recording allows; str() says by what."""


def size(document: Document) -> tuple[int, int]:
    """(words, characters of text) of a document."""
    return (
        sum(len(s.get("words") or ()) or len(s["text"].split()) for s in document),
        sum(len(s["text"]) for s in document),
    )


def check_size(before: Document, after: Document, *, duration: float, limits: SizeLimits) -> None:
    """Raise TooLarge when `after` is past its bounds and larger than `before` (a recognition already
    past them, a fast speaker's, can still be corrected, only not grown)."""
    max_words, max_chars = limits.bounds(duration)
    (words_before, chars_before), (words, chars) = size(before), size(after)
    rule = f"a job of {duration:.0f} s may hold at most"
    if words > max(max_words, words_before):
        raise TooLarge(
            f"The transcript would hold {words} words; {rule} {max_words} "
            f"({limits.words_per_second:g} a second, at least {limits.min_words})."
        )
    if chars > max(max_chars, chars_before):
        raise TooLarge(
            f"The transcript would hold {chars} characters; {rule} {max_chars} "
            f"({limits.chars_per_second:g} a second, at least {limits.min_chars})."
        )


def as_segments(document: Document) -> list[Segment]:
    return [segment(s) for s in document]


def cues(document: Document, *, language: str | None) -> list[captions.Cue]:
    """The job's subtitle cues, made from its kept segments (what its SRT and WebVTT hold, voices
    included): what translation, retranslation, a burn and the OpenAI door read, never the SRT."""
    return captions.build_cues(as_segments(document), language=language)


def render(document: Document, *, language: str | None) -> dict[str, str]:
    """`txt`, `srt` and `webvtt` of the document, made as the speech stage makes them, with the
    speakers' numbers as the document has them (an edit's new speaker keeps its number)."""
    segments = as_segments(document)
    cues = captions.build_cues(segments, language=language)
    return {
        "txt": paragraphs.transcript_text(segments, renumber=False),
        "srt": captions.to_srt(cues),
        "webvtt": captions.to_webvtt(cues),
    }


def numbered(document: Document) -> list[dict[str, Any]]:
    """The document as GET answers it: each segment with its `index`."""
    return [{"index": index, **segment} for index, segment in enumerate(document)]
