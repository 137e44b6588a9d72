"""A webhook receiver on 127.0.0.1 for tests: a threaded HTTP server that checks every request
with the `standardwebhooks` verifier, records it, and answers what the test scripted.

    with Receiver() as receiver:
        receiver.secrets = [secret]          # the secrets it verifies with (any one may match)
        receiver.script = [503, "drop"]      # answers for the next requests, then 200s
        ...
        request = receiver.wait_for(1)[0]    # waits on a condition, never a fixed sleep
        request.payload                      # the verified JSON, or None (request.error says why)

Scripted answers: an int status (with a short text body), ("status", body) for a body of one's
own, "drop" (close the connection without answering), "hold" (keep the request open until
`release()` or until the sender goes away), "trickle" (send the answer one byte every 0.2 s,
so that no single read ever waits long).
"""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from standardwebhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    payload: dict | None
    verified_with: str | None
    error: str | None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format, *args):  # noqa: A002 - keep the test output quiet
        pass

    def do_POST(self):  # noqa: N802 - http.server's naming
        receiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = receiver.record(Received(self.path, headers, body, *receiver.verify(body, headers)))
        if answer == "drop":
            self.close_connection = True
            return
        if answer == "hold":
            receiver.released.wait(timeout=60)
            answer = 200
        if answer == "trickle":
            with contextlib.suppress(OSError):
                for byte in b"HTTP/1.0 200 OK\r\nX-Slow: " + b"." * 150:
                    if receiver.released.wait(0.2):
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            self.close_connection = True
            return
        status, text = answer if isinstance(answer, tuple) else (answer, f"answer {answer}")
        payload = text.encode() if isinstance(text, str) else text
        with contextlib.suppress(OSError):
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", receiver.url("/elsewhere"))
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    def do_GET(self):  # noqa: N802 - a followed redirect would arrive as a GET: record it too
        self.server.receiver.record(Received(self.path, dict(self.headers.items()), b"", None, None, "GET"))
        self.send_response(200)
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: Receiver


def self_signed_context(folder: Path) -> ssl.SSLContext:
    """A TLS server context with a certificate for 127.0.0.1 that no CA store trusts; the
    certificate is `folder / "cert.pem"`, for a test that trusts it (SSL_CERT_FILE)."""
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


class Receiver:
    def __init__(self, tls: ssl.SSLContext | None = None):
        self.secrets: list[str] = []
        self.script: list = []
        self.requests: list[Received] = []
        self.released = threading.Event()
        self._changed = threading.Condition()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.receiver = self
        self.scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, path: str = "/hook") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def verify(self, body: bytes, headers: dict) -> tuple[dict | None, str | None, str | None]:
        error = "no secret to verify with"
        for secret in self.secrets:
            try:
                return Webhook(secret).verify(body, headers), secret, None
            except WebhookVerificationError as failure:
                error = str(failure)
        return None, None, error

    def record(self, request: Received):
        with self._changed:
            self.requests.append(request)
            answer = self.script.pop(0) if self.script else 200
            self._changed.notify_all()
        return answer

    def release(self) -> None:
        self.released.set()

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        """The first `count` requests, once that many have arrived."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the receiver got {len(self.requests)} requests, not {count}, in {timeout} s")
                self._changed.wait(left)
            return self.requests[:count]
