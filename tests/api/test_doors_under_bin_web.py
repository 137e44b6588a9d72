"""The doors as bin/web serves them: /mcp behind the same protections as every Django path (security
headers, HTTPS redirect and HSTS, the body limit, the per-address bad-token limit, a scheme-exact
Origin, no endless stream, deactivation), chunked bodies read, /health exempt from the redirect."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from accounts.services import account_create, account_deactivate, token_issue
from harness.processes import running_web

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PROTECTIVE = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


def call(base: str, method: str, path: str, body=None, headers=None, chunked=False):
    """(status, headers with lower-case names, body bytes); `chunked` sends the body in chunks
    with no Content-Length."""
    parts = urlsplit(base)
    assert parts.hostname, base
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        if chunked:
            pieces = [body[i : i + 1000] for i in range(0, len(body), 1000)]
            connection.request(method, path, body=iter(pieces), headers=headers or {}, encode_chunked=True)
        else:
            connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {name.lower(): value for name, value in response.getheaders()}, response.read()
    finally:
        connection.close()


def mcp(base, token=None, **headers):
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return call(base, "POST", "/mcp", TOOLS_LIST, {**MCP_HEADERS, **auth, **headers})


def test_mcp_has_every_protection_of_the_other_paths(tmp_path):
    account = account_create("mcp-door@example.com")
    token = token_issue(account)
    with running_web(
        tmp_path / "web.log",
        REDIS_URL=settings.REDIS_URL,
        RATE_LIMIT_ANONYMOUS_PER_MINUTE="5",
        MAX_REQUEST_BODY_BYTES="20000",
    ) as base:
        status, headers, _ = mcp(base, token)
        assert status == 200
        unauthorized = mcp(base)
        for answer in (headers, unauthorized[1]):
            assert all(name in answer for name in PROTECTIVE), answer
            assert answer["x-frame-options"] == "DENY" and answer["x-content-type-options"] == "nosniff"

        host = urlsplit(base).netloc
        assert mcp(base, token, Origin=f"http://{host}")[0] == 200
        assert mcp(base, token, Origin=f"https://{host}")[0] == 403  # the same host, another scheme
        assert mcp(base, token, Origin="http://attacker.example")[0] == 403

        big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x" * 30000}}).encode()
        auth = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        for chunked in (False, True):
            status, headers, body = call(base, "POST", "/mcp", big, auth, chunked=chunked)
            assert status == 413 and "larger than" in json.loads(body)["detail"]
        assert call(base, "POST", "/mcp", TOOLS_LIST, auth, chunked=True)[0] == 200  # a small chunked body is read

        status, headers, _ = call(base, "GET", "/mcp", headers={"Accept": "text/event-stream", **auth})
        assert status == 405  # no stream that never ends

        # Bad tokens (and the missing one above) count against the address, as REST's do: 401
        # until the limit, then 429.
        statuses = [mcp(base, "vts_" + "x" * 40)[0] for _ in range(4)]
        refused = mcp(base, "vts_" + "y" * 40)
        assert statuses == [401] * 4 and refused[0] == 429 and int(refused[1]["retry-after"]) >= 1
        assert mcp(base, token)[0] == 200  # a valid token is not the address's bad tokens


def test_https_redirect_and_hsts_apply_to_mcp_and_health_is_exempt(tmp_path):
    token = token_issue(account_create("mcp-https@example.com"))
    with running_web(
        tmp_path / "web.log",
        REDIS_URL=settings.REDIS_URL,
        SECURE_SSL_REDIRECT="true",
        SECURE_HSTS_SECONDS="3600",
        TRUST_PROXY_HEADERS="true",
    ) as base:
        status, headers, _ = mcp(base, token)
        assert status == 301 and headers["location"].startswith("https://")
        status, headers, _ = mcp(base, token, **{"X-Forwarded-Proto": "https"})
        assert status == 200 and headers["strict-transport-security"].startswith("max-age=3600")
        assert call(base, "GET", "/health")[0] == 200  # plain-HTTP load-balancer probes
        assert call(base, "GET", "/jobs/")[0] == 301  # every other path is redirected as before


def test_a_chunked_request_body_is_read_and_deactivation_closes_mcp(tmp_path):
    account = account_create("chunked@example.com")
    token = token_issue(account)
    body = json.dumps({"url": "https://videos.example.com/talk.mp4"}).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with running_web(tmp_path / "web.log", REDIS_URL=settings.REDIS_URL, MAX_REQUEST_BODY_BYTES="20000") as base:
        status, _, answer = call(base, "POST", "/v1/api/transcribe", body, headers, chunked=True)
        assert status == 200, answer
        assert json.loads(answer)["id"]
        status, _, answer = call(base, "POST", "/v1/api/transcribe", b" " * 30000 + body, headers, chunked=True)
        assert status == 413 and "larger than" in json.loads(answer)["detail"]

        assert mcp(base, token)[0] == 200
        account_deactivate(account)
        status, headers, body = mcp(base, token)
        assert status == 401 and headers["www-authenticate"] == "Bearer" and "deactivated" in json.loads(body)["detail"]


def test_no_answer_names_the_server_stack(tmp_path):
    """Issue 41: every answer said `server: uvicorn`, telling a prober which server (and so which
    of its known flaws) to try. Django's pages, the ASGI doors outside Django (uploads, the
    OpenAI door, /mcp), errors and /health: none names the stack."""
    token = token_issue(account_create("no-server-header@example.com"))
    bearer = {"Authorization": f"Bearer {token}"}
    with running_web(tmp_path / "web.log", REDIS_URL=settings.REDIS_URL) as base:
        answers = {
            "home": call(base, "GET", "/"),
            "health": call(base, "GET", "/health"),
            "not found": call(base, "GET", "/no-such-page/"),
            "openapi": call(base, "GET", "/v1/api/openapi.json"),
            "unauthorized": call(base, "GET", "/v1/api/transcription/3f7c0000-0000-0000-0000-000000000000"),
            "uploads": call(base, "OPTIONS", "/v1/api/uploads", headers=bearer),
            "openai models": call(base, "GET", "/v1/models", headers=bearer),
            "mcp": mcp(base, token),
        }
    for name, (status, headers, _) in answers.items():
        assert status < 500, (name, status)
        assert "server" not in headers, f"{name}: server: {headers.get('server')}"


def test_every_door_checks_the_host_by_djangos_rule_and_names_the_request(tmp_path):
    """The Host is checked once, by Django's rule (asgi_door.protections), for /mcp, the uploads'
    door and the OpenAI-compatible door as for the pages; every answer carries its request's id."""
    account = account_create("hosts@example.com")
    token = token_issue(account)
    auth = {"Authorization": f"Bearer {token}"}
    with running_web(tmp_path / "web.log", REDIS_URL=settings.REDIS_URL) as base:
        doors = [
            ("POST", "/mcp", TOOLS_LIST, {**MCP_HEADERS, **auth}),
            ("GET", "/v1/api/uploads/00000000-0000-0000-0000-000000000000", None, auth),
            ("GET", "/v1/models", None, auth),
            ("GET", "/v1/api/openapi.json", None, {}),
        ]
        for method, path, body, headers in doors:
            status, answer, raw = call(base, method, path, body, {**headers, "Host": "evil.example"})
            assert status == 400, (path, status, raw[:200])
            status, answer, _ = call(base, method, path, body, {**headers, "X-Request-ID": "door-check-1"})
            assert status in (200, 404), (path, status)
            assert answer.get("x-request-id") == "door-check-1", (path, answer)
