"""A closer look where clustering is unsure: short lines of the other voice found with short windows.

Clustering labels 1.5 s windows every 0.75 s, so a line under about a second (a quick answer, a
backchannel, a short turn on a phone call) is outvoted by the voice around it. Where two speakers
or more are found, each 1.5 s window whose embedding is less than ``UNSURE_MARGIN`` more like its
nearest speaker's centroid than the next one's (a window that may hold two voices) is looked at
again, with ``PAD_S`` either side: 0.75 s windows every 0.25 s are embedded there and scored
against the same centroids. The Viterbi pass of :mod:`.turns` then runs once more over the
timeline made of those short windows where they were embedded and the 1.5 s windows elsewhere,
each scored in proportion to the time it covers, so a change of speaker costs what it costs
in clustering (``SWITCH_COST_*``) whatever the window size. The number of speakers and the
centroids do not change; only where each speaks.

The segmentation model (:mod:`.changes`) cannot do this on these voices: it often hears two
channel-matched voices of one gender as one window-local speaker.

Chosen on the calibration half of bench/speakers (89 files): pooled DER 7.09% -> 6.68%, short turns
13.1 -> 12.0%, telephone 11.2 -> 9.5%, overlap 10-20% 15.4 -> 14.0% (changes redrawn after it in
both). Looking again at every window scores 6.55% for about four times the extra CPU: a margin of
0.3 embeds a quarter of the short windows (0.4: half, 6.66%; 0.2: 6.76%). Switch costs 0.05-0.2
score alike (6.55-6.59% with every window looked at), so clustering's own are kept. Windows of
1 s every 0.5 s, or every 0.25 s, did worse (calibration, every window looked at: 6.78% and 6.71%
against 6.55%).
Test half: pooled 7.89 -> 7.08%, short turns 15.1 -> 11.3%, telephone 16.5 -> 12.6%, overlap 17.4
-> 14.4% (bench/speakers/README.md, docs/decisions/speech-and-text.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from transcription.pipeline.speakers.encoding.embedding import Piece, Window

from ..types import SpeakerTurn
from .clustering import centroids
from .turns import fit_to_regions, renumber, switch_costs, viterbi

SIZE_FRAMES = 75  # 0.75 s windows ...
HOP_FRAMES = 25  # ... every 0.25 s
UNSURE_MARGIN = 0.3  # a 1.5 s window less than this more like its speaker than the next is looked at again
PAD_S = 0.5  # ... with this much either side
SCORE_UNIT_S = HOP_FRAMES / 100  # a window's score counts once per this much of the timeline it covers


@dataclass(frozen=True)
class _Span:
    """A stretch of the timeline with one label: a window's own span, or what a short window left of it."""

    own_start: float
    own_end: float
    piece: int


def turn_centroids(emb: np.ndarray, windows: Sequence[Window], turns: Sequence[SpeakerTurn]) -> np.ndarray:
    """(speakers, dim): each turn speaker's centroid of the encoder windows whose own span's middle
    its turns hold (row k - 1 for speaker k), weighted as clustering weighs them."""
    count = max(t.speaker for t in turns)
    ordered = sorted(turns, key=lambda t: t.start)  # one speaker at a time: they do not overlap
    starts = np.array([t.start for t in ordered])
    ends = np.array([t.end for t in ordered])
    middles = np.array([(w.own_start + w.own_end) / 2 for w in windows])
    at = np.maximum(np.searchsorted(starts, middles, side="right") - 1, 0)
    held = (middles >= starts[at]) & (middles < ends[at])
    labels = np.where(held, np.array([t.speaker for t in ordered])[at] - 1, -1)
    keep = labels >= 0
    weights = np.array([w.own_end - w.own_start for w in windows])
    return centroids(_finite(emb)[keep], labels[keep], weights[keep], count=count)


def unsure_spans(emb: np.ndarray, windows: Sequence[Window], centres: np.ndarray) -> list[tuple[float, float]]:
    """Where to look again: the 1.5 s windows (``emb``, ``windows``) nearly as like another of the
    speakers (``centres``: :func:`turn_centroids`) as their own nearest, widened by PAD_S.
    Empty for one speaker."""
    if len(centres) < 2 or not windows:
        return []
    scores = np.sort(_finite(emb) @ centres.T, axis=1)
    unsure = scores[:, -1] - scores[:, -2] < UNSURE_MARGIN
    return [(w.own_start - PAD_S, w.own_end + PAD_S) for w, u in zip(windows, unsure, strict=True) if u]


def closer_turns(
    turns: Sequence[SpeakerTurn],
    centres: np.ndarray,
    emb: np.ndarray,
    windows: Sequence[Window],
    pieces: Sequence[Piece],
    short_emb: np.ndarray,
    short_windows: Sequence[Window],
    extent: Sequence[tuple[float, float]],
) -> list[SpeakerTurn]:
    """``turns`` (clustered from ``emb`` of ``windows``; ``centres`` their speakers' centroids) drawn again with the short windows
    (``short_emb``, ``short_windows``: embedded where :func:`unsure_spans` says, on the same
    ``pieces``) standing in for the 1.5 s windows' labels where they lie; laid over ``extent``."""
    if len({t.speaker for t in turns}) < 2 or not short_windows:
        return list(turns)
    scored = [
        (_Span(w.own_start, w.own_end, w.piece), row)
        for w, row in zip(short_windows, _finite(short_emb) @ centres.T, strict=True)
    ]
    looked_at = np.array(sorted((w.own_start, w.own_end) for w in short_windows))
    for w, row in zip(windows, _finite(emb) @ centres.T, strict=True):
        scored += [(_Span(s, e, w.piece), row) for s, e in _uncovered(w.own_start, w.own_end, looked_at)]
    scored.sort(key=lambda pair: pair[0].own_start)
    spans = [span for span, _ in scored]
    weighted = np.array([row * (span.own_end - span.own_start) / SCORE_UNIT_S for span, row in scored])
    labels = viterbi(weighted, switch_costs(spans, pieces))
    drawn: list[SpeakerTurn] = []
    for span, label in zip(spans, labels, strict=True):
        if drawn and drawn[-1].speaker == label and span.own_start - drawn[-1].end < 1e-3:
            drawn[-1].end = max(drawn[-1].end, span.own_end)
        else:
            drawn.append(SpeakerTurn(start=span.own_start, end=span.own_end, speaker=int(label)))
    return fit_to_regions(renumber(drawn), extent)


def _finite(emb: np.ndarray) -> np.ndarray:
    """Float64 rows, a silent window's NaN embedding made zero."""
    return np.where(np.isfinite(emb), emb, 0.0).astype(np.float64)


def _uncovered(start: float, end: float, covered: np.ndarray) -> list[tuple[float, float]]:
    """The parts of [start, end) that no span of ``covered`` ((n, 2), sorted, not overlapping: the
    short windows' own spans) holds, longer than a millisecond."""
    first = int(np.searchsorted(covered[:, 1], start, side="right"))
    last = int(np.searchsorted(covered[:, 0], end, side="left"))
    parts = [(start, end)]
    for a, b in covered[first:last]:
        parts = [piece for s, e in parts for piece in ((s, min(e, a)), (max(s, b), e)) if piece[1] > piece[0]]
    return [(float(s), float(e)) for s, e in parts if e - s > 1e-3]
