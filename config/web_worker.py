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
    }
