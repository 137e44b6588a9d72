"""Local audio work with ffmpeg/ffprobe: duration, conversion to 16 kHz mono WAV,
and splitting long recordings at quiet points.  Nothing here knows about Django.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import wave
from pathlib import Path

import numpy as np

from transcription.pipeline.media.ffmpeg_commands import ffmpeg_media, ffprobe_media, refused_format
from transcription.pipeline.media.wav import SAMPLE_RATE, open_wav, read_samples

__all__ = ["AudioError", "probe_audio", "to_wav", "plan_chunks", "cut_media"]
# Recognition runs chunk by chunk. The recogniser's memory grows with the chunk (its features for
# the whole slice are built at once: about 12.5 MB a minute with tiny.en), so chunks of 10 minutes
# keep a 12-hour video's peak at a 10-minute video's (bench/memory).
ASR_CHUNK_SECONDS = 600.0

MSG_NO_AUDIO = "The file has no audio track."
MSG_UNREADABLE = "The file could not be read as audio or video."
MSG_NO_DURATION = "The length of the audio could not be determined."


class AudioError(Exception):
    """Audio processing failed; ``str(error)`` is a sentence for the user."""


def _last_line(stderr: bytes | str | None) -> str:
    if not stderr:
        return ""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def probe_audio(path: str | os.PathLike[str], timeout: float = 60) -> float:
    """Duration in seconds of the (first) audio track of ``path``, via ffprobe.

    Raises ``AudioError("The file has no audio track.")`` when it has no audio
    stream, ``AudioError("The file could not be read as audio or video.")`` when
    ffprobe cannot read it (or takes longer than ``timeout``).
    """
    cmd = ffprobe_media(path, "-show_entries", "format=duration:stream=codec_type,duration", "-of", "json")
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AudioError(MSG_UNREADABLE) from None
    except OSError as e:  # ffprobe missing
        raise AudioError(MSG_UNREADABLE) from e
    if res.returncode != 0:
        raise AudioError(refused_format(res.stderr) or MSG_UNREADABLE)
    try:
        data = json.loads(res.stdout or b"{}")
    except ValueError:
        raise AudioError(MSG_UNREADABLE) from None
    streams = data.get("streams") or []
    audio = [s for s in streams if s.get("codec_type") == "audio"]
    if not audio:
        if not streams:
            raise AudioError(MSG_UNREADABLE)
        raise AudioError(MSG_NO_AUDIO)
    # The audio track's own length first (a video track may run longer), else the container's.
    for value in [*(s.get("duration") for s in audio), (data.get("format") or {}).get("duration")]:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    raise AudioError(MSG_NO_DURATION)


def to_wav(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    timeout: float,
    max_seconds: float | None = None,
) -> Path:
    """Convert the first audio track of ``src`` to 16 kHz mono 16-bit PCM WAV at ``dst``.

    ``max_seconds`` keeps only the beginning (for previews).  ffmpeg is killed
    after ``timeout`` seconds.  Raises ``AudioError`` (with ffmpeg's last line of
    stderr when it fails); a partial ``dst`` is removed.
    """
    dst = Path(dst)
    cmd = ffmpeg_media(
        src,
        "-map",
        "0:a:0",
        "-vn",
        "-sn",
        "-dn",
        "-ac",
        "1",
        "-ar",
        str(SAMPLE_RATE),
        "-c:a",
        "pcm_s16le",
    )
    if max_seconds is not None:
        cmd += ["-t", f"{float(max_seconds):.3f}"]
    cmd += ["-f", "wav", os.fspath(dst)]
    try:
        res = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout
        )
    except subprocess.TimeoutExpired:  # subprocess.run kills ffmpeg before raising
        dst.unlink(missing_ok=True)
        raise AudioError(f"Converting the audio took longer than {timeout:g} seconds.") from None
    except OSError as e:
        raise AudioError(f"The audio could not be converted: {e}.") from e
    if res.returncode != 0:
        dst.unlink(missing_ok=True)
        last = _last_line(res.stderr)
        if b"matches no streams" in (res.stderr or b""):
            raise AudioError(MSG_NO_AUDIO)
        refused = refused_format(res.stderr)
        if refused:
            raise AudioError(refused)
        raise AudioError(f"The audio could not be converted: {last or f'ffmpeg exited with code {res.returncode}'}")
    if not dst.is_file():
        raise AudioError("The audio could not be converted: ffmpeg wrote no file.")
    return dst


def _rms_frames(w: wave.Wave_read, start: int, stop: int, frame: int) -> np.ndarray:
    """RMS of consecutive ``frame``-sample frames from sample ``start`` to ``stop`` (the last
    partial frame dropped), reading one frame at a time."""
    w.setpos(start)
    out = []
    for _ in range((stop - start) // frame):
        samples = read_samples(w, frame).astype(np.float64)
        if len(samples) < frame:
            break
        out.append(math.sqrt(float(np.mean(samples * samples))))
    return np.asarray(out)


def plan_chunks(
    wav_path: str | os.PathLike[str],
    *,
    max_chunk: float = ASR_CHUNK_SECONDS,
    search_window: float = 60.0,
    frame_seconds: float = 0.5,
) -> list[tuple[float, float]]:
    """Split ``wav_path`` into contiguous (start, end) chunks of at most ``max_chunk``
    seconds that cover the whole file.

    Each cut is placed in the middle of the quietest ``frame_seconds`` frame (lowest
    RMS) within the last ``search_window`` seconds before the chunk's limit (the
    window never reaches into the first half of the chunk).  Only the windows are
    read, frame by frame, so memory does not grow with the file's length.  A file
    no longer than ``max_chunk`` gives ``[(0.0, duration)]``.
    """
    if max_chunk <= 0:
        raise ValueError("max_chunk must be positive")
    try:
        w = open_wav(wav_path)
    except (wave.Error, EOFError, ValueError) as e:
        raise AudioError(MSG_UNREADABLE) from e
    with w:
        rate = w.getframerate()
        total = w.getnframes()
        limit = int(max_chunk * rate)
        frame = max(1, int(frame_seconds * rate))
        window = min(int(search_window * rate), limit // 2)
        cuts = [0]
        start = 0
        while total - start > limit:
            end_max = start + limit
            win_start = max(start + limit - window, start + 1)
            rms = _rms_frames(w, win_start, end_max, frame)
            if len(rms):
                # Quietest frame; among equals, the latest (fewer, longer chunks).
                i = len(rms) - 1 - int(np.argmin(rms[::-1]))
                cut = win_start + i * frame + frame // 2
            else:
                cut = end_max
            cut = min(max(cut, start + 1), end_max)
            cuts.append(cut)
            start = cut
        cuts.append(total)
    return [(cuts[k] / rate, cuts[k + 1] / rate) for k in range(len(cuts) - 1)]


def cut_media(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, seconds: float, timeout: float) -> Path:
    """Keep the first ``seconds`` of a video, streams copied as they are (a preview's burned video).

    Stream copy cuts at the keyframe after ``seconds``, so the result may run a little longer;
    that costs nothing, as the preview's subtitles end at ``seconds``. Raises ``AudioError``.
    """
    dst = Path(dst)
    cmd = ffmpeg_media(
        src,
        "-t",
        f"{float(seconds):.3f}",
        "-map",
        "0:v:0",
        "-map",
        "0:a:0?",
        "-c",
        "copy",
        os.fspath(dst),
    )
    try:
        res = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        dst.unlink(missing_ok=True)
        raise AudioError(f"Cutting the video took longer than {timeout:g} seconds.") from None
    if res.returncode != 0 or not dst.is_file():
        dst.unlink(missing_ok=True)
        refused = refused_format(res.stderr)
        if refused:
            raise AudioError(refused)
        raise AudioError(
            f"The video could not be cut: {_last_line(res.stderr) or f'ffmpeg exited with code {res.returncode}'}"
        )
    return dst
