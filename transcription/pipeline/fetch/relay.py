"""A loopback relay through which ffprobe reads a remote file, so that it never resolves or
connects to a client's host itself.

ffprobe's own HTTP client would resolve the host name again: a name that answers a public
address to the address guard and a private one a moment later (DNS rebinding) would lead it
inside the network. So ffprobe is given http://127.0.0.1:<port>/ of a relay that lives only for
one probe and serves only that file: each request ffprobe makes (with its byte range, to seek)
is made again by the guarded yt-dlp handler, whose connections check the very addresses they
connect to, and the answer is streamed back. A relay rather than a pipe: ffprobe seeks (an MP4
whose index sits at the end, an MP3's length from its size), which a pipe cannot.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from yt_dlp.networking import Request, Response
from yt_dlp.networking.exceptions import HTTPError as YtHTTPError

if TYPE_CHECKING:
    from .guard import GuardedYoutubeDL

_CHUNK = 64 * 1024
_LOOPBACK = "127.0.0.1"
# What ffprobe may see of the origin's answer.
_PASSED_ON = ("Content-Type", "Content-Length", "Content-Range", "Accept-Ranges")

# (method, extra headers) -> the origin's answer, fetched through the guarded handler
OpenUpstream = Callable[[str, dict[str, str]], Response]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, open_upstream: OpenUpstream):
        self.open_upstream = open_upstream
        super().__init__((_LOOPBACK, 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self._relay("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._relay("HEAD")

    def _relay(self, method: str) -> None:
        extra = {"Range": self.headers["Range"]} if self.headers.get("Range") else {}
        try:
            upstream = self.server.open_upstream(method, extra)
        except YtHTTPError as error:
            self.send_response(error.status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        except Exception:  # refused by the guard, unreachable, stopped by the watchdog
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with upstream:
            self.send_response(upstream.status)
            for name in _PASSED_ON:
                if upstream.headers.get(name):
                    self.send_header(name, upstream.headers[name])
            self.end_headers()
            if method == "GET":
                try:
                    shutil.copyfileobj(upstream, self.wfile, _CHUNK)
                except OSError:
                    pass  # ffprobe has read what it wanted and hung up

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        pass


class Relay:
    """`with Relay(ydl, url, headers) as local_url:` serves `url` at `local_url` while open."""

    def __init__(self, ydl: GuardedYoutubeDL, url: str, headers: dict[str, str]):
        def open_upstream(method: str, extra: dict[str, str]) -> Response:
            return ydl.urlopen(Request(url, headers={**headers, **extra}, method=method))

        self.server = _Server(open_upstream)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://{_LOOPBACK}:{self.server.server_port}/media"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
