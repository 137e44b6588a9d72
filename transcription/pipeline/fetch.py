"""Look up and download the media behind a user-supplied address, with yt-dlp.

Nothing here knows about Django.  Everything that goes wrong ends as a
:class:`FetchError` whose message can be shown to the user as it is.

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

import functools
import http.client
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import yt_dlp
from yt_dlp.networking import Request
from yt_dlp.networking._urllib import HTTPHandler, UrllibRH
from yt_dlp.networking.exceptions import HTTPError as YtHTTPError
from yt_dlp.networking.exceptions import RequestError
from yt_dlp.utils import DownloadCancelled, GeoRestrictedError, UnsupportedError

from .types import MediaInfo

__all__ = ["FetchError", "check_url", "probe", "download"]

MAX_DURATION = 12 * 3600

# Only protocols that yt-dlp downloads itself, through the guarded handler.
_FORMAT = (
    "bestaudio[protocol^=http]/bestaudio[protocol^=m3u8]"
    "/best[protocol^=http]/best[protocol^=m3u8]"
)
# For burned-in subtitles: the best single file that has both picture and sound. Merging separate
# video and audio streams would need ffmpeg inside yt-dlp, which stays disabled (it would fetch
# URLs past the address guard).
_VIDEO_FORMAT = "best[protocol^=http]/best[protocol^=m3u8]"
# Demuxers ffprobe may use on a remote file: none of them opens other URLs.
_FFPROBE_FORMATS = "mov,mp4,m4a,matroska,webm,mp3,ogg,wav,w64,flac,aac,mpegts,avi,flv,asf,aiff,caf,amr,au,wv"


class FetchError(Exception):
    """Fetching failed; ``str(error)`` is a sentence for the user."""


# --------------------------------------------------------------------------- messages

MSG_SCHEME = "Only http and https addresses are accepted."
MSG_INVALID = "The address is not valid."
MSG_PRIVATE = "The address points to a private network address, which is not allowed."
MSG_LIVE = "Live broadcasts cannot be transcribed; try again when the broadcast has ended."
MSG_UPCOMING = "This broadcast has not started yet; try again when it has ended."
MSG_POST_LIVE = "The broadcast has just ended and the site is still processing it; try again later."
MSG_PRIVATE_VIDEO = "This video is private."
MSG_REMOVED = "This video has been removed."
MSG_UNAVAILABLE = "This video is unavailable."
MSG_AGE = "This video is age-restricted and cannot be downloaded without signing in."
MSG_MEMBERS = "This video is available to members only."
MSG_LOGIN = "This video requires signing in to the site."
MSG_GEO = "This video is not available in the country the server is in."
MSG_DRM = "This video is protected by DRM and cannot be downloaded."
MSG_BOT_CHECK = "The site refused to serve this server (it asks to prove it is not a bot); try again later."
MSG_UNSUPPORTED = "This site is not supported."
MSG_NO_MEDIA = "No video or audio was found at this address."
MSG_PLAYLIST = "This address is a playlist or a channel; please submit the address of a single video."
MSG_NOT_FOUND = "The page was not found (HTTP 404)."
MSG_GONE = "The page has been removed (HTTP 410)."
MSG_FORBIDDEN = "Access to the page was refused (HTTP 403)."
MSG_TIMEOUT_PROBE = "The site took too long to answer."
MSG_NO_FILE = "The download finished without producing a file."


def _fmt_duration(seconds: float) -> str:
    """13 h 20 min, 45 min, 30 s."""
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h} h {m} min" if m else f"{h} h"
    if m:
        return f"{m} min"
    return f"{s} s"


def _fmt_limit(seconds: float) -> str:
    """12 hours, 1 hour, 90 minutes, 45 seconds."""
    seconds = int(round(seconds))
    if seconds % 3600 == 0:
        h = seconds // 3600
        return f"{h} hour" + ("s" if h != 1 else "")
    if seconds % 60 == 0:
        m = seconds // 60
        return f"{m} minute" + ("s" if m != 1 else "")
    return f"{seconds} seconds"


def _fmt_bytes(n: float) -> str:
    if n >= 1024**3:
        return f"{n / 1024**3:.1f} GB".replace(".0 GB", " GB")
    if n >= 1024**2:
        return f"{round(n / 1024**2)} MB"
    return f"{max(1, round(n / 1024))} KB"


def too_long_message(duration: float, limit: float) -> str:
    return f"The video is {_fmt_duration(duration)} long; the limit is {_fmt_limit(limit)}."


def too_big_message(limit: int) -> str:
    return f"The file is larger than the limit of {_fmt_bytes(limit)}."


def download_timeout_message(limit: float) -> str:
    return f"The download took longer than {_fmt_limit(limit)} and was stopped."


def stalled_message(seconds: float) -> str:
    return f"The download stalled: no data arrived for {_fmt_limit(seconds)}."


# --------------------------------------------------------------------------- address policy


def _is_forbidden_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None and _is_forbidden_ip(mapped):
            return True
    return (
        ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast
        or ip.is_reserved or ip.is_unspecified or not ip.is_global
    )


class _AddressPolicy:
    """Which hosts may be contacted.  ``allowed_networks`` are let through even
    when ``allow_private`` is False (for example an internal media server)."""

    def __init__(self, allow_private: bool, allowed_networks: Iterable[str] = ()):
        self.allow_private = allow_private
        self.allowed_networks = tuple(ipaddress.ip_network(n, strict=False) for n in allowed_networks)

    def ip_allowed(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        if self.allow_private or not _is_forbidden_ip(ip):
            return True
        return any(ip.version == net.version and ip in net for net in self.allowed_networks)

    @staticmethod
    def split(url: str) -> tuple[str, str, int]:
        """(scheme, host, port) or FetchError."""
        try:
            parts = urllib.parse.urlsplit(url.strip())
            scheme = parts.scheme.lower()
            if scheme not in ("http", "https"):
                raise FetchError(MSG_SCHEME)
            host = parts.hostname
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            raise FetchError(MSG_INVALID) from None
        if not host:
            raise FetchError(MSG_INVALID)
        return scheme, host, port

    def check_url(self, url: str) -> None:
        _, host, port = self.split(url)
        if self.allow_private:
            return
        self.check_addrinfo(host, _resolve(host, port))

    def check_addrinfo(self, host: str, infos: list) -> None:
        if self.allow_private:
            return
        if not infos:
            raise FetchError(f"The address could not be reached: the host name {host} could not be resolved.")
        for info in infos:
            ip = ipaddress.ip_address(info[4][0].split("%", 1)[0])
            if not self.ip_allowed(ip):
                raise FetchError(MSG_PRIVATE)


def _resolve(host: str, port: int) -> list:
    try:
        return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise FetchError(f"The address could not be reached: the host name {host} could not be resolved.") from None


def check_url(url: str, *, allow_private: bool, allowed_networks: Sequence[str] = ()) -> None:
    """Refuse what may not be fetched, before any request is made.

    Only http and https.  Unless ``allow_private``, the host is resolved and every
    address it resolves to must be public (not loopback, private, link-local,
    multicast, reserved or unspecified), or inside one of ``allowed_networks``
    (CIDR strings).  Raises :class:`FetchError`.
    """
    _AddressPolicy(allow_private, allowed_networks).check_url(url)


# --------------------------------------------------------------------------- guarded networking


class _Blocked(RequestError):
    """A request refused by the address policy (travels through yt-dlp like a network error)."""


class _Abort(DownloadCancelled):
    """Raised inside yt-dlp to stop work; yt-dlp lets DownloadCancelled through."""

    msg = "stopped by the fetch watchdog"


class _Session:
    """State shared by one probe/download: policy, open sockets, activity, outcome."""

    def __init__(self, policy: _AddressPolicy):
        self.policy = policy
        self.lock = threading.Lock()
        self.sockets: "weakref.WeakSet[socket.socket]" = weakref.WeakSet()
        self.processes: "weakref.WeakSet[subprocess.Popen]" = weakref.WeakSet()
        self.cancelled = threading.Event()
        self.failure: FetchError | None = None  # set by the policy or the watchdog; wins over anything else
        self.last_activity = time.monotonic()
        # Once the download proper has begun, only new bytes count as activity:
        # a server that accepts connections and then sends nothing is stalled,
        # however often yt-dlp retries.
        self.downloading = False
        self._bytes = -1
        # (scheme, host, port) whose URL-level check passed: HLS/DASH make one request
        # per fragment; the connection-level check still runs for every connection.
        self._checked: set[tuple[str, str, int]] = set()

    def touch(self) -> None:
        if not self.downloading:
            self.last_activity = time.monotonic()

    def start_download(self) -> None:
        self.downloading = True
        self.last_activity = time.monotonic()

    def progress(self, nbytes: int) -> None:
        if nbytes != self._bytes:
            self._bytes = nbytes
            self.last_activity = time.monotonic()

    def fail(self, error: FetchError) -> None:
        with self.lock:
            if self.failure is None:
                self.failure = error

    def check_request_url(self, url: str) -> None:
        if self.cancelled.is_set():
            raise _Abort()
        self.touch()
        try:
            key = self.policy.split(url)
            if key not in self._checked:
                self.policy.check_url(url)
                self._checked.add(key)
        except FetchError as e:
            self.fail(e)
            raise _Blocked(str(e)) from None

    def connect(self, address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None, *, check=True):
        """socket.create_connection that checks the addresses it connects to."""
        if self.cancelled.is_set():
            raise _Abort()
        host, port = address
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        if check:
            try:
                self.policy.check_addrinfo(host, infos)
            except FetchError as e:
                self.fail(e)
                raise _Blocked(str(e)) from None
        if source_address is not None:
            family = socket.AF_INET6 if ":" in source_address[0] else socket.AF_INET
            infos = [i for i in infos if i[0] == family]
        err: OSError | None = OSError(f"no usable address for {host}")
        for family, type_, proto, _, sockaddr in infos:
            sock = socket.socket(family, type_, proto)
            try:
                if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                    sock.settimeout(timeout)
                if source_address is not None:
                    sock.bind(source_address)
                self.register(sock)
                sock.connect(sockaddr)
                self.touch()
                return sock
            except OSError as e:
                err = e
                sock.close()
        raise err

    def register(self, sock) -> None:
        with self.lock:
            self.sockets.add(sock)
        if self.cancelled.is_set():
            _shutdown(sock)

    def register_process(self, proc: subprocess.Popen) -> None:
        with self.lock:
            self.processes.add(proc)
        if self.cancelled.is_set():
            proc.kill()

    def abort(self, error: FetchError | None = None) -> None:
        if error is not None:
            self.fail(error)
        self.cancelled.set()
        with self.lock:
            sockets, procs = list(self.sockets), list(self.processes)
        for s in sockets:
            _shutdown(s)
        for p in procs:
            try:
                p.kill()
            except OSError:
                pass


def _shutdown(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _GuardProcessor(urllib.request.BaseHandler):
    """Added to yt-dlp's urllib opener.  urllib runs request processors for the first
    request and again for every redirected one, so each hop's URL is checked here
    before it is opened.  ``http_open``/``https_open`` come before yt-dlp's own
    HTTPHandler (lower handler_order) and open connections through the session."""

    handler_order = 400  # after ProxyHandler (100), before HTTPHandler (500)

    def __init__(self, session: _Session, http_handler: HTTPHandler):
        self.session = session
        self.http = http_handler

    def _check(self, req):
        self.session.check_request_url(req.full_url)
        return req

    http_request = https_request = ftp_request = file_request = _check

    def http_open(self, req):
        return self._open(http.client.HTTPConnection, req)

    def https_open(self, req):
        return self._open(http.client.HTTPSConnection, req, context=self.http._context)

    def _open(self, base, req, **kwargs):
        conn_class = self.http._make_conn_class(base, req)
        # Through a proxy the socket goes to the proxy, not to the URL's host: the URL
        # checks above still apply, the connection check would only see the proxy.
        proxied = req.selector == req.full_url or getattr(req, "_tunnel_host", None)
        return self.http.do_open(
            functools.partial(self._connection, conn_class, not proxied), req, **kwargs)

    def _connection(self, conn_class, check, *args, **kwargs):
        hc = conn_class(*args, **kwargs)
        session = self.session
        if hasattr(hc, "_create_connection"):
            hc._create_connection = functools.partial(session.connect, check=check)
        if self.http._source_address is not None:
            hc.source_address = (self.http._source_address, 0)
        connect = hc.connect

        def connect_and_register():
            connect()
            session.register(hc.sock)  # for https: the TLS socket wrapped around ours

        hc.connect = connect_and_register
        return hc


class _GuardedUrllibRH(UrllibRH):
    _SUPPORTED_URL_SCHEMES = ("http", "https", "data")

    def __init__(self, *, session: _Session, **kwargs):
        super().__init__(**kwargs)
        self._session = session

    def _create_instance(self, proxies, cookiejar, legacy_ssl_support=None):
        opener = super()._create_instance(proxies, cookiejar, legacy_ssl_support)
        http_handler = next(h for h in opener.handlers if isinstance(h, HTTPHandler))
        opener.add_handler(_GuardProcessor(self._session, http_handler))
        return opener

    def _send(self, request):
        if urllib.parse.urlsplit(request.url).scheme.lower() != "data":
            self._session.check_request_url(request.url)
        return super()._send(request)


class _YoutubeDL(yt_dlp.YoutubeDL):
    """YoutubeDL whose only request handler is the guarded one."""

    def __init__(self, params: dict, session: _Session):
        self._fetch_session = session
        super().__init__(params)

    @functools.cached_property
    def _request_director(self):
        return self.build_request_director([functools.partial(_GuardedUrllibRH, session=self._fetch_session)])


class _Log:
    """yt-dlp logger that keeps messages instead of printing them."""

    def __init__(self):
        self.warnings: list[str] = []
        self.errors: list[str] = []

    def debug(self, msg):
        pass

    def info(self, msg):
        pass

    def warning(self, msg):
        self.warnings.append(msg)

    def error(self, msg):
        self.errors.append(msg)


def _params(session: _Session, *, socket_timeout: float, no_ffmpeg_dir: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "logger": _Log(),
        "noplaylist": True,
        "extract_flat": "in_playlist",  # a playlist is refused, not expanded
        "format": _FORMAT,
        "socket_timeout": socket_timeout,
        "retries": 2,
        "fragment_retries": 2,
        "extractor_retries": 1,
        "cachedir": False,
        "check_formats": False,
        "external_downloader": {"default": "native"},
        "fixup": "never",
        "overwrites": True,
        "continuedl": False,
        "restrictfilenames": True,
        "color": "no_color",
    }
    if no_ffmpeg_dir is not None:
        params["ffmpeg_location"] = no_ffmpeg_dir
    return params


# --------------------------------------------------------------------------- error mapping


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or any(e is s for s in seen) or len(seen) > 20:
            continue
        seen.append(e)
        exc_info = getattr(e, "exc_info", None)
        if isinstance(exc_info, tuple) and len(exc_info) > 1:
            todo.append(exc_info[1])
        for attr in ("cause", "__cause__", "__context__", "reason"):
            nxt = getattr(e, attr, None)
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return seen


_PATTERNS: list[tuple[str, str]] = [
    (r"not a bot|captcha|rate.limit", MSG_BOT_CHECK),
    (r"private video|video is private|this video has been made private|is a private", MSG_PRIVATE_VIDEO),
    (r"will begin in|premieres in|scheduled to start|is_upcoming|live event will", MSG_UPCOMING),
    (r"known to use drm|drm protect", MSG_DRM),
    (r"will not be supported|is not supported|site is not supported", MSG_UNSUPPORTED),
    (r"confirm your age|age.restricted|inappropriate for some users", MSG_AGE),
    (r"members.only|join this channel", MSG_MEMBERS),
    (r"not available (?:in|from) your (?:country|location)|geo.?restrict", MSG_GEO),
    (r"been removed|removed by|terminated|copyright claim|no longer available|deleted", MSG_REMOVED),
    (r"unavailable|not available|does not exist", MSG_UNAVAILABLE),
    (r"sign in|log ?in to|login required|requires? (?:an )?account|authentication", MSG_LOGIN),
]


def _clean_ytdlp_message(msg: str) -> str:
    msg = re.sub(r"^\s*ERROR:\s*", "", msg)
    msg = re.sub(r"^\[[^\]]+\]\s*(?:[^:\s]+:\s*)?", "", msg)
    msg = re.sub(r";?\s*please report this issue.*$", "", msg, flags=re.S | re.I)
    msg = re.sub(r"\s*\(caused by .*\)\s*$", "", msg, flags=re.S)
    return msg.strip().rstrip(".") + "."


def _transport_reason(chain: list[BaseException]) -> str | None:
    for e in chain:
        if isinstance(e, socket.gaierror):
            return "the host name could not be resolved"
        if isinstance(e, ConnectionRefusedError):
            return "the connection was refused"
        if isinstance(e, (socket.timeout, TimeoutError)):
            return "the connection timed out"
        if isinstance(e, ConnectionResetError):
            return "the connection was reset"
        if e.__class__.__name__ in ("SSLCertVerificationError", "CertificateVerifyError"):
            return "its security certificate is not valid"
        if e.__class__.__name__ in ("SSLError",):
            return "the secure connection failed"
    for e in chain:
        if e.__class__.__name__ in ("TransportError", "IncompleteRead", "URLError") or isinstance(e, OSError):
            return "the connection failed"
    return None


def _map_error(exc: BaseException, session: _Session) -> FetchError:
    if session.failure is not None:
        return session.failure
    if isinstance(exc, FetchError):
        return exc
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, FetchError):
            return e
    text = " ".join(str(e) for e in chain)

    for e in chain:
        if isinstance(e, GeoRestrictedError):
            return FetchError(MSG_GEO)
        if isinstance(e, UnsupportedError):
            return FetchError(MSG_NO_MEDIA)

    status = None
    for e in chain:
        if isinstance(e, YtHTTPError):
            status = e.status
            break
        code = getattr(e, "code", None)
        if isinstance(code, int) and 400 <= code < 600:
            status = code
            break
    if status is None:
        m = re.search(r"HTTP Error (\d{3})", text)
        if m:
            status = int(m.group(1))

    low = text.lower()
    if re.search(r"redirection to url .* is not allowed", low):  # urllib refuses e.g. file:// targets
        return FetchError(MSG_SCHEME)
    if re.search(r"requested format is not available|no video formats found", low):
        return FetchError(MSG_NO_MEDIA)
    for pattern, message in _PATTERNS:
        if re.search(pattern, low):
            # A bare HTTP status says nothing about privacy; do not read "private" into "403".
            if status is not None and message in (MSG_UNAVAILABLE, MSG_LOGIN):
                break
            return FetchError(message)

    if status is not None:
        if status == 404:
            return FetchError(MSG_NOT_FOUND)
        if status == 410:
            return FetchError(MSG_GONE)
        if status in (401, 403):
            return FetchError(f"Access to the page was refused (HTTP {status}).")
        if status == 429:
            return FetchError("The site is refusing requests for now (HTTP 429); try again later.")
        return FetchError(f"The site answered with an error (HTTP {status}).")

    reason = _transport_reason(chain)
    if reason:
        return FetchError(f"The address could not be reached: {reason}.")

    return FetchError("The video could not be fetched: " + _clean_ytdlp_message(str(exc)))


# --------------------------------------------------------------------------- watchdog


def _run(session: _Session, fn: Callable[[], Any], *, deadline: float, on_deadline: FetchError,
         stall: float | None = None, on_stall: FetchError | None = None, grace: float = 5.0) -> Any:
    """Run ``fn`` in a worker thread; stop it (sockets shut down, subprocesses
    killed) when it runs past ``deadline`` seconds or shows no activity for
    ``stall`` seconds.  A worker that does not unwind within ``grace`` seconds is
    abandoned (it is a daemon thread and can only finish with an error)."""
    outcome: dict[str, Any] = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            outcome["error"] = e

    worker = threading.Thread(target=target, name="fetch-worker", daemon=True)
    start = time.monotonic()
    session.touch()
    worker.start()
    while worker.is_alive():
        worker.join(0.2)
        if not worker.is_alive():
            break
        now = time.monotonic()
        if now - start > deadline:
            session.abort(on_deadline)
            break
        if stall is not None and now - session.last_activity > stall:
            session.abort(on_stall)
            break
    worker.join(grace)
    if session.failure is not None:
        raise session.failure
    if "error" in outcome:
        raise _map_error(outcome["error"], session) from outcome["error"]
    if "value" not in outcome:  # abandoned without a recorded reason (should not happen)
        raise on_deadline
    return outcome["value"]


# --------------------------------------------------------------------------- checks on yt-dlp's answer


def _refuse_live(info: dict) -> None:
    status = info.get("live_status")
    if status == "is_upcoming":
        raise FetchError(MSG_UPCOMING)
    if info.get("is_live") or status == "is_live":
        raise FetchError(MSG_LIVE)
    if status == "post_live":
        raise FetchError(MSG_POST_LIVE)


def _refuse_playlist(info: dict) -> None:
    if info.get("_type") in ("playlist", "multi_video"):
        raise FetchError(MSG_PLAYLIST)


def _duration(info: dict) -> float | None:
    d = info.get("duration")
    try:
        return float(d) if d is not None and float(d) > 0 else None
    except (TypeError, ValueError):
        return None


def _single_video(ydl: _YoutubeDL, info: dict) -> dict:
    """A page holding exactly one video may come back as a one-entry playlist."""
    if info.get("_type") in ("playlist", "multi_video"):
        entries = list(info.get("entries") or [])
        if len(entries) == 1 and entries[0]:
            entry = entries[0]
            if entry.get("_type") in ("url", "url_transparent"):
                return ydl.extract_info(entry["url"], download=False, ie_key=entry.get("ie_key"))
            return entry
        if not entries:
            raise FetchError(MSG_NO_MEDIA)
    return info


def _to_media_info(info: dict, url: str, duration: float | None) -> MediaInfo:
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


def _final_url(ydl: _YoutubeDL, url: str, headers: dict) -> str:
    """Follow redirects through the guarded handler; the URL the data comes from."""
    for method, extra in (("HEAD", {}), ("GET", {"Range": "bytes=0-0"})):
        try:
            with ydl.urlopen(Request(url, headers={**headers, **extra}, method=method)) as resp:
                return resp.url
        except _Blocked:
            raise
        except YtHTTPError:
            continue
    return url


def _remote_duration(ydl: _YoutubeDL, session: _Session, fmt: dict, timeout: float) -> float | None:
    """Duration of a direct media file by ffprobe, or None.  When private addresses
    are refused, ffprobe gets the already-checked final URL, no redirects, only
    http(s) and demuxers that do not open other URLs."""
    if shutil.which("ffprobe") is None:
        return None
    url = fmt.get("url")
    if not url:
        return None
    headers = {k: v for k, v in (fmt.get("http_headers") or {}).items() if k.lower() in ("user-agent", "referer", "cookie")}
    cmd = ["ffprobe", "-v", "error", "-rw_timeout", str(int(timeout * 1_000_000))]
    if not session.policy.allow_private:
        url = _final_url(ydl, url, headers)
        session.check_request_url(url)
        cmd += ["-max_redirects", "0", "-protocol_whitelist", "http,https,tcp,tls",
                "-format_whitelist", _FFPROBE_FORMATS]
    if headers:
        cmd += ["-headers", "".join(f"{k}: {v}\r\n" for k, v in headers.items())]
    cmd += ["-show_entries", "format=duration", "-of", "json", url]
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


# --------------------------------------------------------------------------- public API


def probe(
    url: str,
    *,
    allow_private: bool,
    max_duration: float | None = MAX_DURATION,
    timeout: float = 30,
    allowed_networks: Sequence[str] = (),
) -> MediaInfo:
    """What is at ``url`` (yt-dlp metadata only, nothing downloaded).

    ``timeout`` is yt-dlp's socket timeout and ffprobe's; the whole probe is
    stopped after ``3 * timeout`` seconds.  Refuses (``FetchError``) live and
    upcoming broadcasts, playlists, media longer than ``max_duration`` seconds,
    private or removed videos, pages without media, and any request to a private
    address unless ``allow_private``.  For direct files whose length yt-dlp does
    not know, ffprobe reads it from the server; ``duration`` stays None when that
    fails too.
    """
    policy = _AddressPolicy(allow_private, allowed_networks)
    policy.check_url(url)
    session = _Session(policy)

    def work() -> MediaInfo:
        no_ffmpeg = None if allow_private else tempfile.mkdtemp(prefix="no-ffmpeg-")
        try:
            with _YoutubeDL(_params(session, socket_timeout=timeout, no_ffmpeg_dir=no_ffmpeg), session) as ydl:
                info = ydl.extract_info(url, download=False)
                if not info:
                    raise FetchError(MSG_NO_MEDIA)
                info = _single_video(ydl, info)
                _refuse_playlist(info)
                _refuse_live(info)
                duration = _duration(info)
                if duration is None and str(info.get("protocol", "")).startswith("http") \
                        and "+" not in str(info.get("protocol")):
                    duration = _remote_duration(ydl, session, info, timeout)
                if max_duration is not None and duration is not None and duration > max_duration:
                    raise FetchError(too_long_message(duration, max_duration))
                return _to_media_info(info, url, duration)
        finally:
            if no_ffmpeg:
                shutil.rmtree(no_ffmpeg, ignore_errors=True)

    return _run(session, work, deadline=3 * timeout, on_deadline=FetchError(MSG_TIMEOUT_PROBE))


def download(
    url: str,
    dest_dir: str | os.PathLike,
    *,
    allow_private: bool,
    timeout: float = 3 * 3600,
    max_bytes: int = 2 * 1024**3,
    stall_timeout: float = 60,
    max_duration: float | None = MAX_DURATION,
    allowed_networks: Sequence[str] = (),
    video: bool = False,
) -> Path:
    """Download the best audio (or, failing that, the best single file) of ``url``
    into ``dest_dir`` and return the file's path; with ``video`` the best single file
    with picture and sound.

    Stopped with ``FetchError`` after ``timeout`` seconds in all, after
    ``stall_timeout`` seconds without any data (also yt-dlp's socket timeout), or
    as soon as the file is known to exceed ``max_bytes`` (announced size or bytes
    received).  Live broadcasts, playlists and media known to be longer than
    ``max_duration`` are refused before downloading.  Partial files are removed
    on failure.
    """
    policy = _AddressPolicy(allow_private, allowed_networks)
    policy.check_url(url)
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.iterdir())
    session = _Session(policy)

    def refuse(error: FetchError):
        session.fail(error)
        raise _Abort()

    def match_filter(info: dict, *, incomplete: bool = False):
        if session.cancelled.is_set():
            raise _Abort()
        try:
            _refuse_playlist(info)
            _refuse_live(info)
        except FetchError as e:
            refuse(e)
        duration = _duration(info)
        if max_duration is not None and duration is not None and duration > max_duration:
            refuse(FetchError(too_long_message(duration, max_duration)))
        if not incomplete:
            size = info.get("filesize") or info.get("filesize_approx")
            if size and size > max_bytes:
                refuse(FetchError(too_big_message(max_bytes)))
            session.start_download()
        return None

    def progress(d: dict):
        if session.cancelled.is_set():
            raise _Abort()
        got = d.get("downloaded_bytes") or 0
        session.progress(got)
        total = d.get("total_bytes") or 0
        if got > max_bytes or total > max_bytes:
            session.abort(FetchError(too_big_message(max_bytes)))
            raise _Abort()

    def work() -> Path:
        no_ffmpeg = None if allow_private else tempfile.mkdtemp(prefix="no-ffmpeg-")
        try:
            params = _params(session, socket_timeout=stall_timeout, no_ffmpeg_dir=no_ffmpeg)
            params.update({
                "outtmpl": {"default": str(dest / "media.%(ext)s")},
                **({"format": _VIDEO_FORMAT} if video else {}),
                "match_filter": match_filter,
                "progress_hooks": [progress],
            })
            with _YoutubeDL(params, session) as ydl:
                info = ydl.extract_info(url, download=True)
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
                    raise _map_error(yt_dlp.utils.DownloadError(errors[-1]), session)
                raise FetchError(MSG_NO_FILE)
        finally:
            if no_ffmpeg:
                shutil.rmtree(no_ffmpeg, ignore_errors=True)

    try:
        return _run(
            session, work,
            deadline=timeout, on_deadline=FetchError(download_timeout_message(timeout)),
            stall=stall_timeout, on_stall=FetchError(stalled_message(stall_timeout)),
        )
    except FetchError:
        for p in set(dest.iterdir()) - before:
            try:
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink()
            except OSError:
                pass
        raise


def extract_listing(url: str, *, allow_private: bool, timeout: float = 30, allowed_networks: Sequence[str] = ()) -> dict:
    """yt-dlp's flat extraction of a playlist or channel page: the entries as the page lists
    them, none of them resolved or downloaded. Goes through the same address guard as probe()."""
    policy = _AddressPolicy(allow_private, allowed_networks)
    policy.check_url(url)
    session = _Session(policy)

    def work() -> dict:
        params = {**_params(session, socket_timeout=timeout, no_ffmpeg_dir=None), "noplaylist": False, "playlistend": 1000}
        with _YoutubeDL(params, session) as ydl:
            info = ydl.extract_info(url, download=False)
            if not info:
                raise FetchError(MSG_NO_MEDIA)
            return info

    return _run(session, work, deadline=3 * timeout, on_deadline=FetchError(MSG_TIMEOUT_PROBE))
