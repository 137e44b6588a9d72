"""Speech detection: Silero VAD (the ONNX model inside faster-whisper) over a WAV file, streamed.

The probabilities are computed once per file (:func:`speech_probabilities`); recognition and
diarization each turn them into regions with their own thresholds (:func:`regions_from_probs`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from transcription.pipeline.media.wav import SAMPLE_RATE, open_wav, read_blocks, read_span, wav_duration

# The WAV helpers are the pipeline's one WAV module's; the encoder and embedding import them from here.
__all__ = [
    "SAMPLE_RATE",
    "open_wav",
    "read_span",
    "wav_duration",
    "find_speech",
    "SpeechActivity",
    "regions_from_probs",
]


VAD_WINDOW = 512  # silero: one probability per 32 ms
VAD_CONTEXT = 64  # samples of the previous window the model sees


def speech_probabilities(path: str | os.PathLike[str], block_seconds: float = 30.0) -> npt.NDArray[np.float32]:
    """Silero speech probability for every 512 samples (32 ms), streamed in blocks.

    Same numbers as faster-whisper's ``SileroVADModel(audio)`` on the whole file: the
    LSTM state and the 64-sample context are carried from block to block.
    """
    from faster_whisper.vad import get_vad_model

    model = get_vad_model()
    session = getattr(model, "session", None)
    if session is not None and [i.name for i in session.get_inputs()] != ["input", "h", "c"]:
        session = None  # pragma: no cover - another faster-whisper VAD interface
    block = max(1, int(block_seconds * SAMPLE_RATE) // VAD_WINDOW) * VAD_WINDOW
    h = np.zeros((1, 1, 128), dtype=np.float32)
    c = np.zeros((1, 1, 128), dtype=np.float32)
    context = np.zeros(VAD_CONTEXT, dtype=np.float32)
    probs: list[npt.NDArray[np.float32]] = []
    for audio in read_blocks(path, block):
        rem = len(audio) % VAD_WINDOW
        if rem:
            audio = np.pad(audio, (0, VAD_WINDOW - rem))
        if session is None:  # pragma: no cover - another faster-whisper VAD interface
            probs.append(np.asarray(model(audio), dtype=np.float32).reshape(-1))
            continue
        frames = audio.reshape(-1, VAD_WINDOW)
        before = np.concatenate([context[None], frames[:-1, -VAD_CONTEXT:]])
        context = frames[-1, -VAD_CONTEXT:].copy()
        out, h, c = session.run(None, {"input": np.concatenate([before, frames], axis=1), "h": h, "c": c})
        probs.append(np.asarray(out, dtype=np.float32).reshape(-1))
    return np.concatenate(probs) if probs else np.zeros(0, dtype=np.float32)


# How recognition reads the probabilities: faster-whisper's batched defaults (threshold 0.5, pauses
# from 160 ms, 400 ms of padding, nothing dropped), so Whisper hears what it heard with its own VAD.
class RegionThresholds(TypedDict):
    """How probabilities are read into regions (regions_from_probs)."""

    threshold: float
    neg_threshold: float | None
    min_silence_s: float
    min_speech_s: float
    pad_s: float


RECOGNITION_REGIONS = RegionThresholds(
    threshold=0.5, neg_threshold=None, min_silence_s=0.16, min_speech_s=0.0, pad_s=0.4
)
# Diarization reads them twice. The voice encoder listens only to confident speech (threshold
# 0.35, 150 ms of padding, blips under 250 ms dropped), so soft edges and music under a voice do not
# blur the embeddings: read looser, one voice over loud music split in two.
DIARIZATION_REGIONS = RegionThresholds(
    threshold=0.35, neg_threshold=None, min_silence_s=0.2, min_speech_s=0.25, pad_s=0.15
)
# The turns are then laid over the speech as a listener marks it: a line starts at 0.2 and goes on
# until Silero's probability is under 0.175, with no padding. Silero's probability falls long before
# a voice does (the encoder's regions miss too much); 0.02, fitted on the old set's game
# recordings, ran on past the lines of the channel-matched set's prompt and Festival voices. With
# the set's reference marking speech only (bench/speakers/README.md), an offset of 0.1 ran on past
# line ends and over short pauses; 0.175 is the middle of the plateau 0.15-0.2 on its calibration
# half (speaker-blind miss + false alarm 4.8% against 5.2% at 0.1; docs/decisions/speech-and-text.md).
TURN_REGIONS = RegionThresholds(threshold=0.2, neg_threshold=0.175, min_silence_s=0.2, min_speech_s=0.25, pad_s=0.0)


@dataclass(frozen=True)
class SpeechActivity:
    """Silero's speech probabilities for a whole file, found once and read by every stage."""

    probabilities: np.ndarray  # one per VAD_WINDOW samples (32 ms)
    duration: float  # seconds

    def regions(self, **thresholds: Unpack[RegionThresholds]) -> list[tuple[float, float]]:
        """Speech regions (start, end) in seconds, read with ``thresholds`` (see regions_from_probs)."""
        return regions_from_probs(self.probabilities, duration=self.duration, **thresholds)

    def for_recognition(self) -> list[tuple[float, float]]:
        return self.regions(**RECOGNITION_REGIONS)

    def for_diarization(self) -> list[tuple[float, float]]:
        """Where the voice encoder listens: confident speech."""
        return self.regions(**DIARIZATION_REGIONS)

    def for_turns(self) -> list[tuple[float, float]]:
        """Where speaker turns are drawn: speech with its soft ends."""
        return self.regions(**TURN_REGIONS)


def find_speech(wav_path: str | os.PathLike[str]) -> SpeechActivity:
    """One Silero pass over a 16 kHz mono 16-bit WAV, streamed."""
    return SpeechActivity(speech_probabilities(wav_path), wav_duration(wav_path))


def regions_from_probs(
    probs: np.ndarray,
    *,
    duration: float,
    threshold: float,
    neg_threshold: float | None,
    min_silence_s: float,
    min_speech_s: float,
    pad_s: float,
) -> list[tuple[float, float]]:
    """Regions from probabilities: speech starts at ``threshold`` and goes on while above
    ``neg_threshold`` (default threshold - 0.15); silences shorter than ``min_silence_s`` are
    closed, speech shorter than ``min_speech_s`` dropped, and each region padded by ``pad_s``
    (neighbours that would overlap meet half way)."""
    if neg_threshold is None:
        neg_threshold = max(threshold - 0.15, 0.01)
    step = VAD_WINDOW / SAMPLE_RATE
    # hysteresis: speech starts at p >= threshold, goes on while p >= neg_threshold
    regions: list[list[float]] = []
    active = False
    start = 0
    for i, p in enumerate(probs):
        if not active and p >= threshold:
            active, start = True, i
        elif active and p < neg_threshold:
            active = False
            regions.append([start * step, i * step])
    if active:
        regions.append([start * step, len(probs) * step])
    # close short silences, drop short speech, pad
    merged: list[list[float]] = []
    for r in regions:
        if merged and r[0] - merged[-1][1] < min_silence_s:
            merged[-1][1] = r[1]
        else:
            merged.append(r)
    out: list[tuple[float, float]] = []
    for s, e in merged:
        if e - s < min_speech_s:
            continue
        s, e = max(0.0, s - pad_s), min(duration, e + pad_s)
        if out and s < out[-1][1]:
            mid = (s + out[-1][1]) / 2
            out[-1] = (out[-1][0], mid)
            s = mid
        if e > s:
            out.append((s, e))
    return out
