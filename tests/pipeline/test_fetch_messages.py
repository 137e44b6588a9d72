"""The sentences a failed fetch says: yt-dlp's errors translated, limits written out."""

from __future__ import annotations

import pytest

from transcription.pipeline import fetch
from transcription.pipeline.fetch import errors, guard


@pytest.mark.parametrize(
    "duration, limit, message",
    [
        (48000, 43200, "The video is 13 h 20 min long; the limit is 12 hours."),
        (3600 * 13, 43200, "The video is 13 h long; the limit is 12 hours."),
        (2700, 1800, "The video is 45 min long; the limit is 30 minutes."),
        (7200, 3600, "The video is 2 h long; the limit is 1 hour."),
    ],
)
def test_too_long_message(duration, limit, message):
    assert fetch.too_long_message(duration, limit) == message


@pytest.mark.parametrize(
    "ytdlp_message, message",
    [
        (
            "ERROR: [youtube] abc: Private video. Sign in if you've been granted access to this video",
            "This video is private.",
        ),
        (
            "ERROR: [youtube] abc: Video unavailable. This video has been removed by the uploader",
            "This video has been removed.",
        ),
        (
            "ERROR: [youtube] abc: Video unavailable. This video is no longer available because the YouTube "
            "account associated with this video has been terminated.",
            "This video has been removed.",
        ),
        ("ERROR: [youtube] abc: Video unavailable", "This video is unavailable."),
        (
            "ERROR: [youtube] abc: This live event will begin in 3 hours.",
            "This broadcast has not started yet; try again when it has ended.",
        ),
        (
            "ERROR: [youtube] abc: Sign in to confirm your age. This video may be inappropriate for some users.",
            "This video is age-restricted and cannot be downloaded without signing in.",
        ),
        (
            "ERROR: [youtube] abc: Join this channel to get access to members-only content like this video",
            "This video is available to members only.",
        ),
        (
            "ERROR: [youtube] abc: Sign in to confirm you're not a bot. Use --cookies-from-browser",
            "The site refused to serve this server (it asks to prove it is not a bot); try again later.",
        ),
        (
            "ERROR: [KnownDRM] netflix: The requested site is known to use DRM protection. It will NOT be supported.",
            "This video is protected by DRM and cannot be downloaded.",
        ),
        (
            "ERROR: [vimeo] 123: Unable to download JSON metadata: HTTP Error 404: Not Found",
            "The page was not found (HTTP 404).",
        ),
        (
            "ERROR: [generic] x: Requested format is not available. Use --list-formats for a list of available formats",
            "No video or audio was found at this address.",
        ),
        (
            "ERROR: [xyz] 1: Something odd happened (caused by <Boom>); please report this issue on GitHub",
            "The video could not be fetched: Something odd happened.",
        ),
    ],
)
def test_ytdlp_error_messages_are_translated(ytdlp_message, message):
    import yt_dlp

    session = guard.Session(guard.AddressPolicy(True))
    assert str(errors.map_error(yt_dlp.utils.DownloadError(ytdlp_message), session)) == message
