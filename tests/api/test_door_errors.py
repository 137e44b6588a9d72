"""A bug in each of the three doors outside Django's views (uploads, the OpenAI door, /mcp) is
handled as a view's is (issue 55): the answer is the door's own 500 shape naming the request's
id, with every protective header, and the error is mailed to ADMINS and sent to the
Sentry-compatible receiver (tests/test_error_reporting.py's, on 127.0.0.1). The doors run in this
process on their real ASGI apps (the ones config.asgi routes to); the bug is a function of the
door that raises."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.core import mail
from django.test import override_settings

from tests.crash_urls import CRASH_MESSAGE
from tests.test_error_reporting import sentry_receiver  # noqa: F401 (a fixture)

# the doors work in threads of their own: the token must be committed to be seen there
live = pytest.mark.django_db(transaction=True)


async def _exchange(app, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes = b""):
    """One HTTP request through the ASGI `app`: (status, headers, body)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"content-length", str(len(body)).encode()), *headers],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    messages, answered, sent = [], asyncio.Event(), False

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        messages.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    await app(scope, receive, send)
    [start] = [m for m in messages if m["type"] == "http.response.start"]
    content = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, content


async def _with_lifespan(app, work):
    """`work()` while `app`'s lifespan runs (the MCP SDK's session manager lives there)."""
    inbox: asyncio.Queue = asyncio.Queue()
    started, stopped = asyncio.Event(), asyncio.Event()

    async def send(message):
        (started if message["type"].startswith("lifespan.startup") else stopped).set()

    await inbox.put({"type": "lifespan.startup"})
    task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, send))
    await started.wait()
    try:
        return await work()
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await task


def _bug(*args, **kwargs):
    raise RuntimeError(CRASH_MESSAGE)


async def _async_bug(*args, **kwargs):
    _bug()


def _reported(envelopes, request_id: str) -> None:
    """The error reached both: ADMINS' mail (naming the request's id) and the receiver."""
    import sentry_sdk

    [message] = [m for m in mail.outbox if m.to == ["ops@example.org"]]
    assert CRASH_MESSAGE in message.body and request_id in message.body
    sentry_sdk.flush(timeout=5)
    assert CRASH_MESSAGE.encode() in b"\n".join(envelopes)


def _protected(headers: dict, request_id: str) -> None:
    assert headers["x-request-id"] == request_id
    assert headers["x-content-type-options"] == "nosniff" and "content-security-policy" in headers


@live
@override_settings(ADMINS=[("Ops", "ops@example.org")])
def test_a_bug_in_the_uploads_door_is_its_json_500_and_is_reported(token, monkeypatch, sentry_receiver):  # noqa: F811
    from transcription.api.doors import uploads

    monkeypatch.setattr(uploads, "_route", _async_bug)
    headers = [(b"authorization", f"Bearer {token}".encode()), (b"x-request-id", b"req-uploads-1")]
    status, answer, body = asyncio.run(_exchange(uploads.application, "POST", "/v1/api/uploads", headers))
    assert status == 500
    assert json.loads(body) == {"detail": "Internal error (request id req-uploads-1); the operators have been told."}
    _protected(answer, "req-uploads-1")
    _reported(sentry_receiver, "req-uploads-1")


@live
@override_settings(ADMINS=[("Ops", "ops@example.org")])
def test_a_bug_in_the_openai_door_is_openais_500_and_is_reported(token, monkeypatch, sentry_receiver):  # noqa: F811
    from transcription.api.doors import openai_compat

    monkeypatch.setattr(openai_compat, "_models", _async_bug)
    status, answer, body = asyncio.run(
        _exchange(openai_compat.application, "GET", "/v1/models", [(b"authorization", f"Bearer {token}".encode())])
    )
    assert status == 500
    request_id = answer["x-request-id"]  # none was sent: the door made one, and the body names it
    assert json.loads(body) == {
        "error": {
            "message": f"Internal error (request id {request_id}); the operators have been told.",
            "type": "server_error",
            "param": None,
            "code": "internal_error",
        }
    }
    assert answer["x-should-retry"] == "false"
    _protected(answer, request_id)
    _reported(sentry_receiver, request_id)


@live
@override_settings(ADMINS=[("Ops", "ops@example.org")])
def test_a_bug_in_an_mcp_tool_is_a_tool_error_naming_the_request_and_is_reported(token, monkeypatch, sentry_receiver):  # noqa: F811
    from transcription.api.doors import mcp_server
    from transcription.api.front import front_door

    monkeypatch.setattr(front_door, "perform", _bug)
    sdk, door = mcp_server.asgi_app()  # a server of its own: the SDK's lifespan runs once per app
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_balance", "arguments": {}}}
    headers = [
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"x-request-id", b"req-mcp-1"),
    ]
    status, answer, body = asyncio.run(
        _with_lifespan(sdk, lambda: _exchange(door, "POST", "/mcp", headers, json.dumps(call).encode()))
    )
    assert status == 200, body
    result = json.loads(body)["result"]
    detail = "Internal error (request id req-mcp-1); the operators have been told."
    assert result["isError"] is True and result["content"] == [{"type": "text", "text": detail}]
    _protected(answer, "req-mcp-1")
    _reported(sentry_receiver, "req-mcp-1")


def test_config_asgi_serves_the_guarded_doors():
    from config import asgi
    from transcription.api.doors.mcp_gate import McpGate

    assert isinstance(asgi.mcp_application.__wrapped__, McpGate)
    for door in (asgi.uploads.application, asgi.openai_compat.application):
        assert door.__wrapped__.__qualname__ == "application"
