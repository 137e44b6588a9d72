"""List a playlist or channel with yt-dlp's flat extraction: nothing is downloaded or resolved
beyond the listing itself, so a preview costs one request to the playlist page."""

from __future__ import annotations

import math
import re
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from yt_dlp.utils import unsmuggle_url

from transcription.pipeline.fetch import FetchError, FetchLimits, extract_listing, probe

CHANNEL_TABS = ("videos", "streams", "shorts")
_CHANNEL_PATH = re.compile(r"^/(?:@[^/]+|channel/[^/]+|c/[^/]+|user/[^/]+)(?:/(?P<tab>[^/?#]+))?/?$")
_UNAVAILABLE_TITLES = {"[private video]", "[deleted video]", "[unavailable video]"}


class PlaylistError(Exception):
    """The link cannot be listed as a playlist; the message is for the client."""


@dataclass
class PlaylistEntry:
    id: str
    title: str
    url: str
    duration: int | None
    thumbnail: str = ""
    is_age_restricted: bool = False
    is_live: bool = False
    language: str | None = None


@dataclass
class PlaylistListing:
    id: str
    title: str
    total: int
    skipped: int
    is_channel: bool
    tab: str
    videos: list[PlaylistEntry] = field(default_factory=list)
    # Set once find_durations has looked for the lengths the listing did not give.
    durations_looked_up: bool = False


def channel_tab(url: str) -> tuple[bool, str]:
    """(is_channel, tab) from a URL's path: /@name, /@name/streams, /channel/ID/shorts, ..."""
    match = _CHANNEL_PATH.match(urlparse(url).path or "/")
    if not match:
        return False, "videos"
    tab = (match.group("tab") or "videos").lower()
    return True, tab if tab in CHANNEL_TABS else "videos"


def channel_tab_url(url: str) -> str:
    """A channel URL naming its tab, so yt-dlp lists that tab and not the channel's home page."""
    is_channel, tab = channel_tab(url)
    if not is_channel:
        return url
    parsed = urlparse(url)
    path = _CHANNEL_PATH.match(parsed.path)
    base = parsed.path.rstrip("/")
    if path and path.group("tab"):
        base = base[: -len(path.group("tab"))].rstrip("/")
    return parsed._replace(path=f"{base}/{tab}").geturl()


def _is_unavailable(entry: dict[str, Any]) -> bool:
    title = (entry.get("title") or "").strip().lower()
    availability = entry.get("availability")
    return title in _UNAVAILABLE_TITLES or availability in {"private", "needs_auth", "subscriber_only", "premium_only"}


def _is_live(entry: dict[str, Any]) -> bool:
    return bool(entry.get("is_live")) or entry.get("live_status") in {"is_live", "is_upcoming", "post_live"}


def _entry(entry: dict[str, Any]) -> PlaylistEntry:
    duration = entry.get("duration")
    thumbnails = entry.get("thumbnails") or []
    thumbnail = entry.get("thumbnail") or (thumbnails[-1].get("url") if thumbnails else "") or ""
    # Feed entries carry their guid smuggled into the URL; take it out so the URL is clean.
    url, smuggled = unsmuggle_url(entry.get("url") or entry.get("webpage_url") or "", {})
    return PlaylistEntry(
        id=str(entry.get("id") or (smuggled or {}).get("force_videoid") or url),
        title=entry.get("title") or "",
        url=url,
        duration=int(-(-float(duration) // 1)) if duration else None,
        thumbnail=thumbnail,
        is_age_restricted=(entry.get("age_limit") or 0) >= 18,
        is_live=_is_live(entry),
        language=entry.get("language"),
    )


def list_playlist(
    url: str,
    *,
    allow_private: bool,
    max_videos: int,
    timeout: int = 30,
    deadline: float | None = None,
    proxy: str | None = None,
    cookies_file: str | None = None,
) -> PlaylistListing:
    """The playlist or channel at `url`: its first `max_videos` available videos, and how many it
    skipped (private, deleted, live or upcoming). Raises PlaylistError with a message for the client,
    also when the listing takes longer than `deadline` seconds in all."""
    is_channel, tab = channel_tab(url)
    try:
        info = extract_listing(
            channel_tab_url(url),
            allow_private=allow_private,
            timeout=timeout,
            deadline=deadline,
            proxy=proxy,
            cookies_file=cookies_file,
        )
    except FetchError as error:
        raise PlaylistError(str(error)) from None
    if not info or info.get("_type") not in ("playlist", "multi_video"):
        raise PlaylistError(
            "This address is a single video, not a playlist or channel; queue it with /v1/api/transcribe, "
            "/v1/api/subtitles or /v1/api/burn-subtitles."
        )
    entries = [e for e in (info.get("entries") or []) if e]
    videos: list[PlaylistEntry] = []
    skipped = 0
    for entry in entries:
        if _is_unavailable(entry) or _is_live(entry):
            skipped += 1
        elif len(videos) < max_videos:
            videos.append(_entry(entry))
    return PlaylistListing(
        id="" if is_channel else str(info.get("id") or ""),
        title=info.get("title") or "",
        total=int(info.get("playlist_count") or len(entries)),
        skipped=skipped,
        is_channel=is_channel,
        tab=tab,
        videos=videos,
    )


# Lengths looked up at once for one listing (each a probe: yt-dlp's metadata, and for a direct file
# ffprobe reading its header).
DURATION_PROBES_AT_ONCE = 4


def find_durations(
    listing: PlaylistListing,
    *,
    allow_private: bool,
    deadline: float,
    proxy: str | None = None,
    cookies_file: str | None = None,
) -> None:
    """Fill in the lengths the listing did not give (an RSS feed without itunes:duration) by
    probing each video: metadata and the media's header only, through the address guard, all of
    them within `deadline` seconds. A length that cannot be found in time stays None."""
    listing.durations_looked_up = True
    missing = [video for video in listing.videos if not video.duration]
    if not missing or deadline < 1:
        return
    started = time.monotonic()
    # probe() stops itself after 3 * timeout: every probe has ended by the deadline.
    timeout = deadline / 3

    def length(video: PlaylistEntry) -> int | None:
        remaining = deadline - (time.monotonic() - started)
        if remaining < 1:
            return None
        try:
            info = probe(
                video.url,
                FetchLimits(
                    allow_private=allow_private,
                    probe_timeout=min(timeout, remaining / 3),
                    proxy=proxy,
                    cookies_file=cookies_file,
                ),
            )
        except FetchError:
            return None
        return math.ceil(info.duration) if info.duration else None

    pool = ThreadPoolExecutor(max_workers=DURATION_PROBES_AT_ONCE, thread_name_prefix="duration")
    futures = {pool.submit(length, video): video for video in missing}
    done, _ = wait(futures, timeout=deadline)
    pool.shutdown(wait=False, cancel_futures=True)
    for future in done:
        if future.exception() is None and future.result():
            futures[future].duration = future.result()
