"""Speech detection: Silero VAD (the ONNX model inside faster-whisper) over a WAV file, streamed.

The probabilities are computed once per file (:func:`speech_probabilities`); recognition and
diarization each turn them into regions with their own thresholds (:func:`regions_from_probs`).
"""

from __future__ import annotations

import os
import wave
from collections.abc import Iterator

import numpy as np

SAMPLE_RATE = 16000


def open_wav(path: str | os.PathLike) -> wave.Wave_read:
    w = wave.open(str(path), "rb")
    if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE:
        ch, sw, sr = w.getnchannels(), w.getsampwidth(), w.getframerate()
        w.close()
        raise ValueError(f"{path}: expected 16 kHz mono 16-bit WAV, got {sr} Hz, {ch} ch, {8 * sw} bit")
    return w


def _read(w: wave.Wave_read, n: int) -> np.ndarray:
    raw = w.readframes(n)
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


def _read_blocks(path, block_samples: int) -> Iterator[np.ndarray]:
    w = open_wav(path)
    try:
        while True:
            block = _read(w, block_samples)
            if not len(block):
                return
            yield block
    finally:
        w.close()


def read_span(w: wave.Wave_read, start: int, end: int) -> np.ndarray:
    start = max(0, start)
    end = min(end, w.getnframes())
    if end <= start:
        return np.zeros(0, dtype=np.float32)
    w.setpos(start)
    return _read(w, end - start)


VAD_WINDOW = 512  # silero: one probability per 32 ms
VAD_CONTEXT = 64  # samples of the previous window the model sees


def speech_probabilities(path, block_seconds: float = 30.0) -> np.ndarray:
    """Silero speech probability for every 512 samples (32 ms), streamed in blocks.

    Same numbers as faster-whisper's ``SileroVADModel(audio)`` on the whole file: the
    LSTM state and the 64-sample context are carried from block to block.
    """
    from faster_whisper.vad import get_vad_model

    model = get_vad_model()
    session = getattr(model, "session", None)
    stateful = session is not None and [i.name for i in session.get_inputs()] == ["input", "h", "c"]
    block = max(1, int(block_seconds * SAMPLE_RATE) // VAD_WINDOW) * VAD_WINDOW
    h = np.zeros((1, 1, 128), dtype=np.float32)
    c = np.zeros((1, 1, 128), dtype=np.float32)
    context = np.zeros(VAD_CONTEXT, dtype=np.float32)
    probs = []
    for audio in _read_blocks(path, block):
        rem = len(audio) % VAD_WINDOW
        if rem:
            audio = np.pad(audio, (0, VAD_WINDOW - rem))
        if not stateful:  # pragma: no cover - another faster-whisper VAD interface
            probs.append(np.asarray(model(audio), dtype=np.float32).reshape(-1))
            continue
        frames = audio.reshape(-1, VAD_WINDOW)
        before = np.concatenate([context[None], frames[:-1, -VAD_CONTEXT:]])
        context = frames[-1, -VAD_CONTEXT:].copy()
        out, h, c = session.run(None, {"input": np.concatenate([before, frames], axis=1), "h": h, "c": c})
        probs.append(np.asarray(out, dtype=np.float32).reshape(-1))
    return np.concatenate(probs) if probs else np.zeros(0, dtype=np.float32)


def detect_speech(
    wav_path: str | os.PathLike,
    *,
    threshold: float = 0.5,
    neg_threshold: float | None = None,
    min_silence_s: float = 0.2,
    min_speech_s: float = 0.25,
    pad_s: float = 0.05,
) -> list[tuple[float, float]]:
    """Speech regions ``(start, end)`` in seconds, from Silero VAD, streamed."""
    probs = speech_probabilities(wav_path)
    return regions_from_probs(
        probs,
        duration=wav_duration(wav_path),
        threshold=threshold,
        neg_threshold=neg_threshold,
        min_silence_s=min_silence_s,
        min_speech_s=min_speech_s,
        pad_s=pad_s,
    )


def wav_duration(path) -> float:
    w = open_wav(path)
    try:
        return w.getnframes() / SAMPLE_RATE
    finally:
        w.close()


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
    out = []
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
