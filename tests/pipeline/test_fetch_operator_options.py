"""The operator's yt-dlp options (YTDLP_PROXY, YTDLP_COOKIES_FILE) with real yt-dlp, a real
forwarding proxy and the local media server."""

from __future__ import annotations

import http.client
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from transcription.pipeline import fetch
from transcription.pipeline.fetch import FetchError


class ForwardingProxy(BaseHTTPRequestHandler):
    """A plain HTTP forward proxy: GET/HEAD of an absolute URL, relayed; every URL asked is kept."""

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def _relay(self):
        self.server.asked.append(self.path)
        target = urllib.parse.urlsplit(self.path)
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
        upstream.request(self.command, target.path + (f"?{target.query}" if target.query else ""), headers=headers)
        answer = upstream.getresponse()
        body = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        upstream.close()

    do_GET = do_HEAD = _relay


@pytest.fixture
def proxy():
    server = ThreadingHTTPServer(("127.0.0.1", 0), ForwardingProxy)
    server.asked = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_yt_dlp_goes_through_the_operators_proxy(media_server, proxy):
    url = media_server.url(f"/files/speech.mp4?{uuid.uuid4().hex}")
    info = fetch.probe(
        url, fetch.FetchLimits(allow_private=True, probe_timeout=10, proxy=f"http://127.0.0.1:{proxy.server_port}")
    )
    assert info.duration and info.duration > 1
    assert url in proxy.asked


def test_the_address_guard_still_checks_the_target_behind_the_proxy(media_server, proxy, tmp_path):
    url = media_server.url(f"/files/speech.mp4?{uuid.uuid4().hex}")
    address = f"http://127.0.0.1:{proxy.server_port}"
    with pytest.raises(FetchError, match="private network address"):
        fetch.probe(url, fetch.FetchLimits(allow_private=False, proxy=address))
    with pytest.raises(FetchError, match="private network address"):
        fetch.download(url, tmp_path, fetch.FetchLimits(allow_private=False, proxy=address))
    assert proxy.asked == [], "nothing was asked of the proxy for a private target"


def test_the_cookies_file_is_sent_and_left_as_it_was(media_server, tmp_path):
    cookies = tmp_path / "cookies.txt"
    cookies.write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tlet-me-in\n")
    before = cookies.read_bytes()
    tag = uuid.uuid4().hex
    fetch.probe(
        media_server.url(f"/files/speech.mp4?{tag}"),
        fetch.FetchLimits(allow_private=True, probe_timeout=10, cookies_file=str(cookies)),
    )
    # yt-dlp's own requests carry the cookie (ffprobe's read of the header afterwards does not).
    sent = [headers for _, path, headers in media_server.request_log if tag in path and "User-Agent" in headers]
    assert sent and sent[0].get("Cookie") == "session=let-me-in"
    assert cookies.read_bytes() == before
