"""A gunicorn config file for bench/polls (passed to bin/web with -c): in each worker, once the
application is loaded, GET /bench/asgi-constant is answered by a bare ASGI function with a constant
JSON body of BENCH_CONSTANT_BYTES (the poll's answer's size), in front of config.asgi. What the
server itself costs to send that many bytes: no Django, no Redis, no thread hand-over, so the poll
against it shows how close the poll is to the server's own limit for an answer of its size."""

import json
import os

PATH = "/bench/asgi-constant"


def _body(size: int) -> bytes:
    padding = size - len(json.dumps({"padding": ""}))
    return json.dumps({"padding": "x" * max(0, padding)}).encode()


def post_worker_init(worker):
    body = _body(int(os.environ.get("BENCH_CONSTANT_BYTES", "47000")))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    application = worker.wsgi  # config.asgi's application, loaded by gunicorn

    async def with_constant(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == PATH:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await application(scope, receive, send)

    worker.wsgi = with_constant  # uvicorn's worker serves worker.wsgi (uvicorn_worker: _serve)
