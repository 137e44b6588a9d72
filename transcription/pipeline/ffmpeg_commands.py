"""The one place ffmpeg's and ffprobe's command lines begin: quiet but for errors, never reading the
terminal, overwriting the output. Every caller adds its own inputs, filters and output."""

from __future__ import annotations


def ffmpeg(*arguments: str) -> list[str]:
    """``ffmpeg`` that reads no stdin, prints errors only and overwrites its output, then ``arguments``."""
    return ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *arguments]


def ffprobe(*arguments: str) -> list[str]:
    """``ffprobe`` that prints errors only, then ``arguments``."""
    return ["ffprobe", "-v", "error", *arguments]
