"""The picture to draw on: its displayed size (rotation and non-square pixels applied), duration
and sound, how long it really runs (picture_seconds), and the output size for a quality."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from transcription.pipeline.media.ffmpeg_commands import ffmpeg_media, ffprobe_media, refused_format

from .errors import MSG_NO_FFMPEG, MSG_NO_PICTURE, MSG_UNREADABLE, BurnError, last_line

QUALITY_HEIGHT = {"default": 720, "hd": 1080, "uhd": 2160}


@dataclass
class VideoInfo:
    width: int  # as displayed: rotation and the sample aspect ratio applied
    height: int
    duration: float  # seconds; 0.0 when the container does not say
    has_audio: bool


def _rotation(stream: dict[str, Any]) -> int:
    for side in stream.get("side_data_list") or []:
        if "rotation" in side:
            try:
                return int(round(float(side["rotation"])))
            except (TypeError, ValueError):
                pass
    try:
        return int((stream.get("tags") or {}).get("rotate", 0))
    except (TypeError, ValueError):
        return 0


def _ratio(text: str | None) -> Fraction | None:
    if not text or ":" not in text:
        return None
    num, _, den = text.partition(":")
    try:
        num_i, den_i = int(num), int(den)
    except ValueError:
        return None
    return Fraction(num_i, den_i) if num_i > 0 and den_i > 0 else None


def probe_video(path: str | os.PathLike[str], timeout: float = 60) -> VideoInfo:
    """Displayed size, duration and whether there is sound, via ffprobe.

    The size is what a player shows, which is what ffmpeg's filters see: a 90/270 degree rotation
    (display matrix side data, or the old ``rotate`` tag) swaps width and height, since ffmpeg
    rotates decoded frames itself; a non-square sample aspect ratio widens or narrows the width.
    Cover art (an attached picture in an audio file) is not a picture to draw on.
    """
    cmd = ffprobe_media(path, "-show_streams", "-show_format", "-of", "json")
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BurnError(MSG_UNREADABLE.format(detail="reading it took too long.")) from None
    except OSError as e:
        raise BurnError(MSG_NO_FFMPEG) from e
    if res.returncode != 0:
        refused = refused_format(res.stderr)
        if refused:
            raise BurnError(refused)
        detail = last_line(res.stderr.decode("utf-8", "replace"))
        raise BurnError(MSG_UNREADABLE.format(detail=detail))
    try:
        data = json.loads(res.stdout or b"{}")
    except ValueError:
        data = {}
    streams = data.get("streams") or []
    videos = [
        s
        for s in streams
        if s.get("codec_type") == "video"
        and not (s.get("disposition") or {}).get("attached_pic")
        and int(s.get("width") or 0) > 0
        and int(s.get("height") or 0) > 0
    ]
    if not videos:
        raise BurnError(MSG_NO_PICTURE)
    v = videos[0]
    width, height = int(v["width"]), int(v["height"])
    sar = _ratio(v.get("sample_aspect_ratio"))
    if sar is not None and sar != 1:
        width = max(1, round(width * sar))
    if _rotation(v) % 180 != 0:
        width, height = height, width
    duration = 0.0
    for value in ((data.get("format") or {}).get("duration"), v.get("duration")):
        try:
            duration = float(value)  # type: ignore[arg-type]  # None is a TypeError, caught
        except (TypeError, ValueError):
            continue
        if duration > 0:
            break
    has_audio = any(s.get("codec_type") == "audio" for s in streams)
    return VideoInfo(width=width, height=height, duration=max(duration, 0.0), has_audio=has_audio)


def picture_seconds(path: str | os.PathLike[str], *, max_seconds: float, timeout: float) -> float:
    """How long the picture of ``path`` runs, read from its packets (demuxed and copied to nothing,
    never decoded), up to ``max_seconds``: its header's length is the sender's word, and a burn
    encodes every frame there is (issue 56). The last frame's time, so a second-long picture at
    10 frames a second reads 0.9 s; the charge rounds up to whole seconds.

    Raises ``BurnError`` when the file has no picture or cannot be read.
    """
    cmd = ffmpeg_media(
        path, "-map", "0:V:0", "-c", "copy", "-t", f"{float(max_seconds):.3f}", "-progress", "pipe:1", "-nostats"
    )
    cmd += ["-f", "null", "-"]
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BurnError(MSG_UNREADABLE.format(detail="reading it took too long.")) from None
    except OSError as e:
        raise BurnError(MSG_NO_FFMPEG) from e
    stderr = res.stderr.decode("utf-8", "replace")
    if res.returncode != 0:
        if "matches no streams" in stderr:
            raise BurnError(MSG_NO_PICTURE)
        raise BurnError(refused_format(stderr) or MSG_UNREADABLE.format(detail=last_line(stderr)))
    seconds = 0.0
    for line in res.stdout.decode("ascii", "replace").splitlines():
        key, _, value = line.strip().partition("=")
        if key == "out_time_us":  # "N/A" before the first packet
            try:
                seconds = max(seconds, int(value) / 1_000_000)
            except ValueError:
                continue
    return seconds


def output_size(width: int, height: int, quality: str) -> tuple[int, int]:
    """Output size for ``quality``: the height from ``QUALITY_HEIGHT``, the width keeping the aspect
    ratio of ``width`` x ``height``, rounded to the nearest even number (yuv420p needs both even)."""
    try:
        out_h = QUALITY_HEIGHT[quality]
    except KeyError:
        raise ValueError(f"unknown quality {quality!r}; expected one of {sorted(QUALITY_HEIGHT)}") from None
    if width <= 0 or height <= 0:
        raise ValueError(f"bad video size {width}x{height}")
    out_w = max(2, int(width * out_h / height / 2 + 0.5) * 2)  # half up: 405 -> 406
    return out_w, out_h
