"""The WAV files stages hand each other: 16 kHz mono 16-bit PCM, as audio.to_wav writes them.

Read a block or a slice at a time, so memory never grows with the recording's length. Samples come
back as float32 in [-1, 1].
"""

from __future__ import annotations

import os
import struct
import wave
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

SAMPLE_RATE = 16_000  # what the speech model, the VAD and the speaker encoder all take


def open_wav(path: str | os.PathLike[str]) -> wave.Wave_read:
    """Open a pipeline WAV; ValueError names what it is instead when it is not 16 kHz mono 16-bit."""
    w = wave.open(os.fspath(path), "rb")
    if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE:
        rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
        w.close()
        raise ValueError(
            f"{path}: expected 16 kHz mono 16-bit PCM WAV, got {rate} Hz, {channels} channel(s), {8 * width}-bit"
        )
    return w


def read_samples(w: wave.Wave_read, count: int) -> np.ndarray:
    """The next `count` samples (fewer at the end of the file)."""
    return np.frombuffer(w.readframes(count), dtype="<i2").astype(np.float32) / 32768.0


def read_span(w: wave.Wave_read, start: int, end: int) -> np.ndarray:
    """Samples ``[start, end)`` (sample indices, clipped to the file) of an open WAV."""
    start = max(0, start)
    end = min(end, w.getnframes())
    if end <= start:
        return np.zeros(0, dtype=np.float32)
    w.setpos(start)
    return read_samples(w, end - start)


def read_slice(path: str | os.PathLike[str], start: float = 0.0, end: float | None = None) -> np.ndarray:
    """Samples ``[start, end)`` (seconds); ``end`` past the end of the file (or None) means "to the
    end". Only the slice is read, a minute at a time."""
    with open_wav(path) as w:
        total = w.getnframes()
        first = min(max(0, int(round(start * SAMPLE_RATE))), total)
        last = total if end is None else min(max(first, int(round(end * SAMPLE_RATE))), total)
        out = np.empty(last - first, dtype=np.float32)
        w.setpos(first)
        position, block = 0, SAMPLE_RATE * 60
        while position < len(out):
            chunk = read_samples(w, min(block, len(out) - position))
            if not len(chunk):
                break
            out[position : position + len(chunk)] = chunk
            position += len(chunk)
    return out[:position]


def read_blocks(path: str | os.PathLike[str], block_samples: int) -> Iterator[np.ndarray]:
    """The whole file, `block_samples` samples at a time."""
    with open_wav(path) as w:
        while True:
            block = read_samples(w, block_samples)
            if not len(block):
                return
            yield block


def wav_duration(path: str | os.PathLike[str]) -> float:
    """Length in seconds, from the header."""
    with open_wav(path) as w:
        return w.getnframes() / SAMPLE_RATE


def _data_start(f: BinaryIO) -> int:
    """Where the samples of a RIFF/WAVE file begin: just after its `data` chunk's header. Only the
    chunks' ids and the sizes of the chunks before `data` are read, never the sizes of `data`."""
    head = f.read(12)
    if head[:4] != b"RIFF" or head[8:] != b"WAVE":
        raise ValueError("not a RIFF/WAVE file")
    while True:
        header = f.read(8)
        if len(header) < 8:
            raise ValueError("no data chunk")
        chunk, size = header[:4], struct.unpack("<I", header[4:])[0]
        if chunk == b"data":
            return f.tell()
        f.seek(size + (size & 1), os.SEEK_CUR)  # chunks are padded to an even size


def decoded_seconds(path: str | os.PathLike[str]) -> float:
    """Length in seconds of the samples that are in a pipeline WAV: the bytes after its `data`
    chunk's header, whatever the sizes in the header say. What a job is charged for (issue 41)."""
    with open(path, "rb") as f:
        start = _data_start(f)
        end = f.seek(0, os.SEEK_END)
    return (end - start) // 2 / SAMPLE_RATE


def truncate(path: str | os.PathLike[str], seconds: float) -> None:
    """Keep the first `seconds` of a pipeline WAV, in place: the file cut and its RIFF and `data`
    sizes written again (a preview decided once the audio was decoded)."""
    with open(path, "r+b") as f:
        start = _data_start(f)
        end = min(f.seek(0, os.SEEK_END), start + 2 * int(seconds * SAMPLE_RATE))
        f.truncate(end)
        f.seek(4)
        f.write(struct.pack("<I", end - 8))
        f.seek(start - 4)
        f.write(struct.pack("<I", end - start))
