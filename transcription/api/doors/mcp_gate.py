"""The MCP door, in front of the SDK's app: Host, the protections of every path, a scheme-exact
Origin, the Caller from the bearer token, the body read whole and bounded (McpGate); and the
threads that do the MCP server's database work."""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

import anyio
from django.conf import settings
from django.db import close_old_connections
from rest_framework import exceptions

from transcription.api.doors import asgi_door
from transcription.api.front import front_door, ratelimit
from transcription.api.wire.error_bodies import RequestBodyTooLarge


@functools.lru_cache(maxsize=1)
def database_threads() -> anyio.CapacityLimiter:
    """At most WEB_THREADS threads of a process do the MCP server's database work at once, so it
    holds at most that many connections (Django's views have their own WEB_THREADS, config/asgi.py)."""
    return anyio.CapacityLimiter(settings.WEB_THREADS)


def origin_allowed(origin: str, request) -> bool:
    """A browser's Origin must be this server, scheme included: the scheme and Host it called
    (https behind a TLS proxy under TRUST_PROXY_HEADERS), or PUBLIC_BASE_URL's."""
    return _origin(origin) in {_origin(f"{request.scheme}://{request.get_host()}"), _origin(settings.PUBLIC_BASE_URL)}


def _origin(url: str) -> tuple[str, str] | None:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = 443 if parts.scheme == "https" else 80
    try:
        port = parts.port or default
    except ValueError:
        return None
    return parts.scheme, f"{parts.hostname.lower()}:{port}"


def mcp_caller(authorization: str | None, address: str) -> front_door.Caller:
    close_old_connections()
    try:
        return front_door.caller_from_token(authorization, address, front_door.MCP)
    finally:
        close_old_connections()


class McpGate:
    """The MCP door, an adapter of the front door, in front of the SDK's app: the Host (DNS
    rebinding; 400), the protections every Django path has (asgi_door.protections: the HTTPS
    redirect, HSTS and the security headers on every answer, the body limit), a scheme-exact
    Origin (403), the Caller from the bearer token (401 with `WWW-Authenticate: Bearer`, 429 with
    Retry-After once an address sent too many bad tokens), then the body, read whole and bounded
    (413, chunked too). The stateless JSON server has nothing to push, so GET (a stream that
    would never end) is a 405. The Caller goes on in scope["state"]["caller"]."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = asgi_door.django_request(scope)
        refusal, protective = asgi_door.protections(request)
        if refusal is not None:
            return await asgi_door.send_django_response(send, refusal)

        async def send_protected(message):
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", ())}
                extra = [(name, value) for name, value in protective if name not in present]
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        origin = request.META.get("HTTP_ORIGIN")
        if origin and not origin_allowed(origin, request):
            return await asgi_door.send_json(send_protected, 403, {"detail": "Origin not allowed."})
        try:
            caller = await anyio.to_thread.run_sync(
                mcp_caller,
                request.META.get("HTTP_AUTHORIZATION"),
                ratelimit.client_address(request),
                limiter=database_threads(),
            )
        except exceptions.APIException as error:
            answer = front_door.error_answer(error)
            return await asgi_door.send_json(send_protected, answer.status, answer.body, answer.headers)
        if scope["method"] == "GET":
            return await asgi_door.send_json(
                send_protected,
                405,
                {"detail": "This server answers POST only: it has no stream to open."},
                {"Allow": "POST, DELETE"},
            )
        try:
            body = await asgi_door.read_body(receive)
        except RequestBodyTooLarge as refusal:
            return await asgi_door.send_json(send_protected, 413, {"detail": str(refusal.detail)})
        state = {**scope.get("state", {}), "caller": caller}
        scope = asgi_door.with_length({**scope, "state": state}, body)
        await self.app(scope, asgi_door.replay(body), send_protected)
