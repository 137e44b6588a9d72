"""The `txt` layout: paragraphs of one speaker each. Pure functions over pipeline dataclasses."""

from __future__ import annotations

import math
import re

from transcription.pipeline.recognition.words import ends_sentence, segment_words
from transcription.pipeline.types import Segment, Word, renumber_speakers

# A paragraph is closed at a sentence end before it spans more than this much time (first word's
# start to last word's end): a ten-minute monologue is not one block of text.
MAX_PARAGRAPH_SECONDS = 60.0


def _clock(seconds: float) -> str:
    total = max(0, math.floor(seconds))
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def _sentences(segments: list[Segment]) -> list[tuple[float, float, str]]:
    """(start, end, text) of each sentence in consecutive segments of one speaker. A sentence ends
    after a word that ends one; text that runs on to the end of the turn is one sentence too."""
    sentences: list[tuple[float, float, str]] = []
    current: list[Word] = []

    def close() -> None:
        text = re.sub(r"\s+", " ", "".join(w.text for w in current)).strip()
        if text:
            sentences.append((current[0].start, current[-1].end, text))
        current.clear()

    for segment in segments:
        for index, word in enumerate(segment_words(segment)):
            # a segment's first word follows the previous segment's after a space
            current.append(_spaced(word) if index == 0 else word)
            if ends_sentence(word.text):
                close()
    if current:
        close()
    return sentences


def _spaced(word: Word) -> Word:
    return word if word.text[:1].isspace() else Word(word.start, word.end, " " + word.text, word.probability)


def _paragraphs(sentences: list[tuple[float, float, str]]) -> list[tuple[float, list[str]]]:
    """Sentences packed into paragraphs of at most MAX_PARAGRAPH_SECONDS (one longer sentence is a
    paragraph of its own)."""
    out: list[tuple[float, list[str]]] = []
    for start, end, text in sentences:
        if out and end - out[-1][0] <= MAX_PARAGRAPH_SECONDS:
            out[-1][1].append(text)
        else:
            out.append((start, [text]))
    return out


def transcript_text(segments: list[Segment], *, renumber: bool = True) -> str:
    """Paragraphs "[HH:MM:SS] Speaker N: text", a blank line between them.

    Consecutive segments of one speaker make one turn; a turn longer than MAX_PARAGRAPH_SECONDS is
    cut at sentence ends into paragraphs of at most that span, each stamped with its own start
    (floored to the second) and speaker. Speaker None counts as speaker 1; speakers are renumbered
    1, 2, ... in order of first appearance. Returns "" when there is no text, else ends with one
    newline. An edited transcript keeps its speakers' numbers (``renumber=False``): the names and
    the cues' voices are keyed by them.
    """
    kept = [s for s in segments if s.text.strip()]
    speakers = [1 if s.speaker is None else s.speaker for s in kept]
    numbers = renumber_speakers(speakers) if renumber else speakers
    return joined([line for speaker, turn in turns(kept, numbers) for line in turn_lines(speaker, turn)])


def turns(kept: list[Segment], speakers: list[int]) -> list[tuple[int, list[Segment]]]:
    """Consecutive segments (with text) of one speaker, with that speaker; a sound heard (an event
    segment, pipeline.audio_events) is a turn of its own."""
    out: list[tuple[int, list[Segment]]] = []
    for segment, speaker in zip(kept, speakers):
        if out and out[-1][0] == speaker and segment.event is None and out[-1][1][-1].event is None:
            out[-1][1].append(segment)
        else:
            out.append((speaker, [segment]))
    return out


def turn_lines(speaker: int, turn: list[Segment]) -> list[str]:
    """A turn's paragraphs, one a line (pipeline.transcripts.rerender makes again only the turns an edit reached);
    a sound's, "[HH:MM:SS] [music]", names no speaker."""
    if turn[0].event is not None:
        return [f"[{_clock(turn[0].start)}] {turn[0].text.strip()}"]
    return [f"[{_clock(start)}] Speaker {speaker}: {' '.join(texts)}" for start, texts in _paragraphs(_sentences(turn))]


def joined(lines: list[str]) -> str:
    return "\n\n".join(lines) + "\n" if lines else ""
