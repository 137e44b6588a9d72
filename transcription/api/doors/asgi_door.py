"""The front door's protections for the three doors bin/web serves outside Django's own request
cycle (/mcp, /v1/api/uploads, /v1/audio and /v1/models), and the request body of every path, read
once here.

- `protections(request)`: the Host check, then Django's whole middleware chain (settings.MIDDLEWARE,
  loaded as Django's handler loads it: the request's id, SecurityMiddleware's HTTPS redirect, HSTS,
  nosniff, Referrer-Policy and COOP, the body limit, the Content-Security-Policy, X-Frame-Options
  and the rest) run on the request with an empty answer inside, so each door gets exactly the
  headers and redirects every Django page gets, from the same settings, with nothing written
  twice. It answers either the refusal to send (a 301 to HTTPS, a 413) or the headers to add to
  the door's own answer.
- `guarded(shape)`: the wrapper of each door's ASGI app. The request's id is fixed before anything
  runs; an error nobody handled is raised inside that same chain, so it is handled as a view's is
  (Django's got_request_exception, which the Sentry-compatible reporter hears; the django.request
  log line with the request's id, mailed to ADMINS; error_bodies.json_server_error's 500 naming the
  id, with every protective header), then answered in the door's own shape (`shape`).
- `read_body(receive)`: the whole body, whether announced by Content-Length or sent chunked,
  refused with the JSON 413 once it passes MAX_REQUEST_BODY_BYTES (front_door.body_too_large).
  Django's WSGI side reads CONTENT_LENGTH bytes and nothing else, so a chunked body used to reach
  the views as empty; `with_body` hands the body on with its length.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.base import BaseHandler
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from config.error_reporting import REQUEST_ID_HEADER, plain_request_id
from transcription.api.front import front_door
from transcription.api.wire.error_bodies import RequestBodyTooLarge

# Headers of the door's own answer that the protections' empty answer must not override.
_OWN = {"content-type", "content-length"}


def django_request(scope, body: bytes = b"") -> ASGIRequest:
    return ASGIRequest(scope, io.BytesIO(body))


def protections(request: HttpRequest) -> tuple[HttpResponseBase | None, list[tuple[bytes, bytes]]]:
    """(a refusal to send as is, or None; the protective headers for the door's own answer). First
    the Host, by Django's own rule (request.get_host: ALLOWED_HOSTS, X-Forwarded-Host only under
    USE_X_FORWARDED_HOST), as every Django page checks it."""
    try:
        request.get_host()
    except DisallowedHost:
        return JsonResponse({"detail": "Invalid Host header."}, status=400), []
    empty = HttpResponse()
    response = through_chain(request, lambda request: empty)
    if response is not empty:
        return response, []
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in response.items()
        if name.lower() not in _OWN
    ]
    return None, headers


class _Chain(BaseHandler):
    """Django's handler with the door's answer where the view would be: settings.MIDDLEWARE, each
    middleware inside Django's conversion of an exception to its answer, as every view runs."""

    def _get_response(self, request):
        return request.door_answer(request)


@functools.lru_cache(maxsize=1)
def _chain() -> _Chain:
    handler = _Chain()
    handler.load_middleware()  # synchronous: no thread hop, nothing in it waits (no database, no I/O)
    return handler


def through_chain(request: HttpRequest, answer: Callable[[HttpRequest], HttpResponseBase]) -> HttpResponseBase:
    """`answer(request)` run inside the middleware chain of every Django path."""
    request.door_answer = answer  # type: ignore[attr-defined]
    response = _chain().get_response(request)
    assert isinstance(response, HttpResponseBase)  # a synchronous chain: the answer is a plain function's
    return response


def server_error(request: HttpRequest, error: BaseException) -> HttpResponseBase:
    """The 500 of an error nobody handled in a door (a bug), raised where a view's would be, so it
    is reported as one is (the signal the error reporter hears, the log line mailed to ADMINS):
    error_bodies.json_server_error's answer, with the request's id and every protective header.
    It may mail: call it from a thread."""

    def answer(request):
        raise error

    return through_chain(request, answer)


def with_request_id(scope):
    """The scope with the request's id in its X-Request-ID header (the client's when it is a plain
    token, else a new one), so every Django request made from it (the protections', the error's,
    an MCP tool's) names the same id."""
    headers = list(scope.get("headers") or ())
    name = REQUEST_ID_HEADER.lower().encode("latin-1")
    sent = next((value.decode("latin-1") for key, value in headers if key.lower() == name), "")
    request_id = plain_request_id(sent)
    if request_id == sent:
        return scope
    return {**scope, "headers": [*(h for h in headers if h[0].lower() != name), (name, request_id.encode())]}


def guarded(shape: Callable[[HttpResponseBase], HttpResponseBase] = lambda response: response):
    """The wrapper of a door's ASGI app (see the module's docstring): its request id fixed first, and
    an error that escapes it reported as a view's is and answered as server_error's 500 reshaped by
    `shape` (the door's own error shape), unless the door had begun its answer (then the error is
    still reported, and the server closes the connection)."""

    def wrap(app):
        @functools.wraps(app)
        async def door(scope, receive, send):
            if scope["type"] != "http":
                return await app(scope, receive, send)
            scope = with_request_id(scope)
            started = False

            async def watched(message):
                nonlocal started
                started = started or message["type"] == "http.response.start"
                await send(message)

            try:
                return await app(scope, receive, watched)
            except Exception as error:
                response = await sync_to_async(server_error, thread_sensitive=False)(django_request(scope), error)
                if started:
                    raise
                return await send_django_response(send, shape(response))

        return door

    return wrap


async def read_body(receive) -> bytes:
    """The request's body (Content-Length or chunked), or RequestBodyTooLarge past the limit."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        refusal = front_door.body_too_large(size)
        if refusal is not None:
            raise refusal
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replay(body: bytes):
    """An ASGI receive that hands `body` on once, then waits for the disconnect."""
    sent = False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def with_length(scope, body: bytes):
    """The scope with Transfer-Encoding replaced by the body's Content-Length."""
    headers = [
        (name, value)
        for name, value in scope["headers"]
        if name.lower() not in (b"transfer-encoding", b"content-length")
    ]
    return {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}


def chunked(scope) -> bool:
    return any(name.lower() == b"transfer-encoding" for name, _ in scope.get("headers") or ())


async def send_django_response(send, response: HttpResponse) -> None:
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.content})


async def send_json(send, status: int, body: dict, headers: dict | None = None, extra=()) -> None:
    content = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                *[(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in (headers or {}).items()],
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": content})


class ChunkedBodies:
    """ASGI: a request body sent chunked is read here (bounded by MAX_REQUEST_BODY_BYTES: a JSON 413
    past it) and handed to `app` with its Content-Length, which Django's WSGI side needs."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not chunked(scope):
            return await self.app(scope, receive, send)
        try:
            body = await read_body(receive)
        except RequestBodyTooLarge as refusal:
            _, headers = protections(django_request(scope))
            return await send_json(send, 413, {"detail": str(refusal.detail)}, extra=headers)
        await self.app(with_length(scope, body), replay(body), send)
