"""The test media, made locally (nothing from the internet): ffmpeg's lavfi sources, espeak-ng
speech and numpy, once per folder. ``SPEECH_TEXT`` is what the speech clip says."""

from __future__ import annotations

import os
import struct
import subprocess
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np

from transcription.pipeline.media.ffmpeg_commands import ffmpeg

SPEECH_TEXT = (
    "Hello and welcome. This is a short test of the transcription service. The quick brown fox jumps over the lazy dog."
)


def _run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)


def make_speech_wav(dest: Path, text: str = SPEECH_TEXT) -> Path:
    """Speech made by espeak-ng (22.05 kHz mono WAV)."""
    _run(["espeak-ng", "-s", "150", "-w", str(dest), text])
    return dest


# The small test picture (ffmpeg's lavfi test pattern) and its quick H.264 and AAC encodings.
H264 = ("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
AAC = ("-c:a", "aac", "-b:a", "64k")


def _test_picture(seconds: float | None = None) -> tuple[str, ...]:
    duration = "" if seconds is None else f":duration={seconds}"
    return ("-f", "lavfi", "-i", f"testsrc=size=160x120:rate=10{duration}")


def _sine(seconds: float, rate: int = 44100) -> tuple[str, ...]:
    return ("-f", "lavfi", "-i", f"sine=frequency=440:sample_rate={rate}:duration={seconds}")


def make_speech_mp4(dest: Path, speech_wav: Path) -> Path:
    """A small H.264 + AAC mp4 (moov at the end, so readers need Range requests)."""
    _run(ffmpeg(*_test_picture(), "-i", str(speech_wav), "-shortest", *H264, *AAC, str(dest)))
    return dest


def make_video_only_mp4(dest: Path, seconds: float = 3.0) -> Path:
    """An mp4 with a video track and no audio track."""
    _run(ffmpeg(*_test_picture(seconds), *H264, str(dest)))
    return dest


def make_ts_segment(dest: Path, seconds: float = 2.0) -> Path:
    """A short MPEG-TS (video + sine audio), used as an HLS segment."""
    _run(ffmpeg(*_test_picture(seconds), *_sine(seconds), *H264, *AAC, "-f", "mpegts", str(dest)))
    return dest


def make_sine_wav(dest: Path, seconds: float = 5.0, rate: int = 44100) -> Path:
    _run(ffmpeg(*_sine(seconds, rate), "-ac", "2", str(dest)))
    return dest


def decode_mono(path: Path, start: float = 0.0, seconds: float | None = None, rate: int = 16000) -> np.ndarray:
    """Float mono samples of any file ffmpeg reads (from `start`, `seconds` long when given)."""
    cut = ["-ss", str(start), "-t", str(seconds)] if seconds else []
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", *cut, "-i", str(path), "-ac", "1", "-ar", str(rate), "-f", "f32le", "-"],
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout
    return np.frombuffer(raw, dtype=np.float32).copy()


def write_wav(dest: Path, samples: np.ndarray, rate: int = 16000) -> Path:
    """Write float samples in [-1, 1] as 16-bit mono WAV."""
    pcm = np.clip(samples, -1.0, 1.0)
    pcm = (pcm * 32767).astype("<i2")
    with wave.open(str(dest), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return dest


def make_gapped_wav(
    dest: Path,
    total: float = 70.0,
    silences: tuple[tuple[float, float], ...] = ((24.0, 25.5), (50.0, 51.5)),
    rate: int = 16000,
    seed: int = 1,
) -> Path:
    """Loud, varying tone + noise for ``total`` seconds with near-silent gaps.

    The "silences" hold faint noise (about -60 dBFS), not digital zeros.
    """
    rng = np.random.default_rng(seed)
    n = int(total * rate)
    t = np.arange(n) / rate
    # A tone whose loudness wobbles, plus noise: nothing outside the gaps is quiet.
    envelope = 0.25 + 0.15 * np.sin(2 * np.pi * 0.37 * t)
    signal = envelope * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(n)
    for a, b in silences:
        i, j = int(a * rate), int(b * rate)
        signal[i:j] = 0.001 * rng.standard_normal(j - i)
    return write_wav(dest, signal, rate)


def build_media(folder: Path) -> dict[str, Path]:
    """Make the standard set of test media in ``folder`` (skips what exists)."""
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    def once(name: str, make: Callable[[Path], Path]) -> None:
        path = folder / name
        if not path.exists():
            tmp = folder / f".tmp-{name}"
            make(tmp)
            os.replace(tmp, path)
        out[name] = path

    once("speech.wav", make_speech_wav)
    once("speech.mp4", lambda p: make_speech_mp4(p, out["speech.wav"]))
    once("video_only.mp4", make_video_only_mp4)
    once("segment.ts", make_ts_segment)
    once("gapped.wav", make_gapped_wav)
    once("sine.wav", make_sine_wav)
    return out


def media_duration(path: Path) -> float:
    """Duration by ffprobe, for assertions."""
    res = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return float(res.stdout.strip())


# Files whose header lies about their length (issue 41): what a customer could send to be charged
# for less than the workers process. Each keeps every sample; only the length the header claims
# changes, so ffprobe reports about a second while ffmpeg decodes all of it.

LONG_TEXT = " ".join(
    ["The quick brown fox jumps over the lazy dog while the committee discusses the budget for the next project."] * 9
)


def make_long_speech_wav(dest: Path, text: str = LONG_TEXT) -> Path:
    """About 52 s of espeak-ng speech and a second of silence (22.05 kHz mono WAV). The silence
    keeps clear of faster-whisper's failure on speech up to the last sample (issue 41, item 4)."""
    listing, speech = dest.with_suffix(".txt"), dest.with_suffix(".speech.wav")
    listing.write_text(text)
    _run(["espeak-ng", "-f", str(listing), "-w", str(speech)])
    _run(ffmpeg("-i", str(speech), "-af", "apad=pad_dur=1", str(dest)))
    return dest


def make_lying_matroska(dest: Path, source: Path, claimed_ms: float = 1000.0) -> Path:
    """`source` as FLAC in Matroska, its Segment Duration claiming `claimed_ms` milliseconds."""
    _run(ffmpeg("-i", str(source), "-c:a", "flac", str(dest)))
    return claim_matroska_duration(dest, claimed_ms)


def claim_matroska_duration(path: Path, claimed_ms: float) -> Path:
    """Overwrite the Segment Duration (element 0x4489, an 8-byte float in milliseconds at the
    default TimecodeScale) of the Matroska file at `path`."""
    data = bytearray(path.read_bytes())
    at = data.find(b"\x44\x89\x88")  # the id, then the size byte of an 8-byte float
    if at < 0:
        raise ValueError(f"{path}: no Duration element")
    data[at + 3 : at + 11] = struct.pack(">d", claimed_ms)
    path.write_bytes(data)
    return path


def make_lying_mp4(dest: Path, source: Path, claimed_seconds: int = 1) -> Path:
    """`source` as AAC in MP4, its `mvhd` and `mdhd` durations overwritten to claim `claimed_seconds`
    (each in its own box's timescale)."""
    _run(ffmpeg("-i", str(source), "-c:a", "aac", "-b:a", "64k", "-f", "mp4", str(dest)))
    data = bytearray(dest.read_bytes())
    for box in (b"mvhd", b"mdhd"):
        at = data.find(box)
        if at < 0 or data[at + 4] != 0:  # version 0: 32-bit times, timescale at +16, duration at +20
            raise ValueError(f"{dest}: no version-0 {box.decode()} box")
        (timescale,) = struct.unpack(">I", data[at + 16 : at + 20])
        data[at + 20 : at + 24] = struct.pack(">I", timescale * claimed_seconds)
    dest.write_bytes(data)
    return dest


def make_lying_wav(dest: Path, source: Path, claimed_seconds: float = 1.0) -> Path:
    """`source` (a PCM WAV as espeak-ng writes it: one `data` chunk) with its RIFF and `data` sizes
    claiming `claimed_seconds`, every sample still in the file after them."""
    data = bytearray(source.read_bytes())
    at = data.find(b"data")
    channels, rate = struct.unpack("<HI", data[22:28])
    (width,) = struct.unpack("<H", data[34:36])
    size = int(claimed_seconds * rate) * channels * width // 8
    data[at + 4 : at + 8] = struct.pack("<I", size)
    data[4:8] = struct.pack("<I", at + size)
    dest.write_bytes(data)
    return dest


def make_hours_of_audio(dest: Path, speech: Path, seconds: int = 7200) -> Path:
    """`speech` then silence up to `seconds`, as FLAC in Matroska that claims one second: small on
    disk (silence packs to almost nothing), long to decode."""
    concat = ("-filter_complex", "[0][1]concat=n=2:v=0:a=1[a]", "-map", "[a]", "-t", str(seconds))
    _run(ffmpeg("-i", str(speech), "-f", "lavfi", "-i", "anullsrc=r=22050:cl=mono", *concat, "-c:a", "flac", str(dest)))
    return claim_matroska_duration(dest, 1000.0)
