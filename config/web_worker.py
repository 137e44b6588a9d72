"""bin/web's gunicorn worker: uvicorn with its proxy-header rewriting off.

uvicorn otherwise replaces the client's address (and scheme) with X-Forwarded-For (and
X-Forwarded-Proto) whenever the TCP peer is in gunicorn's forwarded_allow_ips, which defaults to
loopback and can be widened by the FORWARDED_ALLOW_IPS environment variable: behind a same-host
proxy that passes the client's own header through, every per-address limit would count whatever
address the client wrote. The application reads those headers itself, in one place
(accounts.client, under TRUST_PROXY_HEADERS and TRUSTED_PROXIES; Django's
SECURE_PROXY_SSL_HEADER for the scheme), so the server must hand it the real peer.
"""

from uvicorn_worker import UvicornWorker


class WebWorker(UvicornWorker):
    CONFIG_KWARGS = {**UvicornWorker.CONFIG_KWARGS, "proxy_headers": False}
