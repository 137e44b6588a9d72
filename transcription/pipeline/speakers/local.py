"""Local speakers (after pyannote 3.1): the segmentation model's own speakers of each 10 s window,
embedded and given global speakers, add the second voice where two talk at once.

:func:`speakers.diarize` reads them per recording (issue 45): where clustering finds three voices or
more and the model hears two at once in OVERLAP_SHARE of the speech or more (:func:`hears_overlap`:
a meeting, people talking over each other, not only at a change of speaker). Chosen on the bench's
calibration half (bench/speakers/choose.py): every two-voice recording and call left as it was;
bench/speakers/README.md has the figures. Always on, it lost on the two-voice set's test
half (pooled 8.07 -> 8.30%, telephone 16.5 -> 18.5%: overlap heard where there is none).

The segmentation model (``speakers.segmentation``) says, in 17 ms frames of 10 s windows (half
overlapping), which of up to three window-local speakers talk, two at once included; its most
likely class is read, as pyannote does. In the windows that see some overlap, each local speaker
is embedded by the speaker encoder from its frames where it talks alone (pyannote's
``exclude_overlap``), or from all its frames where it talks alone under half a second. It is given
the global speaker (a centroid of the clustered 1.5 s windows) it is most like, two local speakers
of one window never one global speaker, and kept where it is sure: ``margin`` more like that
speaker than any other, or, beside a local speaker that is sure, like the best of the rest and not
much less like the sure one's (so a voice heard only over another is still placed).
Frame by frame, the number of voices is the windows' mean count of talking local speakers,
rounded (pyannote's ``speaker_count``). Where the turns (clustering, changes redrawn) have fewer
voices than that, the global speakers whose local speakers talk there in every window that sees
the frame are added: overlapped speech and backchannels shorter than the encoder's windows get
their speaker. Nothing is taken away: a turn keeps its speaker and its span.

Tried on the calibration half and left out too: the frames drawn from the local speakers alone,
pyannote's reconstruction (the model often gives one window-local speaker to both voices of these
channel-matched pairs: pooled DER 7.1% -> 9.5-15%).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from transcription.pipeline.speakers.encoding.blas import diarization_threads
from transcription.pipeline.speakers.encoding.embedding import Window
from transcription.pipeline.speakers.encoding.encoders import SpeakerEncoder

from ..types import SpeakerTurn
from .changes import merge_each_speaker, redraw_changes
from .closer import turn_centroids
from .clustering import MANY_VOICES
from .segmentation import (
    FRAME_SAMPLES,
    FRAME_STEP_SAMPLES,
    POWERSET_SPEAKERS,
    WINDOW_SAMPLES,
    SpeakerActivity,
)
from .speech import SAMPLE_RATE, open_wav, read_span
from .turns import renumber

FEATURE_HOP_SAMPLES = 160  # the encoders' 10 ms frames
FEATURE_CENTRE_SAMPLES = 200  # ... each 25 ms long
MIN_EMBEDDED_S = 0.3  # local speakers with less speech are never embedded
WHOLE_BELOW_S = 1.0  # local speakers talking alone less than this are embedded from all their speech too
FRAME_STEP_S = FRAME_STEP_SAMPLES / SAMPLE_RATE
FIRST_FRAME_S = FRAME_SAMPLES / 2 / SAMPLE_RATE


@dataclass(frozen=True)
class LocalReading:
    """How local speakers are read (bench/speakers/compare_models.py sweeps these on the calibration
    half)."""

    margin: float = 0.3  # a local speaker is sure to be a global speaker this much more like it than any other
    # one not sure beside one sure in its window: the best of the other global speakers, unless it is
    # more than this less like the sure one's (None: never)
    slack: float | None = 0.1
    # a voice is added to a frame only if every window that sees it hears it ("all"), every window
    # that hears two voices there ("overlapping"), or any window ("any")
    agree: str = "all"
    overlapped: bool = True  # one with under min_clean_s alone is embedded from all its speech
    min_clean_s: float = 0.5


@dataclass(frozen=True)
class LocalSpeakers:
    """Every window's local speakers: which talk in each frame and their embeddings."""

    talking: npt.NDArray[np.bool_]  # (windows, frames, 3): the model's most likely class, per speaker
    embeddings: npt.NDArray[np.float32]  # (windows, 3, dim), L2-normalised; zero rows where not embedded
    # (windows, 3, dim): of all its frames, overlap included, where it talks alone under WHOLE_BELOW_S
    whole: npt.NDArray[np.float32]
    clean_s: npt.NDArray[np.float32]  # (windows, 3): seconds each talks alone
    first_frames: npt.NDArray[np.int64]  # each window's first frame on the recording's frame grid
    frames: int  # frames of the recording


# a recording's second voices are read from the local speakers where clustering finds MANY_VOICES or
# more and the segmentation model hears two voices at once in this share of the speech or more (a
# meeting): bench/speakers/choose.py on the calibration half, the rule that leaves every two-voice
# recording and call as it was (overlap alone, at 8%, cost the test half's two-voice set 7.08 -> 7.34%)
OVERLAP_SHARE = 0.05


def overlap_share(activity: SpeakerActivity) -> float:
    """Of the frames the segmentation model hears speech in, the share it hears two voices in (the
    windows' mean, which does not depend on their own numbering of speakers)."""
    classes = activity.frame_classes()
    speech = classes.speech >= 0.5
    return float(((classes.overlap >= 0.5) & speech).sum() / max(1, int(speech.sum())))


def hears_overlap(activity: SpeakerActivity, speakers: int) -> bool:
    """Whether a recording's second voices are worth reading: a meeting, not a conversation or a
    call: ``speakers`` (clustering's count) at least MANY_VOICES, and the model hears two voices at
    once in OVERLAP_SHARE of its speech or more, not only at a change of speaker."""
    return speakers >= MANY_VOICES and overlap_share(activity) >= OVERLAP_SHARE


def local_speakers(
    wav_path: str | os.PathLike[str],
    activity: SpeakerActivity,
    encoder: SpeakerEncoder,
    threads: int | None = None,
    *,
    everywhere: bool = False,
) -> LocalSpeakers:
    """The model's local speakers of every window of ``activity`` (read from ``wav_path``),
    each embedded from the encoder's frames where it alone talks; only in the windows near some
    overlap unless ``everywhere`` (what counting the voices needs)."""
    classes = activity.probabilities.argmax(axis=2)  # (windows, frames): pyannote's hard powerset
    talking = POWERSET_SPEAKERS[classes] > 0  # (windows, frames, 3)
    alone = talking & (talking.sum(axis=2, keepdims=True) == 1)
    clean_s = (alone.sum(axis=1) * FRAME_STEP_S).astype(np.float32)
    talk_s = talking.sum(axis=1) * FRAME_STEP_S
    embeddings = np.zeros((len(classes), 3, encoder.dim), dtype=np.float32)
    whole = np.zeros_like(embeddings)
    first = np.rint(activity.starts / FRAME_STEP_SAMPLES).astype(np.int64)
    near_overlap = np.ones(len(first), dtype=bool) if everywhere else _windows_near_overlap(talking, first)
    jobs: list[tuple[np.ndarray, int, int, np.ndarray]] = []
    with open_wav(wav_path) as w:
        for window, start in enumerate(activity.starts):
            wanted = [j for j in range(3) if talk_s[window, j] >= MIN_EMBEDDED_S and near_overlap[window]]
            if not wanted:
                continue
            feats = encoder.features(read_span(w, int(start), int(start) + WINDOW_SAMPLES))
            # the segmentation frame each 10 ms feature frame falls in
            centres = np.arange(len(feats)) * FEATURE_HOP_SAMPLES + FEATURE_CENTRE_SAMPLES
            frame = np.clip(np.rint((centres - FRAME_SAMPLES / 2) / FRAME_STEP_SAMPLES), 0, alone.shape[1] - 1)
            frame = frame.astype(np.int64)
            for j in wanted:
                chosen = feats[alone[window, frame, j]]
                if len(chosen) >= MIN_EMBEDDED_S * 100:
                    jobs.append((embeddings, window, j, chosen))
                if clean_s[window, j] < WHOLE_BELOW_S:
                    jobs.append((whole, window, j, feats[talking[window, frame, j]]))
    with ThreadPoolExecutor(max_workers=threads or diarization_threads()) as pool:
        embedded = pool.map(lambda job: encoder.embed_frames(job[3][None])[0], jobs)
        for (into, window, j, _), e in zip(jobs, embedded, strict=True):
            into[window, j] = np.where(np.isfinite(e), e, 0.0)
    total = activity.samples
    frames = 1 + max(0, total - FRAME_SAMPLES) // FRAME_STEP_SAMPLES if total else 0
    return LocalSpeakers(
        talking=talking, embeddings=embeddings, whole=whole, clean_s=clean_s, first_frames=first, frames=frames
    )


def _windows_near_overlap(talking: npt.NDArray[np.bool_], first: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """The windows that see a frame some window hears two speakers in: only there can local
    speakers add a voice, so only their local speakers are embedded."""
    size = talking.shape[1]
    overlapped = np.zeros(int(first.max(initial=0)) + size, dtype=bool)
    for window, at in enumerate(first):
        overlapped[at : at + size] |= talking[window].sum(axis=1) >= 2
    return np.array([overlapped[at : at + size].any() for at in first], dtype=bool)


def refine_turns(
    turns: list[SpeakerTurn],
    emb: np.ndarray,
    windows: Sequence[Window],
    activity: SpeakerActivity,
    local: LocalSpeakers | None,
    extent: Sequence[tuple[float, float]],
    reading: LocalReading | None,
) -> list[SpeakerTurn]:
    """The clustered ``turns`` (two speakers or more) as the service redraws them
    (``redraw_changes``), then every frame given the speakers the model's local speakers say talk
    there (``reading`` or ``local`` None: not, which is what the service does)."""
    redrawn = redraw_changes(turns, activity)
    if reading is None or local is None:
        return redrawn
    return local_turns(redrawn, turn_centroids(emb, windows, turns), local, extent, reading)


def assign(similarity: np.ndarray, floor: float) -> list[int]:
    """The global speaker (or -1: none) of each local speaker (rows of ``similarity``: local x global)
    that maximises the summed similarity, no two local speakers given one global speaker and none
    given one it is less like than ``floor``."""
    locals_, globals_ = similarity.shape
    best: tuple[float, tuple[int, ...]] = (-np.inf, (-1,) * locals_)
    for choice in itertools.product(range(-1, globals_), repeat=locals_):
        given = [k for k in choice if k >= 0]
        if len(given) != len(set(given)):
            continue
        if any(k >= 0 and similarity[j, k] < floor for j, k in enumerate(choice)):
            continue
        total = sum(float(similarity[j, k]) if k >= 0 else floor for j, k in enumerate(choice))
        if total > best[0]:
            best = (total, choice)
    return list(best[1])


def local_turns(
    turns: Sequence[SpeakerTurn],
    centres: np.ndarray,
    local: LocalSpeakers,
    extent: Sequence[tuple[float, float]],
    reading: LocalReading = LocalReading(),
) -> list[SpeakerTurn]:
    """``turns`` (speakers 1..k, ``centres`` their centroids) redrawn frame by frame from the local
    speakers: see the module's docstring. Sorted, speakers renumbered in order of first appearance."""
    k = len(centres)
    n = local.frames
    active, active_in_overlap, count, cover, cover_overlap = _global_activity(centres, local, reading)
    times = FIRST_FRAME_S + np.arange(n) * FRAME_STEP_S
    speech = _inside(times, extent)
    # pyannote's count: the windows' mean number of talking local speakers, rounded (1.5 up)
    wanted = np.where(speech, np.floor(count / np.maximum(cover, 1) + 0.5), 0).astype(np.int64)
    base = np.zeros((n, k), dtype=bool)
    for t in turns:
        if t.speaker <= k:
            base[np.searchsorted(times, t.start) : np.searchsorted(times, t.end), t.speaker - 1] = True
    if reading.agree == "all":
        heard = (active >= cover[:, None]) & (active > 0)
    elif reading.agree == "overlapping":
        heard = (active_in_overlap >= cover_overlap[:, None]) & (active_in_overlap > 0)
    else:
        heard = active > 0
    order = np.argsort(-np.where(heard, active, -1.0), axis=1, kind="stable")
    rows = np.arange(n)
    on = base.copy()
    for rank in range(k):  # the voices heard most, while the frame has fewer than the model counts
        pick = order[:, rank]
        add = heard[rows, pick] & ~on[rows, pick] & (on.sum(axis=1) < wanted)
        on[rows[add], pick[add]] = True
    # what is added is snapped onto the speech's and the turns' edges near it, so it joins them
    edges = [*extent, *((t.start, t.end) for t in turns)]
    added = _runs_to_turns(on & ~base, times, edges)
    return renumber(merge_each_speaker([*turns, *added]))


def _global_activity(
    centres: np.ndarray, local: LocalSpeakers, reading: LocalReading
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per frame: how many windows say each global speaker talks (its local speaker given to it),
    all and those hearing two voices there; how many local speakers talk, summed over the windows;
    how many windows see the frame, and how many of them hear two voices there."""
    n, k = local.frames, len(centres)
    active, active_in_overlap = np.zeros((n, k)), np.zeros((n, k))
    count, cover, cover_overlap = np.zeros(n), np.zeros(n), np.zeros(n)
    for window, first in enumerate(local.first_frames):
        size = min(local.talking.shape[1], n - int(first))
        if size <= 0:
            continue
        span = slice(int(first), int(first) + size)
        talking = local.talking[window, :size]
        count[span] += talking.sum(axis=1)
        cover[span] += 1
        two = talking.sum(axis=1) >= 2
        cover_overlap[span] += two
        clean = (local.clean_s[window] >= reading.min_clean_s) & local.embeddings[window].any(axis=1)
        mixed = ~clean & local.whole[window].any(axis=1) & reading.overlapped
        usable = [j for j in range(3) if clean[j] or mixed[j]]
        if not usable:
            continue
        embedded = np.where(clean[:, None], local.embeddings[window], local.whole[window])
        similarity = embedded[usable].astype(np.float64) @ centres.T
        given = assign(similarity, -1.0)
        sure = [
            k >= 0 and row[k] - np.delete(row, k).max(initial=-1.0) >= reading.margin
            for row, k in zip(similarity, given)
        ]
        taken = {k for k, ok in zip(given, sure) if ok}
        for j, row, speaker, ok in zip(usable, similarity, given, sure, strict=True):
            if not ok and speaker >= 0 and taken and reading.slack is not None:
                # not sure alone, but the window's other voice is: the best of the rest, unless it
                # is clearly that other voice (one voice the model split in two)
                rest = [x for x in range(len(row)) if x not in taken and x != speaker]
                ok = row[speaker] - row[rest].max(initial=-1.0) >= reading.margin
                ok = ok and row[speaker] >= row[sorted(taken)].max() - reading.slack
            if ok:
                active[span, speaker] += talking[:, j]
                active_in_overlap[span, speaker] += talking[:, j] & two
    return active, active_in_overlap, count, cover, cover_overlap


def _inside(times: np.ndarray, spans: Sequence[tuple[float, float]]) -> npt.NDArray[np.bool_]:
    inside = np.zeros(len(times), dtype=bool)
    for s, e in spans:
        inside[np.searchsorted(times, s) : np.searchsorted(times, e)] = True
    return inside


def _runs_to_turns(
    on: npt.NDArray[np.bool_], times: np.ndarray, spans: Sequence[tuple[float, float]]
) -> list[SpeakerTurn]:
    """Each speaker's runs of frames as turns, speaker j + 1 for column j (a frame stands for the
    step around its centre; an edge within a frame of one of ``spans``' edges is moved onto it)."""
    half = FRAME_STEP_S / 2
    bounds = np.array([b for span in spans for b in span])
    raw: list[tuple[float, float, int]] = []
    for speaker in range(on.shape[1]):
        padded = np.concatenate([[False], on[:, speaker], [False]])
        edges = np.flatnonzero(padded[1:] != padded[:-1])
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            start, end = _snap(times[a] - half, bounds), _snap(times[b - 1] + half, bounds)
            if end > start:
                raw.append((start, end, speaker))
    return [SpeakerTurn(start=s, end=e, speaker=speaker + 1) for s, e, speaker in raw]


def _snap(t: float, bounds: np.ndarray) -> float:
    """``t`` moved onto the nearest edge of the speech when within one frame of it."""
    if not len(bounds):
        return float(t)
    nearest = bounds[int(np.argmin(np.abs(bounds - t)))]
    return float(nearest) if abs(nearest - t) <= FRAME_STEP_S else float(t)
