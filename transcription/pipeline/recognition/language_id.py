"""Spoken-language detection that looks again when Whisper is unsure.

Whisper's own detection reads the first 30 s of speech once. On a short clip, or when the top
language's probability is low (Polish read as Latin at 0.22), that one look decides the whole
transcript. Here an unsure first look is followed by several windows: consecutive 30 s windows of
the speech (faster-whisper's ``language_detection_segments``) on a long file, the speech regions one
by one on a short file; their probability distributions are averaged, weighted by seconds of speech,
and the most probable language wins.

Nothing here knows about Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from transcription.pipeline.media.wav import SAMPLE_RATE

if TYPE_CHECKING:  # pragma: no cover
    from faster_whisper import WhisperModel

__all__ = ["CONFIDENT_PROBABILITY", "SHORT_SPEECH_S", "Detection", "detect_language", "speech_regions"]

# Below this top-language probability the first look is not trusted (faster-whisper's default
# ``language_detection_threshold``).
CONFIDENT_PROBABILITY = 0.5
# With less speech than this the first look is not trusted either, whatever its probability.
SHORT_SPEECH_S = 15.0
WINDOW_S = 30.0
MAX_WINDOWS = 6
MIN_REGION_S = 1.0
SENTENCE_PAUSE_S = 0.3


@dataclass(frozen=True)
class Detection:
    language: str  # Whisper code
    probability: float
    windows: int  # 1 = decided on the first look


def speech_regions(audio: np.ndarray, min_silence_s: float = 2.0, pad_s: float = 0.4) -> list[tuple[int, int]]:
    """Silero VAD speech regions (sample offsets); faster-whisper's default parameters, which join
    speech across pauses shorter than ``min_silence_s`` and widen each region by ``pad_s``."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(min_silence_duration_ms=round(min_silence_s * 1000), speech_pad_ms=round(pad_s * 1000))
    return [(r["start"], r["end"]) for r in get_speech_timestamps(audio, options)]


def _probabilities(model: WhisperModel, audio: np.ndarray) -> dict[str, float]:
    _, _, all_probs = model.detect_language(audio=audio[: int(WINDOW_S * SAMPLE_RATE)])
    return dict(all_probs)


def detect_language(
    model: WhisperModel,
    audio: np.ndarray,
    *,
    regions: list[tuple[int, int]] | None = None,
    threshold: float = CONFIDENT_PROBABILITY,
    short_speech_s: float = SHORT_SPEECH_S,
) -> Detection:
    """The language spoken in ``audio`` (16 kHz float32), with its probability."""
    if regions is None:
        regions = speech_regions(audio)
    speech = np.concatenate([audio[s:e] for s, e in regions]) if regions else audio
    first = _probabilities(model, speech)
    language = max(first, key=lambda code: first[code])
    speech_s = len(speech) / SAMPLE_RATE
    if first[language] >= threshold and speech_s >= short_speech_s:
        return Detection(language, round(first[language], 4), 1)

    # Unsure: more windows, distributions averaged by their seconds of speech.
    window = int(WINDOW_S * SAMPLE_RATE)
    if len(speech) > window:  # the next 30 s windows (the first one was the first look)
        pieces = [speech[i : i + window] for i in range(window, len(speech), window)][: MAX_WINDOWS - 1]
    else:  # each stretch of speech between pauses (each sentence, mostly) on its own
        sentences = speech_regions(speech, min_silence_s=SENTENCE_PAUSE_S, pad_s=0.1)
        pieces = [speech[s:e] for s, e in sentences if (e - s) >= MIN_REGION_S * SAMPLE_RATE][:MAX_WINDOWS]
        if len(pieces) == 1:
            pieces = []  # the same audio as the first look
    totals = {lang: p * min(len(speech), window) for lang, p in first.items()}
    weight = min(len(speech), window)
    for piece in pieces:
        for lang, p in _probabilities(model, piece).items():
            totals[lang] = totals.get(lang, 0.0) + p * len(piece)
        weight += len(piece)
    language = max(totals, key=lambda code: totals[code])
    return Detection(language, round(totals[language] / weight, 4), 1 + len(pieces))
