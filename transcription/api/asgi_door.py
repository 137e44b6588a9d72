"""The front door's protections for what bin/web serves outside Django's own request cycle (/mcp),
and the request body of every path, read once here.

- `protections(request)`: the Host check and Django's own middleware (the request's id, SecurityMiddleware: the HTTPS redirect, HSTS,
  nosniff, Referrer-Policy, COOP; the body limit; the Content-Security-Policy; X-Frame-Options)
  run on the request with an empty answer inside, so /mcp gets exactly the headers and redirects
  every Django page gets, from the same settings, with nothing written twice. It answers either
  the refusal to send (a 301 to HTTPS, a 413) or the headers to add to the door's own answer.
- `read_body(receive)`: the whole body, whether announced by Content-Length or sent chunked,
  refused with the JSON 413 once it passes MAX_REQUEST_BODY_BYTES (front_door.body_too_large).
  Django's WSGI side reads CONTENT_LENGTH bytes and nothing else, so a chunked body used to reach
  the views as empty; `with_body` hands the body on with its length.
"""

from __future__ import annotations

import io
import json

from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware

from config.error_reporting import RequestIdMiddleware
from config.middleware import ContentSecurityPolicyMiddleware, RequestBodyLimitMiddleware

from . import front_door
from .error_bodies import RequestBodyTooLarge

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
    chain = RequestIdMiddleware(
        SecurityMiddleware(
            RequestBodyLimitMiddleware(ContentSecurityPolicyMiddleware(XFrameOptionsMiddleware(lambda request: empty)))
        )
    )
    response = chain(request)
    assert isinstance(response, HttpResponseBase)  # a synchronous chain: the innermost answer is a plain function's
    if response is not empty:
        return response, []
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in response.items()
        if name.lower() not in _OWN
    ]
    return None, headers


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
