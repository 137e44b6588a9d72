"""From labelled windows to speaker turns (Viterbi smoothing), and from turns to transcript
segments, word by word."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np
import numpy.typing as npt

from transcription.pipeline.speakers.encoding.embedding import Piece, Window

from ..types import Segment, SpeakerTurn, Word

SWITCH_COST_CONTINUOUS = 0.1  # in cosine-similarity units, per change inside speech
SWITCH_COST_PAUSE = 0.02  # per change across a pause


class InPiece(Protocol):
    """A stretch of the timeline that knows which continuous piece of speech it lies in."""

    @property
    def piece(self) -> int: ...


def switch_costs(spans: Sequence[InPiece], pieces: Sequence[Piece]) -> np.ndarray:
    """The Viterbi cost of a change of speaker before each of ``spans`` (anything with a ``piece``,
    in time order): cheap where a pause lies between it and the one before, dear inside speech."""
    cost = np.full(len(spans), SWITCH_COST_CONTINUOUS)
    for t in range(1, len(spans)):
        if any(p.after_pause for p in pieces[spans[t - 1].piece + 1 : spans[t].piece + 1]):
            cost[t] = SWITCH_COST_PAUSE
    return cost


def viterbi(scores: np.ndarray, switch_cost: np.ndarray) -> np.ndarray:
    """Best label path: maximise sum(scores[t, l_t]) - sum(switch_cost[t] * [l_t != l_{t-1}])."""
    n, k = scores.shape
    if k == 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    back = np.zeros((n, k), dtype=np.int64)
    acc = scores[0].copy()
    for t in range(1, n):
        best_prev = int(acc.argmax())
        stay = acc
        switch = acc[best_prev] - switch_cost[t]
        back[t] = np.where(stay >= switch, np.arange(k), best_prev)
        acc = np.maximum(stay, switch) + scores[t]
    path = np.zeros(n, dtype=np.int64)
    path[-1] = int(acc.argmax())
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path


def turns_from_labels(windows: Sequence[Window], labels: Iterable[int] | npt.NDArray[np.int64]) -> list[SpeakerTurn]:
    turns: list[SpeakerTurn] = []
    for win, lab in zip(windows, labels):
        if turns and turns[-1].speaker == lab and win.own_start - turns[-1].end < 1e-6:
            turns[-1].end = win.own_end
        else:
            turns.append(SpeakerTurn(start=win.own_start, end=win.own_end, speaker=int(lab)))
    return renumber(turns)


def renumber(turns: list[SpeakerTurn]) -> list[SpeakerTurn]:
    order: dict[int, int] = {}
    out = []
    for t in sorted(turns, key=lambda t: (t.start, t.end)):
        order.setdefault(t.speaker, len(order) + 1)
        out.append(SpeakerTurn(start=round(t.start, 3), end=round(t.end, 3), speaker=order[t.speaker]))
    return out


def fit_to_regions(turns: list[SpeakerTurn], regions: Sequence[tuple[float, float]]) -> list[SpeakerTurn]:
    """The turns laid over ``regions``, the speech a listener would mark: every region is covered
    and nothing outside one is. Turns are cut back to the regions; the parts of a region no turn
    covers (soft line ends, pauses, speech too short to embed) take the nearest turn's speaker,
    a gap between two turns being shared at its middle; a region no turn touches takes the speaker
    of the nearest turn in time."""
    if not turns:
        return []
    turns = sorted(turns, key=lambda t: (t.start, t.end))
    starts = np.array([t.start for t in turns])
    ends = np.array([t.end for t in turns])
    laid: list[SpeakerTurn] = []
    for s, e in regions:
        first = int(np.searchsorted(ends, s, side="right"))  # first turn ending after s
        inside = []
        for t in turns[first:]:
            if t.start >= e:
                break
            inside.append(t)
        if not inside:
            cands = [j for j in (first - 1, first) if 0 <= j < len(turns)]
            j = min(cands, key=lambda j: _distance(float(starts[j]), float(ends[j]), s, e))
            laid.append(SpeakerTurn(start=s, end=e, speaker=turns[j].speaker))
            continue
        pieces = [[max(s, t.start), min(e, t.end)] for t in inside]
        pieces[0][0], pieces[-1][1] = s, e
        for before, after in zip(pieces, pieces[1:]):
            if after[0] > before[1]:
                before[1] = after[0] = (before[1] + after[0]) / 2
        for (a, b), speaker in zip(pieces, (t.speaker for t in inside)):
            if laid and laid[-1].speaker == speaker and abs(laid[-1].end - a) < 1e-6:
                laid[-1] = SpeakerTurn(laid[-1].start, max(laid[-1].end, b), speaker)
            elif b > a:
                laid.append(SpeakerTurn(start=a, end=b, speaker=speaker))
    return renumber(laid)


def _distance(a0: float, a1: float, b0: float, b1: float) -> float:
    """Gap between intervals (0 when they touch or overlap)."""
    return max(0.0, max(a0, b0) - min(a1, b1))


def _speaker_at(start: float, end: float, starts: np.ndarray, ends: np.ndarray, spk: np.ndarray) -> int:
    """The speaker whose turns overlap [start, end] most; the nearest turn's when none does. Where
    two speakers' turns overlap (both talking at a change of speaker) and each covers the word, it
    goes to the one whose turn it lies deeper inside: before the middle of the overlap, the turn
    that is ending; after it, the turn that has begun."""
    end = max(end, start + 1e-3)  # a word of no length still has a place in time
    ov = np.minimum(ends, end) - np.maximum(starts, start)
    pos = ov > 0
    if pos.any():
        totals: dict[int, tuple[float, float]] = {}
        depths = np.minimum(start - starts, ends - end)
        for sp, o, depth in zip(spk[pos], ov[pos], depths[pos]):
            total, deepest = totals.get(int(sp), (0.0, -np.inf))
            totals[int(sp)] = (round(total + float(o), 6), max(deepest, float(depth)))
        return max(totals.items(), key=lambda kv: (kv[1][0], kv[1][1], -kv[0]))[0]
    gap = np.maximum(0.0, np.maximum(starts, start) - np.minimum(ends, end))
    return int(spk[int(np.argmin(gap))])


def _split_at_speaker_changes(seg: Segment, labels: list[int]) -> list[tuple[Segment, int]]:
    """The segment cut before every word whose speaker differs from the word before it."""
    runs: list[tuple[list[Word], int]] = []
    for word, label in zip(seg.words, labels):
        if runs and runs[-1][1] == label:
            runs[-1][0].append(word)
        else:
            runs.append(([word], label))
    if len(runs) == 1:
        return [(seg, runs[0][1])]
    out = []
    for k, (words, label) in enumerate(runs):
        start = seg.start if k == 0 else words[0].start
        end = seg.end if k == len(runs) - 1 else words[-1].end
        text = "".join(w.text for w in words).strip()
        out.append((replace(seg, start=start, end=end, text=text, words=words), label))
    return out


def assign_speakers(
    segments: Iterable[Segment], turns: Sequence[SpeakerTurn], *, heard_under: bool = False
) -> list[Segment]:
    """Give every word the speaker whose turns overlap it most (the nearest turn's speaker when
    none overlaps), and cut a segment where the speaker changes between two of its words, so a
    short answer is not glued to the other voice's sentence. A segment without word timestamps
    is given the speaker of its span as a whole. Speakers are renumbered 1.. in order of first
    appearance among the segments. Returns new Segment objects; the inputs are not changed.
    With no turns, every segment gets speaker None.

    ``heard_under``: where a speaker's turn overlaps another's by MIN_UNDER_S or more and the
    words there all went to the other voice (Whisper writes the louder one), that speaker is given
    an empty segment (no text, no words) over the overlap, placed after the segments that start
    before it: the segments then overlap in time as the voices do, every word still has one speaker.
    """
    segments = list(segments)
    turns = sorted(turns, key=lambda t: (t.start, t.end))
    if not turns:
        return [replace(s, speaker=None) for s in segments]
    starts = np.array([t.start for t in turns])
    ends = np.array([t.end for t in turns])
    spk = np.array([t.speaker for t in turns])
    pieces: list[tuple[Segment, int]] = []
    for seg in segments:
        if not seg.words:
            pieces.append((seg, _speaker_at(seg.start, seg.end, starts, ends, spk)))
            continue
        labels = [_speaker_at(w.start, w.end, starts, ends, spk) for w in seg.words]
        pieces.extend(_split_at_speaker_changes(seg, labels))
    if heard_under:
        pieces = _with_voices_under(pieces, turns)
    order: dict[int, int] = {}
    return [replace(seg, speaker=order.setdefault(label, len(order) + 1)) for seg, label in pieces]


MIN_UNDER_S = 0.3  # shorter overlaps (the two voices at a change of speaker) get no segment of their own


def _with_voices_under(pieces: list[tuple[Segment, int]], turns: Sequence[SpeakerTurn]) -> list[tuple[Segment, int]]:
    """``pieces`` (segments and their turns' speakers, in order) with an empty segment for each
    stretch where one speaker's turn overlaps another's, the other speaker's words lie there and
    none of its own: see :func:`assign_speakers`. ``turns`` sorted by start."""
    spans: dict[int, list[tuple[float, float]]] = {}
    for seg, label in pieces:
        spans.setdefault(label, []).append((seg.start, seg.end))

    def worded(label: int, start: float, end: float) -> bool:
        return any(s < end and e > start for s, e in spans.get(label, []))

    under: dict[int, list[list[float]]] = {}
    for i, a in enumerate(turns):
        for b in turns[i + 1 :]:
            if b.start >= a.end:
                break
            start, end = max(a.start, b.start), min(a.end, b.end)
            if a.speaker == b.speaker or end - start < MIN_UNDER_S:
                continue
            for quiet, loud in ((a.speaker, b.speaker), (b.speaker, a.speaker)):
                if worded(loud, start, end) and not worded(quiet, start, end):
                    under.setdefault(quiet, []).append([start, end])
    added: list[tuple[Segment, int]] = []
    for label, stretches in under.items():
        stretches.sort()
        joined = [stretches[0]]
        for start, end in stretches[1:]:
            if start <= joined[-1][1]:
                joined[-1][1] = max(joined[-1][1], end)
            else:
                joined.append([start, end])
        added.extend((Segment(start=round(s, 3), end=round(e, 3), text=""), label) for s, e in joined)
    out = list(pieces)
    for seg, label in sorted(added, key=lambda p: (p[0].start, p[1])):
        at = len(out)
        while at > 0 and out[at - 1][0].start > seg.start:
            at -= 1
        out.insert(at, (seg, label))
    return out
