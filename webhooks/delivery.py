"""POST one webhook to a receiver, safely. Plain Python: nothing of Django.

The receiver's URL comes from a customer, so the request goes through the same address guard as
downloads (`transcription.pipeline.fetch.check_url`): only http(s), and no loopback, private,
link-local or reserved target unless `allow_private`. The guard checks the URL before anything is
sent, and again every address the connection actually goes to (the host name is resolved once
more to connect, so a name that changes its answer in between gets no further). Beyond that:

- https certificates are verified against the host name (the system's CA store);
- redirects are never followed (a 3xx is a failed attempt, its Location shown);
- at most `read_limit` bytes of the answer are read;
- the whole exchange, connecting included, is stopped after `timeout` seconds: a watchdog shuts
  the socket down, so a receiver that trickles one byte at a time cannot hold a worker.

The standard library's http.client is used rather than requests or urllib3: it never follows
redirects, and it lets the connection go to the very address that was checked.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass

from transcription.pipeline.fetch import FetchError, check_url

READ_LIMIT = 1024
USER_AGENT = "video-transcription-webhooks/1"


@dataclass(frozen=True)
class ReceiverAnswer:
    status: int | None
    excerpt: str
    error: str
    seconds: float

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class _Connection:
    """Opens the socket for http.client: every address the name resolves to is checked by the
    guard before it is connected to, and every socket is kept so the watchdog can close it."""

    def __init__(self, allow_private: bool):
        self.allow_private = allow_private
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.stopped = False

    def __call__(self, address, timeout, source_address=None):
        host, port = address
        try:
            infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            raise FetchError(f"The host name {host} could not be resolved.") from None
        last_error: OSError = OSError(f"No address to connect to for {host}.")
        for family, kind, proto, _, sockaddr in infos:
            ip = sockaddr[0].split("%", 1)[0]
            check_url(f"http://[{ip}]/" if ":" in ip else f"http://{ip}/", allow_private=self.allow_private)
            sock = socket.socket(family, kind, proto)
            with self.lock:
                if self.stopped:
                    sock.close()
                    raise TimeoutError
                self.sockets.append(sock)
            try:
                sock.settimeout(timeout)
                sock.connect(sockaddr)
                return sock
            except OSError as error:
                last_error = error
                sock.close()
        raise last_error

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def post(
    url: str, body: bytes, headers: dict[str, str], *, allow_private: bool, timeout: float, read_limit: int = READ_LIMIT
) -> ReceiverAnswer:
    """POST `body` to `url`; never raises for anything the receiver or the network does."""
    started = time.monotonic()

    def answer(status: int | None = None, excerpt: str = "", error: str = "") -> ReceiverAnswer:
        return ReceiverAnswer(status, excerpt, error, time.monotonic() - started)

    try:
        check_url(url, allow_private=allow_private)
        parts = urllib.parse.urlsplit(url.strip())
        if parts.hostname is None:  # check_url refuses an address without a host already
            return answer(error="The address is not valid.")
        host = parts.hostname.encode("idna").decode("ascii")
    except FetchError as error:
        return answer(error=str(error))
    except UnicodeError:
        return answer(error="The address is not valid.")
    https = parts.scheme.lower() == "https"
    port = parts.port or (443 if https else 80)
    if parts.username is not None:  # https://user:password@host/ is how many receivers take a password
        credentials = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers = {**headers, "authorization": "Basic " + base64.b64encode(credentials.encode()).decode("ascii")}
    connection: http.client.HTTPConnection
    if https:
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context())
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    opener = _Connection(allow_private)
    # http.client opens its socket through this attribute (HTTPSConnection then wraps it in TLS
    # for `host`), which lets the guard see, and the watchdog close, every socket it uses.
    connection._create_connection = opener  # type: ignore[attr-defined]  # http.client's hook, not in typeshed

    def stop() -> None:
        opener.stop()
        if connection.sock is not None:  # the TLS socket that replaced the one opener made
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(timeout, stop)
    watchdog.start()
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", target, body=body, headers={**headers, "user-agent": USER_AGENT})
        response = connection.getresponse()
        excerpt = response.read(read_limit).decode("utf-8", "replace").strip()
        refused = ""
        if 300 <= response.status < 400:
            refused = f"Redirects are not followed (Location: {response.getheader('location', 'none')})."
        return answer(response.status, excerpt, refused)
    except FetchError as error:
        return answer(error=str(error))
    except (OSError, http.client.HTTPException) as error:
        return answer(error=_describe(error, timed_out=opener.stopped, timeout=timeout))
    finally:
        watchdog.cancel()
        connection.close()


def _describe(error: Exception, *, timed_out: bool, timeout: float) -> str:
    """A sentence for support staff and the account holder, saying what went wrong."""
    if timed_out or isinstance(error, TimeoutError):
        return f"No answer within {timeout:g} s."
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"The certificate could not be verified: {error.verify_message}."
    if isinstance(error, ConnectionRefusedError):
        return "The connection was refused."
    if isinstance(error, http.client.RemoteDisconnected):
        return "The connection was closed without an answer."
    return f"The request failed: {error or type(error).__name__}."
