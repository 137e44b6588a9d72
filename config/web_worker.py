"""bin/web's gunicorn worker: uvicorn with its proxy-header rewriting off, on its fast path.

The fast path is named, not left to "auto": httptools parses HTTP in C and uvloop runs the event
loop; with h11 and asyncio's own loop a 1 GB upload cost the web process about twice the
user-space CPU (bench/uploads). Naming them makes a missing install fail at start instead of
quietly slowing every door down.

uvicorn otherwise replaces the client's address (and scheme) with X-Forwarded-For (and
X-Forwarded-Proto) whenever the TCP peer is in gunicorn's forwarded_allow_ips, which defaults to
loopback and can be widened by the FORWARDED_ALLOW_IPS environment variable: behind a same-host
proxy that passes the client's own header through, every per-address limit would count whatever
address the client wrote. The application reads those headers itself, in one place
(accounts.client, under TRUST_PROXY_HEADERS and TRUSTED_PROXIES; Django's
SECURE_PROXY_SSL_HEADER for the scheme), so the server must hand it the real peer.

WebSocket pings are sent every 20 s, as uvicorn does, but a late pong closes nothing: the live door
stops reading a client that sends audio faster than real time once it is LIVE_BUFFER_SECONDS ahead
of recognition, and that client's pong then waits in the socket behind its audio until recognition
reaches it. With uvicorn's 20 s timeout a 30-minute recording sent at once was cut off after 40 s
with a bare 1011 close (bench/live/memory.py), where it should only be slowed. A socket whose
client is gone is still closed, by the door's LIVE_IDLE_TIMEOUT_SECONDS.

No `server` header (uvicorn's `server_header`): "server: uvicorn" on every answer told a prober
which server, and so which of its published flaws, to try; nobody else needs it.
"""

from uvicorn_worker import UvicornWorker


class WebWorker(UvicornWorker):
    CONFIG_KWARGS = {
        **UvicornWorker.CONFIG_KWARGS,
        "proxy_headers": False,
        "server_header": False,
        "loop": "uvloop",
        "http": "httptools",
        "ws_ping_timeout": None,
    }
