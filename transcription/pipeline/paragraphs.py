"""The `txt` layout: one paragraph per speaker turn. Pure functions over pipeline dataclasses."""

from __future__ import annotations

import math
import re

from .types import Segment, renumber_speakers


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
    numbers = renumber_speakers([s.speaker for s in kept])
    turns: list[tuple[float, int, list[str]]] = []
    for segment, speaker in zip(kept, numbers):
        text = re.sub(r"\s+", " ", segment.text).strip()
        if turns and turns[-1][1] == speaker:
            turns[-1][2].append(text)
        else:
            turns.append((segment.start, speaker, [text]))
    if not turns:
        return ""
    return (
        "\n\n".join(f"[{_clock(start)}] Speaker {speaker}: {' '.join(texts)}" for start, speaker, texts in turns) + "\n"
    )
