"""Look up and download the media behind a user-supplied address, with yt-dlp.

Nothing here knows about Django.  Everything that goes wrong ends as a
:class:`FetchError` whose message can be shown to the user as it is (errors.py).
The address guard is guard.py, the watchdog that stops overrunning fetches watchdog.py.

Safety
------
The address comes from a user, so when ``allow_private`` is False no request may
reach a loopback, private, link-local, multicast, reserved or unspecified
address, neither directly nor through a redirect, nor through a DNS name that
resolves to one.  yt-dlp makes its requests through ``yt_dlp.networking``; every
:class:`YoutubeDL` made here gets a single request handler of ours, a subclass of
yt-dlp's urllib handler, that

* checks the URL of every request (``RequestHandler._send``),
* checks the URL of every redirect hop (a urllib *request processor*: urllib runs
  the processors again for each redirected request, before any connection), and
* checks the address every socket actually connects to (the connection factory
  resolves the name once, checks all addresses, then connects to those very
  addresses, so DNS rebinding between check and connect does not help).

The same handler records every socket it opens, so a download that overruns its
time limit or stalls can be stopped at once by shutting those sockets down.

yt-dlp may run ffmpeg itself (HLS features its native downloader lacks, fix-ups).
ffmpeg's own HTTP client is not guarded, so when ``allow_private`` is False yt-dlp
is pointed at an empty ``ffmpeg_location``: such downloads fail instead of
escaping the checks.  ``fixup`` is off in any case: the pipeline converts the
file with its own ffmpeg run later (see ``audio.to_wav``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yt_dlp
from yt_dlp.networking import Request
from yt_dlp.networking.exceptions import HTTPError as YtHTTPError

from transcription.pipeline.media.ffmpeg_commands import ffprobe_relayed

from ..types import MediaInfo
from .errors import (  # noqa: F401 - the messages callers compare errors with
    MSG_AGE,
    MSG_BOT_CHECK,
    MSG_DRM,
    MSG_FORBIDDEN,
    MSG_GEO,
    MSG_GONE,
    MSG_INVALID,
    MSG_LIVE,
    MSG_LOGIN,
    MSG_MEMBERS,
    MSG_NO_FILE,
    MSG_NO_MEDIA,
    MSG_NOT_FOUND,
    MSG_PLAYLIST,
    MSG_POST_LIVE,
    MSG_PRIVATE,
    MSG_PRIVATE_VIDEO,
    MSG_REMOVED,
    MSG_SCHEME,
    MSG_TIMEOUT_PROBE,
    MSG_UNAVAILABLE,
    MSG_UNSUPPORTED,
    MSG_UPCOMING,
    FetchError,
    download_timeout_message,
    listing_timeout_message,
    map_error,
    stalled_message,
    too_big_message,
    too_long_message,
)
from .guard import VIDEO_FORMAT, Abort, AddressPolicy, Blocked, GuardedYoutubeDL, Session, check_url, ydl_params
from .relay import Relay
from .watchdog import run_watched

__all__ = ["FetchError", "FetchLimits", "check_url", "probe", "download", "extract_listing", "too_long_message"]

# What yt-dlp's extract_info answers: its "info dict" (a page, a video, a playlist and its entries).
Info = dict[str, Any]


def _refuse_live(info: Info) -> None:
    status = info.get("live_status")
    if status == "is_upcoming":
        raise FetchError(MSG_UPCOMING)
    if info.get("is_live") or status == "is_live":
        raise FetchError(MSG_LIVE)
    if status == "post_live":
        raise FetchError(MSG_POST_LIVE)


def _refuse_playlist(info: Info) -> None:
    if info.get("_type") in ("playlist", "multi_video"):
        raise FetchError(MSG_PLAYLIST)


def _duration(info: Info) -> float | None:
    d = info.get("duration")
    try:
        return float(d) if d is not None and float(d) > 0 else None
    except (TypeError, ValueError):
        return None


def _single_video(ydl: GuardedYoutubeDL, info: Info) -> Info:
    """A page holding exactly one video may come back as a one-entry playlist."""
    if info.get("_type") in ("playlist", "multi_video"):
        entries = list(info.get("entries") or [])
        if len(entries) == 1 and entries[0]:
            entry: Info = entries[0]
            if entry.get("_type") in ("url", "url_transparent"):
                resolved: Info = ydl.extract_info(entry["url"], download=False, ie_key=entry.get("ie_key"))
                return resolved
            return entry
        if not entries:
            raise FetchError(MSG_NO_MEDIA)
    return info


def _to_media_info(info: Info, url: str, duration: float | None) -> MediaInfo:
    return MediaInfo(
        id=str(info.get("id") or ""),
        title=str(info.get("title") or info.get("id") or url),
        webpage_url=str(info.get("webpage_url") or url),
        duration=duration,
        is_live=False,
        extractor=str(info.get("extractor_key") or info.get("extractor") or ""),
        language=info.get("language") or None,
    )


# --------------------------------------------------------------------------- ffprobe on a remote file


def _final_url(ydl: GuardedYoutubeDL, url: str, headers: dict[str, str]) -> str:
    """Follow redirects through the guarded handler; the URL the data comes from."""
    for method, extra in (("HEAD", {}), ("GET", {"Range": "bytes=0-0"})):
        try:
            with ydl.urlopen(Request(url, headers={**headers, **extra}, method=method)) as resp:
                final: str = resp.url
                return final
        except Blocked:
            raise
        except YtHTTPError:
            continue
    return url


def _remote_duration(ydl: GuardedYoutubeDL, session: Session, fmt: Info, timeout: float) -> float | None:
    """Duration of a direct media file by ffprobe, or None.  ffprobe reads the file only
    through a loopback relay whose requests go out through ``ydl``'s guarded handler
    (relay.py): it never resolves or connects to the client's host itself, so a name that
    rebinds to a private address after the check does not lead it inside.  Only the http
    protocol (to the relay) and demuxers that do not open other URLs (ffmpeg_commands.ffprobe_relayed)."""
    if shutil.which("ffprobe") is None:
        return None
    url = fmt.get("url")
    if not url:
        return None
    headers = {
        k: v for k, v in (fmt.get("http_headers") or {}).items() if k.lower() in ("user-agent", "referer", "cookie")
    }
    url = _final_url(ydl, url, headers)
    session.check_request_url(url)
    with Relay(ydl, url, headers) as local_url:
        cmd = ffprobe_relayed(
            local_url, "-rw_timeout", str(int(timeout * 1_000_000)), "-show_entries", "format=duration", "-of", "json"
        )
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        session.register_process(proc)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return None
    if proc.returncode != 0:
        return None
    try:
        return _duration({"duration": json.loads(out or b"{}").get("format", {}).get("duration")})
    except ValueError:
        return None


# --------------------------------------------------------------------------- operator's options


@contextlib.contextmanager
def _operator_params(proxy: str | None, cookies_file: str | None) -> Iterator[dict[str, str]]:
    """yt-dlp parameters for the operator's proxy and cookies file. yt-dlp writes its cookie jar
    back to the file when it closes, and several workers share the operator's file: each run gets
    a private copy, removed afterwards. Through the proxy the guard still checks every URL (and
    redirect) before it is requested; only the connection check, which would see the proxy's own
    address, is left out (guard._GuardProcessor._open)."""
    params: dict[str, str] = {}
    if proxy:
        params["proxy"] = proxy
    if not cookies_file:
        yield params
        return
    folder = tempfile.mkdtemp(prefix="cookies-")
    try:
        copy = Path(folder) / "cookies.txt"
        shutil.copyfile(cookies_file, copy)
        params["cookiefile"] = str(copy)
        yield params
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- public API


@dataclass(frozen=True)
class FetchLimits:
    """The operator's limits and options for fetching media, handed whole to :func:`probe` and
    :func:`download` (the service builds them from its settings: transcription.stages.pipeline_options).

    ``allow_private``: whether requests may reach private addresses (see Safety above).
    ``max_duration``: media known to be longer (seconds) is refused; None: no limit.
    ``probe_timeout``: yt-dlp's socket timeout and ffprobe's in a probe, stopped after three times it.
    ``download_timeout``, ``stall_timeout`` (seconds without data, also yt-dlp's socket timeout)
    and ``max_bytes``: when a download is stopped. ``proxy`` (http or https) and ``cookies_file``
    (Netscape format): for sites that block or throttle server addresses."""

    allow_private: bool
    max_duration: float | None = None
    probe_timeout: float = 30
    download_timeout: float = 3 * 3600
    max_bytes: int = 2 * 1024**3
    stall_timeout: float = 60
    proxy: str | None = None
    cookies_file: str | None = None


def probe(url: str, limits: FetchLimits, *, allowed_networks: Sequence[str] = ()) -> MediaInfo:
    """What is at ``url`` (yt-dlp metadata only, nothing downloaded).

    ``limits.probe_timeout`` is yt-dlp's socket timeout and ffprobe's; the whole probe is
    stopped after three times it.  Refuses (``FetchError``) live and
    upcoming broadcasts, playlists, media longer than ``limits.max_duration`` seconds,
    private or removed videos, pages without media, and any request to a private
    address unless ``limits.allow_private``.  For direct files whose length yt-dlp does
    not know, ffprobe reads it from the server; ``duration`` stays None when that
    fails too.  ``allowed_networks``: private networks let through all the same (tests).
    """
    allow_private, max_duration, timeout = limits.allow_private, limits.max_duration, limits.probe_timeout
    policy = AddressPolicy(allow_private, allowed_networks)
    policy.check_url(url)
    session = Session(policy)

    def work() -> MediaInfo:
        no_ffmpeg = None if allow_private else tempfile.mkdtemp(prefix="no-ffmpeg-")
        try:
            with (
                _operator_params(limits.proxy, limits.cookies_file) as operator,
                GuardedYoutubeDL(
                    {**ydl_params(session, socket_timeout=timeout, no_ffmpeg_dir=no_ffmpeg), **operator}, session
                ) as ydl,
            ):
                info = ydl.extract_info(url, download=False)
                if not info:
                    raise FetchError(MSG_NO_MEDIA)
                info = _single_video(ydl, info)
                _refuse_playlist(info)
                _refuse_live(info)
                duration = _duration(info)
                if (
                    duration is None
                    and str(info.get("protocol", "")).startswith("http")
                    and "+" not in str(info.get("protocol"))
                ):
                    duration = _remote_duration(ydl, session, info, timeout)
                if max_duration is not None and duration is not None and duration > max_duration:
                    raise FetchError(too_long_message(duration, max_duration))
                return _to_media_info(info, url, duration)
        finally:
            if no_ffmpeg:
                shutil.rmtree(no_ffmpeg, ignore_errors=True)

    return run_watched(session, work, deadline=3 * timeout, on_deadline=FetchError(MSG_TIMEOUT_PROBE))


def download(
    url: str,
    dest_dir: str | os.PathLike[str],
    limits: FetchLimits,
    *,
    video: bool = False,
    allowed_networks: Sequence[str] = (),
) -> Path:
    """Download the best audio (or, failing that, the best single file) of ``url``
    into ``dest_dir`` and return the file's path; with ``video`` the best single file
    with picture and sound.

    Stopped with ``FetchError`` after ``limits.download_timeout`` seconds in all, after
    ``limits.stall_timeout`` seconds without any data (also yt-dlp's socket timeout), or
    as soon as the file is known to exceed ``limits.max_bytes`` (announced size or bytes
    received).  Live broadcasts, playlists and media known to be longer than
    ``limits.max_duration`` are refused before downloading.  Partial files are removed
    on failure.
    """
    policy = AddressPolicy(limits.allow_private, allowed_networks)
    policy.check_url(url)
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.iterdir())
    session = Session(policy)
    hooks = _DownloadLimits(session, max_bytes=limits.max_bytes, max_duration=limits.max_duration)

    def work() -> Path:
        no_ffmpeg = None if limits.allow_private else tempfile.mkdtemp(prefix="no-ffmpeg-")
        try:
            params = ydl_params(session, socket_timeout=limits.stall_timeout, no_ffmpeg_dir=no_ffmpeg)
            params.update(
                {
                    "outtmpl": {"default": str(dest / "media.%(ext)s")},
                    **({"format": VIDEO_FORMAT} if video else {}),
                    "match_filter": hooks.match_filter,
                    "progress_hooks": [hooks.progress],
                }
            )
            with (
                _operator_params(limits.proxy, limits.cookies_file) as operator,
                GuardedYoutubeDL({**params, **operator}, session) as ydl,
            ):
                return _downloaded_file(ydl, url, session)
        finally:
            if no_ffmpeg:
                shutil.rmtree(no_ffmpeg, ignore_errors=True)

    try:
        return run_watched(
            session,
            work,
            deadline=limits.download_timeout,
            on_deadline=FetchError(download_timeout_message(limits.download_timeout)),
            stall=limits.stall_timeout,
            on_stall=FetchError(stalled_message(limits.stall_timeout)),
        )
    except FetchError:
        _remove_new_files(dest, before)
        raise


class _DownloadLimits:
    """yt-dlp's hooks during a download: refuse playlists, live broadcasts, media too long or too
    big before downloading, and stop once more than ``max_bytes`` arrived."""

    def __init__(self, session: Session, *, max_bytes: int, max_duration: float | None):
        self.session, self.max_bytes, self.max_duration = session, max_bytes, max_duration

    def refuse(self, error: FetchError) -> NoReturn:
        self.session.fail(error)
        raise Abort()

    def match_filter(self, info: Info, *, incomplete: bool = False) -> None:
        if self.session.cancelled.is_set():
            raise Abort()
        try:
            _refuse_playlist(info)
            _refuse_live(info)
        except FetchError as e:
            self.refuse(e)
        duration = _duration(info)
        if self.max_duration is not None and duration is not None and duration > self.max_duration:
            self.refuse(FetchError(too_long_message(duration, self.max_duration)))
        if not incomplete:
            size = info.get("filesize") or info.get("filesize_approx")
            if size and size > self.max_bytes:
                self.refuse(FetchError(too_big_message(self.max_bytes)))
            self.session.start_download()
        return None

    def progress(self, d: dict[str, Any]) -> None:
        if self.session.cancelled.is_set():
            raise Abort()
        got = d.get("downloaded_bytes") or 0
        self.session.progress(got)
        total = d.get("total_bytes") or 0
        if got > self.max_bytes or total > self.max_bytes:
            self.session.abort(FetchError(too_big_message(self.max_bytes)))
            raise Abort()


def _downloaded_file(ydl: GuardedYoutubeDL, url: str, session: Session) -> Path:
    """Download ``url`` with ``ydl``: the file written, or FetchError saying why there is none."""
    info: Info = ydl.extract_info(url, download=True)
    if not info:
        raise FetchError(MSG_NO_MEDIA)
    if info.get("_type") in ("playlist", "multi_video"):
        entries = list(info.get("entries") or [])
        if len(entries) != 1:
            raise FetchError(MSG_PLAYLIST if entries else MSG_NO_MEDIA)
        info = entries[0]
        if info.get("_type") in ("url", "url_transparent"):
            info = ydl.extract_info(info["url"], download=True, ie_key=info.get("ie_key"))
    errors = ydl.params["logger"].errors
    for d in info.get("requested_downloads") or []:
        path = d.get("filepath") or d.get("_filename")
        if path and Path(path).is_file():
            return Path(path)
    if errors:
        raise map_error(yt_dlp.utils.DownloadError(errors[-1]), session)
    raise FetchError(MSG_NO_FILE)


def _remove_new_files(dest: Path, before: set[Path]) -> None:
    """Partial files of a failed download: whatever appeared in ``dest`` since ``before``."""
    for p in set(dest.iterdir()) - before:
        try:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink()
        except OSError:
            pass


def extract_listing(
    url: str,
    *,
    allow_private: bool,
    timeout: float = 30,
    deadline: float | None = None,
    allowed_networks: Sequence[str] = (),
    proxy: str | None = None,
    cookies_file: str | None = None,
) -> Info:
    """yt-dlp's flat extraction of a playlist or channel page: the entries as the page lists
    them, none of them resolved or downloaded. Goes through the same address guard as probe().
    Stopped after ``deadline`` seconds in all (3 * ``timeout`` unless given)."""
    policy = AddressPolicy(allow_private, allowed_networks)
    policy.check_url(url)
    session = Session(policy)

    def work() -> Info:
        params = {
            **ydl_params(session, socket_timeout=timeout, no_ffmpeg_dir=None),
            "noplaylist": False,
            "playlistend": 1000,
        }
        with (
            _operator_params(proxy, cookies_file) as operator,
            GuardedYoutubeDL({**params, **operator}, session) as ydl,
        ):
            info: Info = ydl.extract_info(url, download=False)
            if not info:
                raise FetchError(MSG_NO_MEDIA)
            return info

    if deadline is None:
        return run_watched(session, work, deadline=3 * timeout, on_deadline=FetchError(MSG_TIMEOUT_PROBE))
    # A listing made inside a web request: bounded as a whole, and quick to give up (grace).
    return run_watched(
        session, work, deadline=deadline, on_deadline=FetchError(listing_timeout_message(deadline)), grace=1.0
    )
