"""Timed words made into the tokens subtitle cues are planned over (captions.build_cues), read
segment by segment so that an edited transcript can be read again from any segment on
(pipeline.transcripts.rerender): the reader's state before each segment is kept (``State``), and reading may
restart from it. Pure functions over pipeline dataclasses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transcription.pipeline.recognition.words import (
    ATTACHING_PUNCT,
    OPENING_PUNCT,
    has_word_chars,
    is_nospace_char,
    is_tag,
    segment_words,
)
from transcription.pipeline.transcripts.linebreaks import MAX_LINE_CHARS
from transcription.pipeline.types import Segment


@dataclass
class Tok:
    text: str
    start: int  # ms
    end: int
    speaker: int
    glue: bool  # no space before it (continuation of the previous token)
    seg_end: bool = False


# The reader's state before a segment, apart from how many tokens came before it: the latest start
# so far (starts never go back), opening punctuation waiting for the next word, and the last token as
# it was then (the segment may still add punctuation to it or end its segment). Two readers in the
# same state read the same segments alike.
Snapshot = tuple[str, int, int, int, bool, bool]  # a Tok's fields
State = tuple[int, str | None, Snapshot | None]


def split_long(tok: Tok) -> list[Tok]:
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
        out.append(
            Tok(
                piece,
                at,
                end,
                tok.speaker,
                tok.glue if index == 0 else True,
                tok.seg_end if index == len(pieces) - 1 else False,
            )
        )
        at = end
    return out


def pieces(tok: Tok) -> list[Tok]:
    return split_long(tok) if len(tok.text) > MAX_LINE_CHARS else [tok]


class Reader:
    """Reads segments in order into raw tokens (before long ones are cut). ``toks`` holds the tokens
    read since the reader started; a reader restarted at a State holds the last token before it
    (a copy: the segment may change it) and counts from there."""

    def __init__(self, count: int = 0, state: State = (0, None, None)):
        self.last_start, self.prefix, last = state
        self.toks: list[Tok] = [] if last is None else [Tok(*last)]
        self.base = count - len(self.toks)  # the index of toks[0] among all the raw tokens

    def count(self) -> int:
        return self.base + len(self.toks)

    def state(self) -> State:
        last = self.toks[-1] if self.toks else None
        snapshot = None if last is None else (last.text, last.start, last.end, last.speaker, last.glue, last.seg_end)
        return self.last_start, self.prefix, snapshot

    def read(self, segment: Segment) -> None:
        toks = self.toks
        speaker = 1 if segment.speaker is None else segment.speaker
        first_in_segment = True
        for word in segment_words(segment):
            raw = word.text
            text = re.sub(r"\s+", " ", raw.strip())
            if not text:
                continue
            start = max(0, self.last_start, int(round(word.start * 1000)))
            end = max(start, int(round(word.end * 1000)))
            if not has_word_chars(text) and not is_tag(text):
                if first_in_segment and self.prefix is None and set(text) <= set("-—–"):
                    continue  # a leading dash marks a new speaker
                if text[0] in OPENING_PUNCT and text[0] not in ATTACHING_PUNCT:
                    self.prefix = text if self.prefix is None else self.prefix + text
                elif toks:
                    space = "" if text[0] in ATTACHING_PUNCT else " "
                    toks[-1].text = toks[-1].text + space + text
                    toks[-1].end = max(toks[-1].end, end)
                continue
            if self.prefix is not None:
                text, self.prefix = self.prefix + text, None
            if not toks:
                glue = False
            elif first_in_segment:
                glue = is_nospace_char(toks[-1].text[-1]) and is_nospace_char(text[0])
            else:
                glue = not raw[:1].isspace()
            if toks and first_in_segment:
                toks[-1].seg_end = True
            toks.append(Tok(text, start, end, speaker, glue))
            self.last_start = start
            first_in_segment = False

    def finish(self) -> None:
        """The transcript ends here: its last token ends a segment."""
        if self.toks:
            self.toks[-1].seg_end = True


def read_all(segments: list[Segment]) -> tuple[list[Tok], list[int], list[State]]:
    """The raw tokens of `segments`, and before each segment and at the end (before ``finish``)
    how many tokens came before and the reader's state."""
    reader, counts, states = Reader(), [], []
    for segment in [*segments, None]:
        counts.append(reader.count())
        states.append(reader.state())
        if segment is not None:
            reader.read(segment)
    reader.finish()
    return reader.toks, counts, states


def tokens(segments: list[Segment]) -> list[Tok]:
    """The tokens cues are planned over: every word, punctuation attached, long ones cut."""
    return [piece for tok in read_all(segments)[0] for piece in pieces(tok)]
