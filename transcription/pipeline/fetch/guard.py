"""The address guard: no request made for a client's address may reach a private network.

yt-dlp makes its requests through ``yt_dlp.networking``; every :class:`GuardedYoutubeDL` gets a
single request handler of ours, a subclass of yt-dlp's urllib handler, that

* checks the URL of every request (``RequestHandler._send``),
* checks the URL of every redirect hop (a urllib *request processor*: urllib runs the processors
  again for each redirected request, before any connection), and
* checks the address every socket actually connects to (the connection factory resolves the name
  once, checks all addresses, then connects to those very addresses, so DNS rebinding between
  check and connect does not help).

The same handler records every socket it opens in the :class:`Session`, so a download that
overruns its time limit or stalls can be stopped at once by shutting those sockets down
(watchdog.py).
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import weakref
from collections.abc import Iterable, Sequence
from http.cookiejar import CookieJar
from typing import Any

import yt_dlp
from yt_dlp.networking import Request, Response
from yt_dlp.networking._urllib import HTTPHandler, UrllibRH
from yt_dlp.networking.common import RequestDirector
from yt_dlp.networking.exceptions import RequestError
from yt_dlp.utils import DownloadCancelled

from .errors import MSG_INVALID, MSG_PRIVATE, MSG_SCHEME, FetchError

# Only protocols that yt-dlp downloads itself, through the guarded handler.
AUDIO_FORMAT = "bestaudio[protocol^=http]/bestaudio[protocol^=m3u8]/best[protocol^=http]/best[protocol^=m3u8]"
# For burned-in subtitles: the best single file that has both picture and sound. Merging separate
# video and audio streams would need ffmpeg inside yt-dlp, which stays disabled (it would fetch
# URLs past the address guard).
VIDEO_FORMAT = "best[protocol^=http]/best[protocol^=m3u8]"

# One answer of socket.getaddrinfo: (family, type, proto, canonname, sockaddr).
AddrInfo = tuple[
    socket.AddressFamily,
    socket.SocketKind,
    int,
    str,
    tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes],
]
# socket.create_connection's "no timeout given" default, which http.client passes on; typeshed leaves
# this private name out.
_DEFAULT_TIMEOUT: object = socket._GLOBAL_DEFAULT_TIMEOUT  # type: ignore[attr-defined]


def _is_forbidden_ip(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None and _is_forbidden_ip(mapped):
            return True
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


class AddressPolicy:
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

    def check_addrinfo(self, host: str, infos: list[AddrInfo]) -> None:
        if self.allow_private:
            return
        if not infos:
            raise FetchError(f"The address could not be reached: the host name {host} could not be resolved.")
        for info in infos:
            address = info[4][0]
            if not isinstance(address, str):  # not an IP family (SOCK_STREAM lookups give none): refused
                raise FetchError(MSG_PRIVATE)
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if not self.ip_allowed(ip):
                raise FetchError(MSG_PRIVATE)


def _resolve(host: str, port: int) -> list[AddrInfo]:
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
    AddressPolicy(allow_private, allowed_networks).check_url(url)


class Blocked(RequestError):
    """A request refused by the address policy (travels through yt-dlp like a network error)."""


class Abort(DownloadCancelled):
    """Raised inside yt-dlp to stop work; yt-dlp lets DownloadCancelled through."""

    msg = "stopped by the fetch watchdog"


class Session:
    """State shared by one probe/download: policy, open sockets, activity, outcome."""

    def __init__(self, policy: AddressPolicy):
        self.policy = policy
        self.lock = threading.Lock()
        self.sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self.processes: weakref.WeakSet[subprocess.Popen[bytes]] = weakref.WeakSet()
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
            raise Abort()
        self.touch()
        try:
            key = self.policy.split(url)
            if key not in self._checked:
                self.policy.check_url(url)
                self._checked.add(key)
        except FetchError as e:
            self.fail(e)
            raise Blocked(str(e)) from None

    def connect(
        self,
        address: tuple[str, int],
        timeout: float | None | object = _DEFAULT_TIMEOUT,
        source_address: tuple[str, int] | None = None,
        *,
        check: bool = True,
    ) -> socket.socket:
        """socket.create_connection that checks the addresses it connects to."""
        if self.cancelled.is_set():
            raise Abort()
        host, port = address
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        if check:
            try:
                self.policy.check_addrinfo(host, infos)
            except FetchError as e:
                self.fail(e)
                raise Blocked(str(e)) from None
        if source_address is not None:
            family = socket.AF_INET6 if ":" in source_address[0] else socket.AF_INET
            infos = [i for i in infos if i[0] == family]
        err = OSError(f"no usable address for {host}")
        for family, type_, proto, _, sockaddr in infos:
            sock = socket.socket(family, type_, proto)
            try:
                if timeout is None or isinstance(timeout, (int, float)):  # not _DEFAULT_TIMEOUT
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

    def register(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.add(sock)
        if self.cancelled.is_set():
            _shutdown(sock)

    def register_process(self, proc: subprocess.Popen[bytes]) -> None:
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


def _shutdown(sock: socket.socket) -> None:
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

    def __init__(self, session: Session, http_handler: HTTPHandler):
        self.session = session
        self.http = http_handler

    def _check(self, req: urllib.request.Request) -> urllib.request.Request:
        self.session.check_request_url(req.full_url)
        return req

    http_request = https_request = ftp_request = file_request = _check

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self._open(http.client.HTTPConnection, req)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self._open(http.client.HTTPSConnection, req, context=self.http._context)

    def _open(
        self, base: type[http.client.HTTPConnection], req: urllib.request.Request, **kwargs: Any
    ) -> http.client.HTTPResponse:
        conn_class: type[http.client.HTTPConnection] = self.http._make_conn_class(base, req)
        # Through a proxy the socket goes to the proxy, not to the URL's host: the URL
        # checks above still apply, the connection check would only see the proxy.
        proxied = req.selector == req.full_url or getattr(req, "_tunnel_host", None)
        response: http.client.HTTPResponse = self.http.do_open(
            functools.partial(self._connection, conn_class, not proxied), req, **kwargs
        )
        return response

    def _connection(
        self, conn_class: type[http.client.HTTPConnection], check: bool, *args: Any, **kwargs: Any
    ) -> http.client.HTTPConnection:
        if self.http._source_address is not None:
            kwargs["source_address"] = (self.http._source_address, 0)
        hc = conn_class(*args, **kwargs)
        session = self.session
        if hasattr(hc, "_create_connection"):
            hc._create_connection = functools.partial(session.connect, check=check)
        connect = hc.connect

        def connect_and_register() -> None:
            connect()
            session.register(hc.sock)  # for https: the TLS socket wrapped around ours

        # Only this one connection's connect is wrapped, to register the socket it opens.
        hc.connect = connect_and_register  # type: ignore[method-assign]
        return hc


class _GuardedUrllibRH(UrllibRH):
    _SUPPORTED_URL_SCHEMES = ("http", "https", "data")

    def __init__(self, *, session: Session, **kwargs: Any):
        super().__init__(**kwargs)
        self._session = session

    def _create_instance(
        self, proxies: dict[str, str], cookiejar: CookieJar, legacy_ssl_support: bool | None = None
    ) -> urllib.request.OpenerDirector:
        opener: urllib.request.OpenerDirector = super()._create_instance(proxies, cookiejar, legacy_ssl_support)
        # OpenerDirector.handlers: CPython's list of the handlers added, left out of typeshed
        http_handler = next(h for h in opener.handlers if isinstance(h, HTTPHandler))  # type: ignore[attr-defined]
        opener.add_handler(_GuardProcessor(self._session, http_handler))
        return opener

    def _send(self, request: Request) -> Response:
        if urllib.parse.urlsplit(request.url).scheme.lower() != "data":
            self._session.check_request_url(request.url)
        return super()._send(request)


class GuardedYoutubeDL(yt_dlp.YoutubeDL):
    """YoutubeDL whose only request handler is the guarded one."""

    def __init__(self, params: dict[str, Any], session: Session):
        self._fetch_session = session
        super().__init__(params)

    @functools.cached_property
    def _request_director(self) -> RequestDirector:
        return self.build_request_director([functools.partial(_GuardedUrllibRH, session=self._fetch_session)])


class _Log:
    """yt-dlp logger that keeps messages instead of printing them."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.errors: list[str] = []

    def debug(self, msg: str) -> None:
        pass

    def info(self, msg: str) -> None:
        pass

    def warning(self, msg: str) -> None:
        self.warnings.append(msg)

    def error(self, msg: str) -> None:
        self.errors.append(msg)


def ydl_params(session: Session, *, socket_timeout: float, no_ffmpeg_dir: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "logger": _Log(),
        "noplaylist": True,
        "extract_flat": "in_playlist",  # a playlist is refused, not expanded
        "format": AUDIO_FORMAT,
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
