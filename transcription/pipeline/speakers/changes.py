"""Speaker changes redrawn by the segmentation model (:mod:`.segmentation`).

The turns that clustering gives change speaker on the grid of the encoder's windows (0.75 s apart,
each 1.5 s long) and never overlap. At each change from A to B the segmentation model, whose frames
are 17 ms apart, is read in the 10 s window that sees the change best: the window's own speaker
that talks most in A's last 1.2 s before the change is A's, the other one that talks most in B's
first 1.2 s after it is B's. A then ends where that speaker stops and B starts where theirs
starts, within 0.75 s of the old change (a change across a pause over 0.5 s is left alone):
where they talk at once, A's turn runs on over the start of B's (overlapped speech at a turn
change, which one speaker at a time misses by construction).
Nothing else moves: a turn keeps its speaker, and changes the model cannot read (a voice not
clearly one of its speakers on either side) stay as they were.

Chosen on the calibration half of bench/speakers (bench/speakers/overlap.py sweeps them; pooled
DER 7.20% as clustered): a speaker talks at 0.7 and more (6.75%; 0.6 and 0.8: 6.81% and 6.82%),
changes move by at most 0.75 s (1 s: 6.73%, 0.5 s: 6.85%); changes across a pause of more than
0.5 s are left where the VAD put them (redrawing up to 2 s scores the same there: the smaller
change is taken). Test half: 8.66% -> 8.07% (docs/decisions/speech-and-text.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..types import SpeakerTurn
from .segmentation import FRAME_STEP_SAMPLES, SpeakerActivity
from .speech import SAMPLE_RATE

SIDE_S = 1.5  # how far each side of a change the two voices are looked for
MARGIN_S = 0.3  # ... leaving out this much around the change itself
MIN_TURN_S = 0.05  # a turn is never shrunk below this
MIN_SIDE_FRAMES = 3
FRAME_STEP_S = FRAME_STEP_SAMPLES / SAMPLE_RATE


@dataclass(frozen=True)
class Reading:
    """How changes are read (bench/speakers/overlap.py sweeps these on the calibration half)."""

    talking: float = 0.7  # a window's speaker talks in frames where its probability is at least this
    max_shift_s: float = 0.75  # a change moves by at most this
    max_pause_s: float = 0.5  # changes across longer pauses are left where the VAD put them


SHIPPED = Reading()


def redraw_changes(
    turns: Sequence[SpeakerTurn], activity: SpeakerActivity, reading: Reading = SHIPPED
) -> list[SpeakerTurn]:
    """``turns`` (one speaker at a time, sorted or not) with every change of speaker redrawn where
    the model hears it; a speaker's turns that come to overlap are merged. Sorted by start."""
    ordered = sorted(turns, key=lambda t: (t.start, t.end))
    bounds = [[t.start, t.end] for t in ordered]
    for k in range(len(ordered) - 1):
        before, after = ordered[k], ordered[k + 1]
        if before.speaker == after.speaker or after.start - before.end > reading.max_pause_s:
            continue
        edges = _change(before, after, activity, reading)
        if edges is None:
            continue
        before_end, after_start = edges
        bounds[k][1] = max(before_end, bounds[k][0] + MIN_TURN_S)
        bounds[k + 1][0] = min(after_start, bounds[k + 1][1] - MIN_TURN_S)
    redrawn = [SpeakerTurn(start=s, end=e, speaker=t.speaker) for (s, e), t in zip(bounds, ordered, strict=True)]
    return merge_each_speaker(redrawn)


def change_times(turns: Sequence[SpeakerTurn], reading: Reading = SHIPPED) -> list[float]:
    """Where :func:`redraw_changes` reads the model: the middle of every change of speaker it may
    redraw (the segmentation model need run only in the windows nearest these)."""
    ordered = sorted(turns, key=lambda t: (t.start, t.end))
    return [
        (before.end + after.start) / 2
        for before, after in zip(ordered, ordered[1:], strict=False)
        if before.speaker != after.speaker and after.start - before.end <= reading.max_pause_s
    ]


def _change(
    before: SpeakerTurn, after: SpeakerTurn, activity: SpeakerActivity, reading: Reading
) -> tuple[float, float] | None:
    """Where ``before``'s speaker stops and ``after``'s starts, by the model; None where it cannot
    tell the two voices apart there."""
    change = (before.end + after.start) / 2
    window = activity.window_near(change)
    times = activity.frame_times(window)
    talk = activity.speakers(window)
    before_side = (times >= max(before.start, change - SIDE_S)) & (times <= change - MARGIN_S)
    after_side = (times >= change + MARGIN_S) & (times <= min(after.end, change + SIDE_S))
    if before_side.sum() < MIN_SIDE_FRAMES or after_side.sum() < MIN_SIDE_FRAMES:
        return None
    first = int(np.argmax(talk[before_side].mean(axis=0)))
    after_talk = talk[after_side].mean(axis=0)
    after_talk[first] = -1.0
    second = int(np.argmax(after_talk))
    talking, shift = reading.talking, reading.max_shift_s
    if talk[before_side, first].mean() < talking or talk[after_side, second].mean() < talking:
        return None
    near = (times >= max(before.start, change - shift)) & (times <= min(after.end, change + shift))
    last = _run_end(near & (talk[:, first] >= talking), int(np.argmin(np.abs(times - (change - MARGIN_S)))), +1)
    start = _run_end(near & (talk[:, second] >= talking), int(np.argmin(np.abs(times - (change + MARGIN_S)))), -1)
    if last is None or start is None:
        return None
    return float(times[last] + FRAME_STEP_S / 2), float(times[start] - FRAME_STEP_S / 2)


def _run_end(on: np.ndarray, frame: int, direction: int) -> int | None:
    """The last frame (going ``direction``) of the run of ``on`` that holds ``frame``; when
    ``frame`` is off, the nearest frame that is on, looking the other way. None when there is none."""
    n = len(on)
    if not on[frame]:
        while 0 <= frame < n and not on[frame]:
            frame -= direction
        return frame if 0 <= frame < n else None
    while 0 <= frame + direction < n and on[frame + direction]:
        frame += direction
    return frame


def merge_each_speaker(turns: list[SpeakerTurn]) -> list[SpeakerTurn]:
    """One speaker's turns that touch or overlap made one (a short turn of another voice may now lie
    inside them: a backchannel), rounded to the millisecond, sorted by start."""
    merged: list[SpeakerTurn] = []
    for speaker in sorted({t.speaker for t in turns}):
        spans = sorted((t.start, t.end) for t in turns if t.speaker == speaker)
        current = list(spans[0])
        for start, end in spans[1:]:
            if start <= current[1]:
                current[1] = max(current[1], end)
            else:
                merged.append(SpeakerTurn(start=round(current[0], 3), end=round(current[1], 3), speaker=speaker))
                current = [start, end]
        merged.append(SpeakerTurn(start=round(current[0], 3), end=round(current[1], 3), speaker=speaker))
    return sorted(merged, key=lambda t: (t.start, t.end, t.speaker))
