"""The MCP server at /mcp: the v1 API's operations as tools for AI agents (Streamable HTTP, stateless,
JSON answers), on the official SDK's MCPServer.

One account, one token, one ledger, one pair of rate-limit counters with the REST API: every tool
calls transcription.api.operations (the same serializers, services and presenters as the views),
counts in transcription.api.ratelimit's counters, and the account comes from the same bearer-token
code (accounts.authentication), checked by `McpGate` before the SDK sees the request.

Arguments are checked by the REST serializers, not by the SDK: each tool function takes its
arguments untyped (so the SDK's pydantic model passes anything through) and the published
inputSchema is the OpenAPI document's request schema, so an agent sees the same names, types and
defaults, and a wrong value gets the 422's message naming the field.
"""

from __future__ import annotations

import functools
import json
import logging
import warnings
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import anyio
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from rest_framework import exceptions

from accounts.authentication import BearerTokenAuthentication
from accounts.models import Account
from billing import pricing
from billing.selectors import account_balance
from transcription.dispatch import QueueUnavailable

from . import operations, ratelimit
from .errors import Busy, RequestValidationError

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"


@functools.lru_cache(maxsize=1)
def database_threads() -> anyio.CapacityLimiter:
    """At most WEB_THREADS threads of a process do the MCP server's database work at once, so it
    holds at most that many connections (Django's views have their own WEB_THREADS, config/asgi.py)."""
    return anyio.CapacityLimiter(settings.WEB_THREADS)


NOT_GIVEN: Any = type("NotGiven", (), {"__repr__": lambda self: "NOT_GIVEN"})()

POLL_HINT = (
    "Poll `get_transcription` with the returned id every 2-3 s until `state` is `done` or `failed` "
    "(each poll counts against 300 reads a minute). A video that cannot be fetched, or an account "
    "without minutes, is not a tool error: the job ends `failed` with the reason in `error` and its "
    "minutes are refunded."
)


# --- Auth, Origin and Host: checked before the SDK sees the request -----------------------------


def account_id_for(authorization: str | None):
    """The account behind an `Authorization` header value, by the REST API's own authentication
    (its token cache is dropped on revocation, so a revoked token stops working at once)."""
    request = SimpleNamespace(headers={"authorization": authorization} if authorization else {})
    close_old_connections()
    try:
        result = BearerTokenAuthentication().authenticate(request)
    finally:
        close_old_connections()
    if result is None:
        raise exceptions.NotAuthenticated("Missing API token: send 'Authorization: Bearer <token>'.")
    return result[0].pk


def origin_allowed(origin: str, host: str) -> bool:
    """A browser's Origin must be this server: the Host it called, or PUBLIC_BASE_URL's."""
    netloc = urlsplit(origin).netloc.lower()
    allowed = {host.lower(), urlsplit(settings.PUBLIC_BASE_URL).netloc.lower()}
    return bool(netloc) and netloc in allowed


class McpGate:
    """ASGI middleware in front of the SDK's app: Host (DNS rebinding), Origin (the transport
    section: a browser page from another origin gets 403), then the bearer token (401 with
    `WWW-Authenticate: Bearer`). The account's id goes on in scope["state"]["account_id"]."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        host = headers.get("host", "")
        domain, _port = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            return await _answer(send, 400, "Invalid Host header.")
        origin = headers.get("origin")
        if origin and not origin_allowed(origin, host):
            return await _answer(send, 403, "Origin not allowed.")
        try:
            account_id = await anyio.to_thread.run_sync(
                account_id_for, headers.get("authorization"), limiter=database_threads()
            )
        except exceptions.APIException as error:
            return await _answer(send, 401, str(error.detail), [(b"www-authenticate", b"Bearer")])
        state = {**scope.get("state", {}), "account_id": account_id}
        await self.app({**scope, "state": state}, receive, send)


async def _answer(send, status: int, detail: str, headers=()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- Tools ---------------------------------------------------------------------------------------


def _account_id(ctx: Context) -> Any:
    return ctx.request_context.request.state.account_id


def _error(text: str, detail) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"detail": detail}, is_error=True
    )


def _validation_text(errors: list[dict]) -> str:
    """'Invalid arguments: url: Enter a valid URL.' The location (body/query/path) is REST's: here
    every field is an argument, so the entry names the argument."""
    parts = []
    for entry in errors:
        field = ".".join(str(part) for part in entry["loc"][1:]) or "arguments"
        parts.append(f"{field}: {entry['msg']}")
    return "Invalid arguments: " + "; ".join(parts)


def _run(bucket: str, operation, summary) -> CallToolResult:
    """Count the call (auth came first, in McpGate; then the rate limit; then the arguments, as
    REST does), run the operation in this worker thread, and answer its body as structuredContent."""
    close_old_connections()
    try:
        account_id, call = operation
        state = ratelimit.hit(account_id, bucket)
        if not state.allowed:
            text = f"Rate limit exceeded; try again in {state.retry_after} seconds."
            result = _error(text, text)
            result.structured_content["retry_after"] = state.retry_after
            return result
        try:
            body = call()
        except RequestValidationError as error:
            return _error(_validation_text(error.errors), error.errors)
        except exceptions.NotFound as error:
            return _error(str(error.detail), str(error.detail))
        except (Busy, QueueUnavailable) as error:  # listings full, or the broker down: nothing stored
            text = str(error.detail if isinstance(error, Busy) else error)
            result = _error(text, text)
            result.structured_content["retry_after"] = error.retry_after
            return result
        return CallToolResult(content=[TextContent(type="text", text=summary(body))], structured_content=body)
    finally:
        close_old_connections()


async def _call(ctx: Context, bucket: str, call, summary) -> CallToolResult:
    account_id = _account_id(ctx)
    work = (account_id, functools.partial(call, account_id))
    return await anyio.to_thread.run_sync(_run, bucket, work, summary, limiter=database_threads())


def _given(**arguments) -> dict:
    return {name: value for name, value in arguments.items() if value is not NOT_GIVEN}


def _queued(body: dict) -> str:
    return f"Queued job {body['id']}. Poll get_transcription with this id every 2-3 s until state is done or failed."


def _account(account_id) -> Account:
    return Account(pk=account_id)


async def transcribe(
    ctx: Context,
    url=NOT_GIVEN,
    upload_id=NOT_GIVEN,
    language_code=NOT_GIVEN,
    verbatim=NOT_GIVEN,
    tag_audio_events=NOT_GIVEN,
    prompt=NOT_GIVEN,
) -> CallToolResult:
    data = _given(
        url=url,
        upload_id=upload_id,
        language_code=language_code,
        verbatim=verbatim,
        tag_audio_events=tag_audio_events,
        prompt=prompt,
    )
    return await _call(ctx, ratelimit.JOBS, lambda a: operations.transcribe(_account(a), data), _queued)


async def create_subtitles(
    ctx: Context,
    url=NOT_GIVEN,
    upload_id=NOT_GIVEN,
    prompt=NOT_GIVEN,
    language_code=NOT_GIVEN,
    verbatim=NOT_GIVEN,
    tag_audio_events=NOT_GIVEN,
    format=NOT_GIVEN,  # noqa: A002  (the REST field's name)
    target_languages=NOT_GIVEN,
) -> CallToolResult:
    data = _given(
        url=url,
        upload_id=upload_id,
        prompt=prompt,
        language_code=language_code,
        verbatim=verbatim,
        tag_audio_events=tag_audio_events,
        format=format,
        target_languages=target_languages,
    )
    return await _call(ctx, ratelimit.JOBS, lambda a: operations.create_subtitles(_account(a), data), _queued)


async def burn_subtitles(
    ctx: Context,
    url=NOT_GIVEN,
    upload_id=NOT_GIVEN,
    prompt=NOT_GIVEN,
    language_code=NOT_GIVEN,
    verbatim=NOT_GIVEN,
    tag_audio_events=NOT_GIVEN,
    background=NOT_GIVEN,
    font_size=NOT_GIVEN,
    quality=NOT_GIVEN,
    target_languages=NOT_GIVEN,
) -> CallToolResult:
    data = _given(
        url=url,
        upload_id=upload_id,
        prompt=prompt,
        language_code=language_code,
        verbatim=verbatim,
        tag_audio_events=tag_audio_events,
        background=background,
        font_size=font_size,
        quality=quality,
        target_languages=target_languages,
    )
    return await _call(ctx, ratelimit.JOBS, lambda a: operations.burn_subtitles(_account(a), data), _queued)


async def transcribe_playlist(
    ctx: Context,
    url=NOT_GIVEN,
    type=NOT_GIVEN,  # noqa: A002  (the REST field's name)
    language_code=NOT_GIVEN,
    verbatim=NOT_GIVEN,
    target_languages=NOT_GIVEN,
    quality=NOT_GIVEN,
    font_size=NOT_GIVEN,
    background=NOT_GIVEN,
) -> CallToolResult:
    data = _given(
        url=url,
        type=type,
        language_code=language_code,
        verbatim=verbatim,
        target_languages=target_languages,
        quality=quality,
        font_size=font_size,
        background=background,
    )

    def summary(body):
        return (
            f"Queued batch {body['batch_id']} ({body['title']!r}): {body['count']} jobs, {body['skipped']} videos "
            "skipped. Poll get_batch with batch_id every 2-3 s, or each job with get_transcription."
        )

    return await _call(ctx, ratelimit.JOBS, lambda a: operations.transcribe_playlist(_account(a), data), summary)


def _job_summary(body: dict) -> str:
    text = f"Job {body['id']}: {body['state']}, {body['progress']}%."
    if body["state"] == "failed":
        text += f" Error: {body['error']}"
    elif body["state"] != "done":
        text += " Poll again in 2-3 s."
    return text


async def get_transcription(ctx: Context, id=NOT_GIVEN) -> CallToolResult:  # noqa: A002
    return await _call(ctx, ratelimit.POLLS, lambda a: operations.get_transcription(a, _id(id)), _job_summary)


async def get_batch(ctx: Context, id=NOT_GIVEN) -> CallToolResult:  # noqa: A002
    def summary(body):
        states = [item["state"] for item in body["items"]]
        counts = ", ".join(f"{states.count(state)} {state}" for state in sorted(set(states))) or "no jobs"
        return f"Batch {body['batch_id']} ({body['title']!r}): {counts}."

    return await _call(ctx, ratelimit.POLLS, lambda a: operations.get_batch(a, _id(id)), summary)


def _id(value):
    return None if value is NOT_GIVEN else value


async def preview_playlist(
    ctx: Context,
    url=NOT_GIVEN,
    type=NOT_GIVEN,  # noqa: A002
    quality=NOT_GIVEN,
    target_languages=NOT_GIVEN,
) -> CallToolResult:
    query = _given(url=url, type=type, quality=quality, target_languages=target_languages)

    def summary(body):
        verdict = "fits" if body["fits"] else "does not fit"
        return (
            f"{body['title']!r}: {len(body['videos'])} videos would be queued ({body['skipped']} skipped); "
            f"needs {body['needed_seconds']} s of balance, {body['remaining_seconds']} s left: it {verdict}."
        )

    return await _call(ctx, ratelimit.POLLS, lambda a: operations.preview_playlist(a, query), summary)


def pricing_rules() -> str:
    burned = ", ".join(
        f"{pricing.base_multiplier('burned', quality)}x at quality {quality}" for quality in ("default", "hd", "uhd")
    )
    burned_translation = ", ".join(
        f"+{pricing.translation_multiplier('burned', quality)}x at {quality}" for quality in ("default", "hd", "uhd")
    )
    return (
        "Jobs are paid from the balance in seconds of the video's length. "
        f"A transcript costs {pricing.base_multiplier('transcript')}x the length; subtitles "
        f"{pricing.base_multiplier('subtitles')}x, +{pricing.translation_multiplier('subtitles')}x per target "
        f"language; a burned-in video {burned}, per target language {burned_translation}. A playlist costs the "
        "sum over its queued videos. The charge is made when the length is known; if the balance covers only "
        "part of a video, the job makes a preview of the first whole minutes covered (is_preview, "
        "preview_minutes); a failed job is refunded."
    )


def _balance(account_id) -> dict:
    return {"remaining_seconds": account_balance(account_id), "pricing": pricing_rules()}


async def get_balance(ctx: Context) -> CallToolResult:
    def summary(body):
        return (
            f"{body['remaining_seconds']} seconds left ({pricing.format_minutes(body['remaining_seconds'])}). "
            + (body["pricing"])
        )

    return await _call(ctx, ratelimit.POLLS, _balance, summary)


# --- Schemas: the OpenAPI document's, with its references inlined ------------------------------


@functools.lru_cache(maxsize=1)
def openapi_document() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _inline(node, components: dict):
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(components[node["$ref"].rsplit("/", 1)[-1]], components)
            rest = {key: value for key, value in node.items() if key != "$ref"}
            return {**target, **_inline(rest, components)}
        if len(node.get("allOf", ())) == 1:
            # drf-spectacular wraps a reference that has siblings (a default) in allOf: flatten it.
            rest = {key: value for key, value in node.items() if key != "allOf"}
            return {**_inline(node["allOf"][0], components), **_inline(rest, components)}
        return {key: _inline(value, components) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, components) for item in node]
    return node


def component(name: str) -> dict:
    components = openapi_document()["components"]["schemas"]
    return _inline(components[name], components)


def _id_schema(what: str) -> dict:
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid", "description": f"The {what}'s id, as the queueing tool gave it."}
        },
        "required": ["id"],
    }


def preview_input_schema() -> dict:
    from . import serializers as s

    parameters = openapi_document()["paths"]["/v1/api/playlist"]["get"]["parameters"]
    components = openapi_document()["components"]["schemas"]
    fields = s.PlaylistQuerySerializer().fields
    properties = {}
    for parameter in parameters:
        schema = _inline(parameter["schema"], components)
        default = fields[parameter["name"]].default
        if default is not None and not callable(default) and repr(default) != "<class 'rest_framework.fields.empty'>":
            schema["default"] = str(default)
        properties[parameter["name"]] = {**schema, "description": parameter.get("description", "")}
    return {"type": "object", "properties": properties, "required": ["url"]}


BALANCE_SCHEMA = {
    "type": "object",
    "properties": {
        "remaining_seconds": {"type": "integer", "description": "Seconds of video length left on the account"},
        "pricing": {"type": "string", "description": "What each kind of job costs, in plain words"},
    },
    "required": ["remaining_seconds", "pricing"],
}

QUEUEING = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True)
READING = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


def tool_table() -> list[tuple]:
    """(function, description, input schema, output schema, annotations) of every tool."""
    length = "the video's length"
    return [
        (
            transcribe,
            "Queue one video (any public URL yt-dlp can fetch) for a plain-text transcript with timestamps and "
            f"speaker tags. Costs {pricing.base_multiplier('transcript')}x {length} from the balance (see "
            "get_balance). Counts as a job request (60 a minute). Returns `id`. " + POLL_HINT,
            component("TranscribeRequest"),
            component("QueuedJob"),
            QUEUEING,
        ),
        (
            create_subtitles,
            "Queue one video for subtitles: both `srt` and `webvtt` are made; `format` says which one you read "
            "and is echoed. Each of `target_languages` adds a translation with the same cues. Costs "
            f"{pricing.base_multiplier('subtitles')}x {length}, +{pricing.translation_multiplier('subtitles')}x per "
            "target language. Counts as a job request. Returns `id` and `format`. " + POLL_HINT,
            component("SubtitlesRequest"),
            component("QueuedSubtitlesJob"),
            QUEUEING,
        ),
        (
            burn_subtitles,
            "Queue one video to be re-encoded with its subtitles drawn in the picture, at `quality` default "
            "(720p), hd (1080p) or uhd (4K); each of `target_languages` gives one more video. Costs "
            + ", ".join(f"{pricing.base_multiplier('burned', q)}x" for q in ("default", "hd", "uhd"))
            + f" {length} by quality, more per target language. Counts as a job request. Returns `id`; once done, "
            "`burned_video_url` is a signed link valid 7 days. " + POLL_HINT,
            component("BurnSubtitlesRequest"),
            component("QueuedJob"),
            QUEUEING,
        ),
        (
            transcribe_playlist,
            "Queue every public video of a playlist or channel (its first 25) as one job each, all of `type`. "
            "Each job costs what it costs alone. Call preview_playlist first to see the cost. Counts as one job "
            "request. Returns `batch_id`, `title`, `count`, `skipped`, `ids`. Poll get_batch with `batch_id` "
            "every 2-3 s until every item is `done` or `failed`, then read each job's text with get_transcription.",
            component("TranscribePlaylistRequest"),
            component("QueuedBatch"),
            QUEUEING,
        ),
        (
            get_transcription,
            "A job's state, progress and, once `done`, its results (`txt`, `srt`, `webvtt`, `burned_video_url`, "
            "`translations`), for a job queued here, through the REST API or on the website. Free; counts as a "
            "read (300 a minute). Poll every 2-3 s until `state` is `done` or `failed`; on `failed`, `error` "
            "says why.",
            _id_schema("job"),
            component("TranscriptionApiResponse"),
            READING,
        ),
        (
            get_batch,
            "Every job of a batch (from transcribe_playlist) in queue order, with state and progress but "
            "without the text (read each job with get_transcription). Free; counts as one read.",
            _id_schema("batch"),
            component("BatchStatus"),
            READING,
        ),
        (
            preview_playlist,
            "What transcribe_playlist would queue for a playlist or channel (its first 25 public videos) and the "
            "seconds of balance it needs against the seconds left (`fits`). Queues nothing, costs nothing; counts "
            "as a read.",
            preview_input_schema(),
            component("PlaylistPreview"),
            READING,
        ),
        (
            get_balance,
            "Seconds of video length left on the account, and the pricing rules in plain words. Free; counts "
            "as a read.",
            {"type": "object", "properties": {}},
            BALANCE_SCHEMA,
            READING,
        ),
    ]


def build_server() -> MCPServer:
    server = MCPServer(
        name="video-transcription",
        title="Video transcription",
        instructions="Transcripts, subtitles (optionally translated) and burned-in subtitle videos from a "
        "video URL, paid from the account's balance. Queue with transcribe, create_subtitles, burn_subtitles "
        "or transcribe_playlist; then poll get_transcription every 2-3 s until state is done or failed. "
        "get_balance says what is left and what things cost.",
        website_url=settings.PUBLIC_BASE_URL,
        version="1",
    )
    with warnings.catch_warnings():
        # The untyped arguments' NOT_GIVEN default is not JSON; the published schema replaces theirs.
        warnings.simplefilter("ignore")
        for function, description, input_schema, output_schema, annotations in tool_table():
            server.add_tool(function, description=description, annotations=annotations, structured_output=False)
            tool = server._tool_manager.get_tool(function.__name__)
            tool.parameters = input_schema
            # Advertised, not validated by the SDK: the body is the REST presenter's, already checked.
            tool.fn_metadata.output_schema = output_schema
    return server


def asgi_app():
    """The SDK's Starlette app serving MCP_PATH (its lifespan runs the session manager) behind McpGate."""
    server = build_server()
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # Host and Origin are checked by McpGate against ALLOWED_HOSTS and this server's own origin.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return app, McpGate(app)
