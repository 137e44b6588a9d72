"""Is a file audio or video we can transcribe? One ffprobe call, for the web process that has just
received an upload: it imports nothing heavier than the standard library (audio.py brings numpy,
which web processes never load: tests/test_web_processes.py)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass

from transcription.pipeline.media.ffmpeg_commands import ffprobe_media, refused_format

MSG_NOT_MEDIA = "The file is not audio or video that ffprobe can read."
MSG_NO_AUDIO = "The file has no audio track to transcribe."
MSG_NO_DURATION = "The length of the file's audio could not be determined."


class NotMedia(Exception):
    """The file cannot be transcribed; ``str(error)`` is a sentence for the client."""


@dataclass(frozen=True)
class MediaSummary:
    duration: float  # seconds of the audio track (or of the container when the track does not say)
    has_video: bool  # a picture to burn subtitles on (cover art in an audio file is not one)


def probe_media(path: str | os.PathLike[str], timeout: float = 60) -> MediaSummary:
    """What ffprobe finds in `path`; NotMedia when it is not media, has no audio track or no length."""
    command = ffprobe_media(path, "-show_streams", "-show_format", "-of", "json")
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except (subprocess.TimeoutExpired, OSError):
        raise NotMedia(MSG_NOT_MEDIA) from None
    refused = refused_format(result.stderr) if result.returncode != 0 else None
    if refused:
        raise NotMedia(refused)
    try:
        data = json.loads(result.stdout or b"{}") if result.returncode == 0 else {}
    except ValueError:
        data = {}
    streams = data.get("streams") or []
    # ffprobe "reads" a text file as a stream of some exotic codec with no duration; real media has
    # an audio or a video stream.
    audio = [s for s in streams if s.get("codec_type") == "audio"]
    video = [
        s for s in streams if s.get("codec_type") == "video" and not (s.get("disposition") or {}).get("attached_pic")
    ]
    if not audio and not video:
        raise NotMedia(MSG_NOT_MEDIA)
    if not audio:
        raise NotMedia(MSG_NO_AUDIO)
    for value in [*(s.get("duration") for s in audio), (data.get("format") or {}).get("duration")]:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            continue
        if seconds > 0:
            return MediaSummary(duration=seconds, has_video=bool(video))
    raise NotMedia(MSG_NO_DURATION)
