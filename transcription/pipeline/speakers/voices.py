"""Enrolled voices: one embedding for a stretch of speech, a voice sample's checks, and which
speakers of a recording are which enrolled voices.

The speech stage embeds each speaker of a job (their longest turns, at most
MAX_SECONDS_PER_SPEAKER) and compares them with the account's enrolled voices by cosine
similarity: a speaker takes a voice's name only when the two are at least MATCH_SIMILARITY alike,
each voice names at most one speaker and each speaker takes at most one name (the most alike pairs
first). The threshold and its error rates come from bench/speakers/names.py (docs/decisions.md).

Every embedding is a voice print (:func:`..speakers.voice_print`, the one function that embeds a
stretch of speech); VOICE_PRINT_MODEL says which encoder made it, since prints of two encoders
cannot be compared. Imported as a module of its own (``speakers.voices``), after the package.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ..types import SpeakerTurn
from . import VOICE_PRINT_MODEL, voice_print
from .options import NO_OPTIONS, SpeakerOptions

__all__ = ["VOICE_PRINT_MODEL", "VoiceSampleError", "check_sample_length", "recognise_voices", "voice_sample"]
# The least cosine similarity at which a speaker takes an enrolled voice's name, per encoder (the
# scale of the similarities is the encoder's own): the middle of the range where both targets hold
# on bench/speakers/names.py's calibration voices, reported on its test voices (docs/decisions.md).
# An encoder without a figure here names nobody until it is measured.
MATCH_SIMILARITIES = {
    "campplus-cn-en-common": 0.58,  # right 100%, wrong 0% on calibration from 0.51 to 0.67
}
MATCH_SIMILARITY = MATCH_SIMILARITIES.get(VOICE_PRINT_MODEL, float("inf"))
MAX_SECONDS_PER_SPEAKER = 60.0

# What a voice sample must be: the length of the file, and the speech heard in it.
SAMPLE_MIN_SECONDS = 10
SAMPLE_MAX_SECONDS = 120
SAMPLE_MIN_SPEECH_SECONDS = 5.0


VoiceKey = TypeVar("VoiceKey", bound=Hashable)  # what the caller names its enrolled voices by


class VoiceSampleError(Exception):
    """A voice sample that cannot be enrolled; the message is for the client."""


def embed_speech(
    wav_path: str | os.PathLike[str],
    regions: Sequence[tuple[float, float]],
    *,
    options: SpeakerOptions = NO_OPTIONS,
) -> np.ndarray | None:
    """The voice print of the speech in ``regions``; None when they are too short to embed."""
    try:
        return voice_print(wav_path, regions, options=options)
    except ValueError:
        return None


def speaker_regions(
    turns: Sequence[SpeakerTurn], max_seconds: float = MAX_SECONDS_PER_SPEAKER
) -> dict[int, list[tuple[float, float]]]:
    """Each speaker's longest stretches of speech alone, at most ``max_seconds`` of them, in time
    order: where another speaker's turn overlaps (both talking at a change) is left out, since the
    other voice would blur the print."""
    by_speaker: dict[int, list[tuple[float, float]]] = {}
    for start, end, speaker in sorted(_alone(turns), key=lambda s: s[1] - s[0], reverse=True):
        kept = by_speaker.setdefault(speaker, [])
        room = max_seconds - sum(e - s for s, e in kept)
        if room > 0.5:
            kept.append((start, min(end, start + room)))
    return {speaker: sorted(regions) for speaker, regions in by_speaker.items()}


def _alone(turns: Sequence[SpeakerTurn]) -> list[tuple[float, float, int]]:
    """The turns less the stretches where two speakers' turns overlap."""
    events = sorted([(t.start, 1, t.speaker) for t in turns] + [(t.end, -1, t.speaker) for t in turns])
    talking: dict[int, int] = {}
    both: list[tuple[float, float]] = []  # sorted, apart
    since = 0.0
    for at, step, speaker in events:
        before = len(talking)
        talking[speaker] = talking.get(speaker, 0) + step
        if not talking[speaker]:
            del talking[speaker]
        if before < 2 <= len(talking):
            since = at
        elif len(talking) < 2 <= before and at > since:
            both.append((since, at))
    ends = [e for _, e in both]
    out = []
    for turn in turns:
        start = turn.start
        for s, e in both[bisect.bisect_right(ends, turn.start) :]:
            if s >= turn.end:
                break
            if s > start:
                out.append((start, s, turn.speaker))
            start = max(start, e)
        if turn.end > start:
            out.append((start, turn.end, turn.speaker))
    return out


def match_voices(
    speakers: Mapping[int, np.ndarray],
    voices: Sequence[tuple[VoiceKey, np.ndarray]],
    threshold: float = MATCH_SIMILARITY,
) -> dict[int, VoiceKey]:
    """{speaker: voice key} for the speakers that sound like an enrolled voice: pairs at least
    ``threshold`` alike (cosine of normalised embeddings), the most alike first, one voice to one
    speaker."""
    pairs = sorted(
        (
            (float(np.dot(embedding, voice)), speaker, key)
            for speaker, embedding in speakers.items()
            for key, voice in voices
            if voice.shape == embedding.shape
        ),
        key=lambda pair: pair[0],
        reverse=True,
    )
    named: dict[int, VoiceKey] = {}
    taken: set[VoiceKey] = set()
    for similarity, speaker, key in pairs:
        if similarity < threshold:
            break
        if speaker not in named and key not in taken:
            named[speaker] = key
            taken.add(key)
    return named


def recognise_voices(
    wav_path: str | os.PathLike[str],
    turns: Sequence[SpeakerTurn],
    voices: Sequence[tuple[VoiceKey, np.ndarray]],
    *,
    options: SpeakerOptions = NO_OPTIONS,
    threshold: float = MATCH_SIMILARITY,
) -> dict[int, VoiceKey]:
    """{speaker of ``turns``: voice key} for the speakers that are enrolled ``voices``."""
    if not voices or not turns:
        return {}
    embeddings = {}
    for speaker, regions in speaker_regions(turns).items():
        embedding = embed_speech(wav_path, regions, options=options)
        if embedding is not None:
            embeddings[speaker] = embedding
    return match_voices(embeddings, voices, threshold)


@dataclass
class VoiceSample:
    embedding: np.ndarray
    speech_seconds: float


def check_sample_length(seconds: float) -> None:
    """Raise VoiceSampleError for a sample outside SAMPLE_MIN_SECONDS..SAMPLE_MAX_SECONDS."""
    if not SAMPLE_MIN_SECONDS <= seconds <= SAMPLE_MAX_SECONDS:
        raise VoiceSampleError(
            f"A voice sample must be {SAMPLE_MIN_SECONDS} to {SAMPLE_MAX_SECONDS} seconds long; "
            f"this one is {seconds:.0f} s."
        )


def voice_sample(
    wav_path: str | os.PathLike[str],
    regions: Sequence[tuple[float, float]],
    extent: Sequence[tuple[float, float]],
    *,
    diarize: Callable[
        [str | os.PathLike[str], Sequence[tuple[float, float]], Sequence[tuple[float, float]]], Sequence[SpeakerTurn]
    ],
    options: SpeakerOptions = NO_OPTIONS,
) -> VoiceSample:
    """The embedding of a voice sample's one voice. ``diarize(wav, regions, extent)`` gives the
    sample's speaker turns (the service's own diarization); a sample where it finds more than one
    voice, or too little speech, raises VoiceSampleError."""
    speech = sum(e - s for s, e in regions)
    if speech < SAMPLE_MIN_SPEECH_SECONDS:
        raise VoiceSampleError(
            f"Only {speech:.1f} s of speech were heard in the sample; a voice sample needs at least "
            f"{SAMPLE_MIN_SPEECH_SECONDS:.0f} s of one person speaking."
        )
    voices = {turn.speaker for turn in diarize(wav_path, regions, extent)}
    if len(voices) > 1:
        raise VoiceSampleError(
            f"The sample holds {len(voices)} voices; a voice sample must hold one person's voice alone. "
            "Send a recording where only that person speaks."
        )
    embedding = embed_speech(wav_path, regions, options=options)
    if embedding is None:
        raise VoiceSampleError("The sample's speech comes in pieces too short to recognise a voice by.")
    return VoiceSample(embedding, speech)
