"""Repetition loops: the same word, group of words or piece of a word written over and over.

Whisper, when it cannot read a stretch, can fall into writing one token again and again ("7, 7, 7,
7, ...", "iekzijajajajajajaja", "0-0-0-0-0-0"). A run is a loop when the same unit comes back more
than MAX_TURNS times in a row; people say a thing three times ("no, no, no"), rarely more, and when
they do a verbatim job keeps it (``said_that_way``). Pure functions over pipeline dataclasses.
"""

from __future__ import annotations

import re
from dataclasses import replace

from transcription.pipeline.recognition.words import word_core
from transcription.pipeline.types import Segment, Word

__all__ = ["MAX_TURNS", "cut_loops", "cut_segment_loops", "has_loop", "inner_loop", "loop_runs", "said_that_way"]

MAX_TURNS = 3  # a unit said this many times in a row is speech; once more is a loop
MAX_UNIT_WORDS = 6  # the longest group of words looked for
# Inside one word: a piece of 2-4 characters written four times or more in a row ("jajajaja",
# "0-0-0-0"). One character is left alone ("hmmmm", "1000000"), as are pieces made of digits only.
_INNER_LOOP = re.compile(rf"(\D.{{1,3}}?|.\D.{{0,2}}?|..\D.?|...\D)\1{{{MAX_TURNS},}}", re.DOTALL)
# a word that stands for one turn: its core, or the word itself when it is punctuation only
_NOT_WORD = re.compile(r"[\s,.;:!?¡¿、。，！？…\-–—\"'«»“”„()]+")


def _key(text: str) -> str:
    return word_core(text) or text.strip()


def loop_runs(keys: list[str], max_turns: int = MAX_TURNS) -> list[tuple[int, int, int]]:
    """(start, unit length, turns) of each run of more than ``max_turns`` turns of one unit of
    1..MAX_UNIT_WORDS keys, leftmost first, runs not overlapping; the shortest unit wins."""
    runs, i = [], 0
    while i < len(keys):
        found = None
        for k in range(1, MAX_UNIT_WORDS + 1):
            if i + (max_turns + 1) * k > len(keys):
                break
            unit = keys[i : i + k]
            if not all(unit) or (k > 1 and len(set(unit)) == 1):
                continue  # "a a" is the unit "a" twice
            turns = 1
            while keys[i + turns * k : i + (turns + 1) * k] == unit:
                turns += 1
            if turns > max_turns:
                found = (i, k, turns)
                break
        if found:
            runs.append(found)
            i += found[1] * found[2]
        else:
            i += 1
    return runs


def inner_loop(text: str) -> re.Match[str] | None:
    return _INNER_LOOP.search(text)


def has_loop(text: str, max_turns: int = MAX_TURNS) -> bool:
    """Whether ``text`` holds a loop: a word group more than ``max_turns`` times in a row, or a
    piece of a word written more than MAX_TURNS times over."""
    keys = [_key(w) for w in _NOT_WORD.split(text) if w.strip()]
    return bool(loop_runs(keys, max_turns)) or any(inner_loop(w) for w in text.split())


def said_that_way(words: list[Word]) -> bool:
    """Whether a run of repeated words sounds said rather than looped: every word takes time
    (Whisper's loops crowd many words into little audio or stretch few over much) and was heard
    with confidence. Used for verbatim jobs only."""
    if not words:
        return False
    durations = [w.end - w.start for w in words]
    probability = sum(w.probability for w in words) / len(words)
    return min(durations) >= 0.1 and max(durations) <= 2.0 and probability >= 0.5


def _cut_inner(word: Word) -> Word:
    text = word.text
    while (match := inner_loop(text)) is not None:
        text = text[: match.start()] + match.group(1) + text[match.end() :]
    return word if text == word.text else replace(word, text=text)


def cut_loops(words: list[Word], *, verbatim: bool = False, max_turns: int = MAX_TURNS) -> list[Word]:
    """The words with each loop cut to its first turn ("4, 5, 4, 5, 4, 5, 4, 5" -> "4, 5";
    "iekzijajajaja" -> "iekzija"); a verbatim job keeps the runs ``said_that_way``. The cut turn
    keeps the first turn's times. Cut again until no loop is left: a cut can join two runs into one
    ("a b a b a b" then "a a a a b")."""
    words = [_cut_inner(w) for w in words]
    while True:
        keys = [_key(w.text) for w in words]
        out: list[Word] = []
        i = 0
        for start, unit, turns in loop_runs(keys, max_turns):
            run = words[start : start + unit * turns]
            out.extend(words[i:start])
            out.extend(run if verbatim and said_that_way(run) else run[:unit])
            i = start + unit * turns
        out.extend(words[i:])
        if len(out) == len(words):
            return out
        words = out


def cut_segment_loops(segments: list[Segment], *, verbatim: bool = False) -> list[Segment]:
    """Segments with their loops cut, also those that run from one segment into the next (Whisper's
    "Thank you." written every few seconds over music, "Szyb! Szyb! ..." split at each "!"):
    the words of all segments are cut together, and a segment left without words goes."""
    if not any(has_loop(s.text) for s in segments) and not _joined_loop(segments):
        return segments
    owner: dict[int, int] = {}
    flat: list[Word] = []
    for index, segment in enumerate(segments):
        for word in segment.words or [Word(segment.start, segment.end, " " + segment.text, 0.0)]:
            owner[id(word)] = index
            flat.append(word)
    kept_words: dict[int, list[Word]] = {}
    for word in cut_loops(flat, verbatim=verbatim):
        # a word cut inside ("jajaja") is a new object: it belongs where its start is
        found = owner.get(id(word))
        index = (
            found
            if found is not None
            else next(k for k, s in enumerate(segments) if word.start <= s.end or k == len(segments) - 1)
        )
        kept_words.setdefault(index, []).append(word)
    out = []
    for index, segment in enumerate(segments):
        words = kept_words.get(index)
        if not words:
            continue
        if not segment.words:
            out.append(replace(segment, text=words[0].text.strip()))
            continue
        if words == segment.words:
            out.append(segment)
            continue
        text = "".join(w.text for w in words).strip()
        out.append(
            replace(
                segment,
                start=min(segment.start, words[0].start),
                end=max(words[-1].end, segment.start),
                text=text,
                words=words,
            )
        )
    return out


def _joined_loop(segments: list[Segment]) -> bool:
    return has_loop(" ".join(s.text for s in segments))


def _cut_text(text: str) -> str:
    """A text without words (timestamps) cut as cut_loops cuts words."""
    pieces = re.findall(r"\s*\S+", text)
    words = [Word(start=0.0, end=0.0, text=p, probability=0.0) for p in pieces]
    return "".join(w.text for w in cut_loops(words)).strip()
