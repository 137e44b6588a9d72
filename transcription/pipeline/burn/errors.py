"""What burning says when it fails: ``BurnError``, whose text is a sentence for the customer, and
the line of ffmpeg's stderr that says what went wrong."""

from __future__ import annotations

import re

MSG_NO_PICTURE = "The video has no picture to draw subtitles on."
MSG_UNREADABLE = "ffmpeg could not read this video: {detail}"
MSG_TIMEOUT = "Drawing subtitles took longer than {limit} and was stopped."
MSG_FAILED = "Drawing subtitles failed: {detail}"
MSG_NO_FFMPEG = "ffmpeg is not installed on this server."


class BurnError(Exception):
    """Burning subtitles failed; ``str(error)`` is a sentence that can be shown to the customer."""


# ffmpeg's closing lines that only say *that* something failed; the cause is on an earlier line.
_GENERIC = re.compile(
    r"^(Conversion failed|Error while (processing|filtering|decoding|encoding)|Error reinitializing filters"
    r"|Failed to inject frame|Error initializing (filter|output|complex)|Exiting normally|Press \[q\]"
    r"|frame=|size=)",
)
_COMPONENT = re.compile(r"^\[[^\]]* @ 0x[0-9a-f]+\]\s*")  # "[Parsed_subtitles_1 @ 0x55..] "


def last_line(text: str) -> str:
    """The last line of ffmpeg's stderr that says what went wrong, without its component prefix."""
    lines = [_COMPONENT.sub("", ln.strip()) for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        return "unknown error"
    meaningful = [ln for ln in lines if not _GENERIC.match(ln)]
    return (meaningful or lines)[-1][:300]
