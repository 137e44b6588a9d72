"""What a job costs, in seconds of the account's balance. Pure functions: the single source of
prices for jobs, the playlist preview and the admin (spec "Limits", DESIGN.md section 3).

L is the video's length in whole seconds (rounded up by the caller).
- transcript or subtitles: 1 x L; each target language of a subtitles job: + 1 x L
- burned: m x L, m = 3 (default, 720p), 4 (hd, 1080p), 5 (uhd, 4K);
  each target language of a burned job: + (1 + m) x L (a translation and one more burned video)
- a playlist: the sum over its queued videos.
- a live stream (issue 52): 1 x its seconds of audio, in whole seconds (what a transcript costs).
- a done job corrected (issue 46): each translation of the cues an edit changed, 1 x their seconds
  (what a translated language adds); each video burned again, m x L.
"""

from __future__ import annotations

from collections.abc import Iterable

BURN_MULTIPLIER = {"default": 3, "hd": 4, "uhd": 5}


def base_multiplier(job_type: str, quality: str = "default") -> int:
    if job_type == "burned":
        return BURN_MULTIPLIER[quality]
    return 1


def translation_multiplier(job_type: str, quality: str = "default") -> int:
    if job_type == "burned":
        return 1 + BURN_MULTIPLIER[quality]
    if job_type == "subtitles":
        return 1
    return 0  # transcripts are never translated


def cost_multiplier(job_type: str, quality: str = "default", translations: int = 0) -> int:
    """Seconds of balance one second of video costs."""
    return base_multiplier(job_type, quality) + translations * translation_multiplier(job_type, quality)


def job_cost(job_type: str, seconds: int, quality: str = "default", translations: int = 0) -> int:
    return seconds * cost_multiplier(job_type, quality, translations)


def translation_cost(job_type: str, seconds: int, quality: str = "default") -> int:
    """The share of a job's cost that one of its translations accounts for (what its refund returns)."""
    return seconds * translation_multiplier(job_type, quality)


def live_cost(seconds: int) -> int:
    """A live stream of `seconds` whole seconds of audio: what a transcript of them costs."""
    return job_cost("transcript", seconds)


def live_seconds(balance: int) -> int:
    """Whole seconds of live audio a balance pays for."""
    return max(balance, 0) // cost_multiplier("transcript")


def retranslation_cost(seconds: int, languages: int) -> int:
    """Translating `seconds` of changed cues again into `languages` languages: 1 x per language."""
    return seconds * languages


def reburn_cost(seconds: int, quality: str, videos: int) -> int:
    """Burning `videos` videos of `seconds` again: each a burned video's price."""
    return seconds * BURN_MULTIPLIER[quality] * videos


def playlist_cost(durations: Iterable[int], job_type: str, quality: str = "default", translations: int = 0) -> int:
    return sum(job_cost(job_type, seconds, quality, translations) for seconds in durations)


def affordable_minutes(balance: int, job_type: str, quality: str = "default", translations: int = 0) -> int:
    """Whole minutes of video a balance pays for (the length of a preview)."""
    return max(balance, 0) // (60 * cost_multiplier(job_type, quality, translations))


def format_minutes(seconds: int) -> str:
    """'12 minutes', '1 minute', '2.5 minutes' for messages to people."""
    minutes = round(seconds / 60, 1)
    text = f"{minutes:g}"
    return f"{text} minute" if text == "1" else f"{text} minutes"


def format_signed_minutes(seconds: int) -> str:
    """'+10 minutes', '-2.5 minutes': a ledger movement for people."""
    text = format_minutes(abs(seconds))
    return f"+{text}" if seconds > 0 else (f"-{text}" if seconds < 0 else text)
