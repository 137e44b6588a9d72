"""Speech to English: whisper's ``task="translate"`` words put into the cues of the original
transcript (``align_translated_words``)."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import replace

from transcription.pipeline.transcripts.captions import Cue
from transcription.pipeline.transcripts.linebreaks import MAX_LINE_CHARS, MAX_LINES, wrap_lines

from ..types import Word


def _nearest_cue(cues: list[Cue], starts: list[float], time: float) -> int:
    index = bisect_right(starts, time) - 1
    candidates = [i for i in (index, index + 1) if 0 <= i < len(cues)]

    def distance(i: int) -> float:
        cue = cues[i]
        return 0.0 if cue.start <= time <= cue.end else min(abs(time - cue.start), abs(time - cue.end))

    return min(candidates, key=lambda i: (distance(i), i))


def align_translated_words(cues: list[Cue], words: list[Word]) -> list[Cue]:
    """Cues of the original transcript with their text replaced by ``words`` (whisper's
    ``task="translate"`` output for the same audio, English with timestamps).

    Each word goes to the cue whose span contains its midpoint (the nearest one when none does);
    count and timings stay one to one. A cue left without words takes the nearest boundary word
    from the closest cue with two or more (passed along through any cues in between, so word order
    is kept), so no cue stays empty while there are at least as many words as cues. Lines are
    re-wrapped as in ``translate_cues``."""
    if not cues:
        return []
    starts = [cue.start for cue in cues]
    buckets: list[list[Word]] = [[] for _ in cues]
    for word in sorted((w for w in words if w.text.strip()), key=lambda w: (w.start, w.end)):
        buckets[_nearest_cue(cues, starts, (word.start + word.end) / 2)].append(word)

    moved = True
    while moved:
        moved = False
        for empty in (i for i, bucket in enumerate(buckets) if not bucket):
            donors = [j for j, bucket in enumerate(buckets) if len(bucket) >= 2]
            if not donors:
                break
            donor = min(donors, key=lambda j: (abs(j - empty), -len(buckets[j])))
            step = 1 if donor < empty else -1
            at = donor
            while at != empty:  # pass one word along: donor's boundary word to its neighbour, ...
                if step == 1:
                    buckets[at + 1].insert(0, buckets[at].pop())
                else:
                    buckets[at - 1].append(buckets[at].pop(0))
                at += step
            moved = True
            break

    out = []
    for cue, bucket in zip(cues, buckets):
        text = re.sub(
            r"\s+", " ", "".join(word.text if word.text[:1].isspace() else " " + word.text for word in bucket)
        ).strip()
        out.append(replace(cue, lines=wrap_lines(text, MAX_LINE_CHARS, MAX_LINES, language="en")))
    return out
