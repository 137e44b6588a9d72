"""Speakers called by name: the account holder's names (or an enrolled voice's) laid over the text
as the speech stage wrote it.

The stored `txt` and WebVTT always say "Speaker N"; a job's names ({"1": "Alice"}) are applied when
the text is read. So a name can be changed or taken back any number of times, two speakers may be
given the same name (one person the diarizer split in two) and still be renamed apart later, and
the numbers the names are keyed by never change. Both places a label appears can be found without
guessing: a paragraph of `txt` is one line that starts "[HH:MM:SS] Speaker N: " (its text has no
line breaks), and the text of a WebVTT cue escapes "<", so "<v Speaker N>" is only ever a voice
span. That is also why a name may not hold a line break, ":", "<" or ">".
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_PARAGRAPH_HEAD = re.compile(r"^(\[\d+:\d\d:\d\d\] )Speaker (\d+): ", re.M)
_VOICE_SPAN = re.compile(r"<v Speaker (\d+)>")


def speakers_in(txt: str | None) -> list[int]:
    """The speaker numbers a `txt` transcript holds, in increasing order."""
    return sorted({int(match.group(2)) for match in _PARAGRAPH_HEAD.finditer(txt or "")})


def name_txt(txt: str | None, names: Mapping[str, str]) -> str | None:
    """`txt` with each named speaker's paragraphs headed by the name: "[00:00:03] Alice: ..."."""
    if not txt or not names:
        return txt
    return _PARAGRAPH_HEAD.sub(
        lambda match: f"{match.group(1)}{names.get(match.group(2), 'Speaker ' + match.group(2))}: ", txt
    )


def name_webvtt(webvtt: str | None, names: Mapping[str, str]) -> str | None:
    """WebVTT with each named speaker's voice spans saying the name: "<v Alice>"."""
    if not webvtt or not names:
        return webvtt

    def voice(match: re.Match[str]) -> str:
        name = names.get(match.group(1))
        if not name:
            return match.group(0)
        # "&" is the one character of a name that a cue's annotation must escape; a name ending in
        # "-" (one stored before "--" at the end was refused) is followed by a space, which the
        # annotation drops, so that "-->" never appears: it would end the cue
        name = name.replace("&", "&amp;")
        return f"<v {name} >" if name.endswith("-") else f"<v {name}>"

    return _VOICE_SPAN.sub(voice, webvtt)
