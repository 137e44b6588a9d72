"""A small HTTP server on 127.0.0.1 for tests and benchmarks: the media of ``harness.media_files``,
served by a threaded ``http.server`` on a random port; nothing here talks to the internet.

Routes
------
``MediaServer.routes`` maps an exact path (without the query string) to a
handler, ``MediaServer.prefix_routes`` maps a path prefix to a handler (longest
prefix wins).  A handler is ``fn(req: MediaRequestHandler) -> None`` and answers
with ``req.send_bytes(...)``, ``req.send_file(...)``, ``req.send_redirect(...)``
or anything ``BaseHTTPRequestHandler`` offers.  Later tests add their own::

    media_server.routes["/my/thing"] = lambda req: req.send_bytes(b"hi", "text/plain")

Built in:

* ``/files/<name>``        static files from the media folder, with Range support
* ``/redirect?to=URL``     302 to URL (``&code=301`` etc. to pick the status)
* ``/status/<code>``       an empty answer with that status (404, 403, 410, ...)
* ``/stall``               200 + headers (video/mp4, 100 MB Content-Length), then nothing
* ``/endless``             an MPEG-TS stream without Content-Length that never ends
* ``/page/video.html``     HTML with ``<video src="/files/speech.mp4">``
* ``/page/nomedia.html``   HTML with no media at all
* ``/live/index.m3u8``     a live HLS media playlist (no ``#EXT-X-ENDLIST``)
* ``/long/index.m3u8``     a VOD HLS playlist of 4800 x 10 s segments (13 h 20 min)
* ``/hls/seg<N>.ts``       the segment served by both playlists

Every request is appended to ``MediaServer.requests`` (the path with query
string), so tests can count requests.
"""

from __future__ import annotations

import email.utils
import mimetypes
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

Handler = Callable[["MediaRequestHandler"], None]


class MediaRequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection; close-delimited bodies work

    # --- plumbing
    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    def do_GET(self):
        self._dispatch()

    def do_HEAD(self):
        self._dispatch()

    @property
    def media(self) -> MediaServer:
        return self.server.media

    @property
    def route_path(self) -> str:
        return urllib.parse.urlsplit(self.path).path

    @property
    def query(self) -> dict[str, str]:
        return {k: v[-1] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).items()}

    def _dispatch(self):
        media = self.media
        with media.lock:
            media.requests.append(self.path)
            media.request_log.append((self.command, self.path, dict(self.headers)))
        path = self.route_path
        handler = media.routes.get(path)
        if handler is None:
            for prefix in sorted(media.prefix_routes, key=len, reverse=True):
                if path.startswith(prefix):
                    handler = media.prefix_routes[prefix]
                    break
        if handler is None:
            self.send_bytes(b"not found", "text/plain", status=404)
            return
        handler(self)

    # --- answers
    def send_bytes(self, data: bytes, content_type: str, status: int = 200, headers: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_redirect(self, location: str, status: int = 302):
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def send_file(self, path: Path, content_type: str | None = None):
        if not path.is_file():
            self.send_bytes(b"not found", "text/plain", status=404)
            return
        size = path.stat().st_size
        ctype = content_type or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        start, end = 0, size - 1
        status = 200
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", rng)
            if m and (m.group(1) or m.group(2)):
                if m.group(1):
                    start = int(m.group(1))
                    end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
                else:  # suffix range: last N bytes
                    start = max(0, size - int(m.group(2)))
                if start >= size or start > end:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
        length = end - start + 1
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(length))
        self.send_header("Last-Modified", email.utils.formatdate(path.stat().st_mtime, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if self.command == "HEAD":
            return
        with open(path, "rb") as f:
            f.seek(start)
            remaining = length
            while remaining > 0:
                block = f.read(min(64 * 1024, remaining))
                if not block:
                    break
                self.wfile.write(block)
                remaining -= len(block)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    media: MediaServer


class MediaServer:
    """Threaded HTTP server on 127.0.0.1:<random port> serving ``folder``."""

    def __init__(self, folder: Path, host: str = "127.0.0.1"):
        self.folder = Path(folder)
        self.host = host
        self.requests: list[str] = []
        self.request_log: list[tuple[str, str, dict]] = []  # (method, path, headers)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.live_started = time.monotonic()
        self.routes: dict[str, Handler] = {
            "/redirect": _redirect,
            "/stall": _stall,
            "/endless": _endless,
            "/page/video.html": _video_page,
            "/page/nomedia.html": _nomedia_page,
            "/live/index.m3u8": _live_playlist,
            "/long/index.m3u8": _long_playlist,
        }
        self.prefix_routes: dict[str, Handler] = {
            "/files/": _static,
            "/status/": _status,
            "/hls/": _segment,
        }
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- life cycle
    def start(self) -> MediaServer:
        self._httpd = _Server((self.host, 0), MediaRequestHandler)
        self._httpd.media = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="media-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> MediaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- helpers
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def count(self, prefix: str) -> int:
        """How many requests so far had a path (with query) starting with ``prefix``."""
        with self.lock:
            return sum(1 for p in self.requests if p.startswith(prefix))

    def clear_log(self) -> None:
        with self.lock:
            self.requests.clear()
            self.request_log.clear()


# --- built-in routes


def _static(req: MediaRequestHandler) -> None:
    name = urllib.parse.unquote(req.route_path[len("/files/") :])
    path = (req.media.folder / name).resolve()
    if req.media.folder.resolve() not in path.parents:
        req.send_bytes(b"forbidden", "text/plain", status=403)
        return
    req.send_file(path)


def _redirect(req: MediaRequestHandler) -> None:
    q = req.query
    req.send_redirect(q.get("to", "/"), int(q.get("code", 302)))


def _status(req: MediaRequestHandler) -> None:
    code = int(req.route_path.rsplit("/", 1)[-1] or 500)
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = "Status"
    req.send_bytes(f"<html><body><h1>{code} {phrase}</h1></body></html>".encode(), "text/html", status=code)


def _stall(req: MediaRequestHandler) -> None:
    """Headers promising a big video, then silence until the server stops (or 300 s)."""
    req.send_response(200)
    req.send_header("Content-Type", "video/mp4")
    req.send_header("Content-Length", str(100 * 1024 * 1024))
    req.send_header("Accept-Ranges", "bytes")
    req.end_headers()
    req.wfile.flush()
    seconds = float(req.query.get("seconds", 300))
    req.media.stopping.wait(seconds)


def _endless(req: MediaRequestHandler) -> None:
    """A never-ending MPEG-TS stream (close-delimited, no Content-Length)."""
    data = (req.media.folder / "segment.ts").read_bytes()
    req.send_response(200)
    req.send_header("Content-Type", "video/mp2t")
    req.end_headers()
    if req.command == "HEAD":
        return
    delay = float(req.query.get("delay", 0))
    while not req.media.stopping.is_set():
        req.wfile.write(data)
        if delay:
            time.sleep(delay)


def _video_page(req: MediaRequestHandler) -> None:
    src = req.query.get("src", "/files/speech.mp4")
    html = (
        "<!DOCTYPE html><html><head><title>A test video</title></head><body>"
        "<h1>A test video</h1>"
        f'<video controls src="{src}" type="video/mp4"></video>'
        "</body></html>"
    )
    req.send_bytes(html.encode(), "text/html; charset=utf-8")


def _nomedia_page(req: MediaRequestHandler) -> None:
    html = (
        "<!DOCTYPE html><html><head><title>Just words</title></head><body>"
        "<h1>Nothing to watch here</h1><p>This page has text and a "
        '<a href="/page/video.html">link</a>, but no video or audio.</p>'
        "</body></html>"
    )
    req.send_bytes(html.encode(), "text/html; charset=utf-8")


def _segment(req: MediaRequestHandler) -> None:
    req.send_file(req.media.folder / "segment.ts", "video/mp2t")


def _live_playlist(req: MediaRequestHandler) -> None:
    """A sliding-window live playlist: 3 segments of 2 s, sequence moves with time."""
    seq = int((time.monotonic() - req.media.live_started) / 2) + 100
    lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", f"#EXT-X-MEDIA-SEQUENCE:{seq}"]
    for n in range(seq, seq + 3):
        lines += ["#EXTINF:2.000,", f"/hls/seg{n}.ts"]
    req.send_bytes(("\n".join(lines) + "\n").encode(), "application/vnd.apple.mpegurl")


def _long_playlist(req: MediaRequestHandler) -> None:
    """A finished (VOD) playlist whose segments add up to 13 h 20 min."""
    count = int(req.query.get("segments", 4800))
    lines = [
        "#EXTM3U",
        "#EXT-X-VERSION:3",
        "#EXT-X-TARGETDURATION:10",
        "#EXT-X-PLAYLIST-TYPE:VOD",
        "#EXT-X-MEDIA-SEQUENCE:0",
    ]
    for n in range(count):
        lines += ["#EXTINF:10.000,", f"/hls/seg{n}.ts"]
    lines.append("#EXT-X-ENDLIST")
    req.send_bytes(("\n".join(lines) + "\n").encode(), "application/vnd.apple.mpegurl")
