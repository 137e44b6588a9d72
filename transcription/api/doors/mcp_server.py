"""The MCP server at /mcp: the v1 API's operations as tools for AI agents (Streamable HTTP, stateless,
JSON answers), on the official SDK's MCPServer.

An adapter of the front door (transcription.api.front.front_door), as the REST views are: `McpGate`
builds the Caller from the bearer token (and applies the protections every path has) before the
SDK sees the request, and every tool is `front_door.perform` of the REST operation of the same
name: one account, one token, one ledger, one pair of rate-limit counters. Refusals are answered
as MCP answers them: tool errors carrying the REST body (docs/decisions.md, "What each door may
do differently").

Arguments are checked by the REST serializers, not by the SDK: each tool function takes its
arguments untyped (so the SDK's pydantic model passes anything through) and the published
inputSchema is the OpenAPI document's request schema, so an agent sees the same names, types and
defaults, and a wrong value gets the 422's message naming the field.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import warnings
from collections.abc import Callable
from typing import Any

import anyio
from django.conf import settings
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent

from billing import pricing
from transcription.api.doors import asgi_door
from transcription.api.doors.mcp_gate import McpGate, database_threads
from transcription.api.doors.mcp_schemas import (
    BALANCE_SCHEMA,
    EDITING,
    QUEUEING,
    READING,
    RENAMING,
    component,
    edit_schema,
    id_schema,
    preview_input_schema,
    rename_schema,
    segments_schema,
)
from transcription.api.front import editing, front_door, operations, reburning
from transcription.api.front.caller import Operation
from transcription.api.wire import serializers

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"


NOT_GIVEN: Any = type("NotGiven", (), {"__repr__": lambda self: "NOT_GIVEN"})()

POLL_HINT = (
    "Poll `get_transcription` with the returned id every 2-3 s until `state` is `done` or `failed` "
    "(each poll counts against 300 reads a minute). A video that cannot be fetched, or an account "
    "without minutes, is not a tool error: the job ends `failed` with the reason in `error` and its "
    "minutes are refunded."
)


# --- Tools ---------------------------------------------------------------------------------------


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


def _run(
    caller: front_door.Caller, operation: Operation, data: dict, summary: Callable[[Any], str], scope: dict
) -> CallToolResult:
    """Perform the operation through the front door (the count, then the arguments, as REST does)
    in this worker thread; its body as structuredContent, or its refusal as a tool error. A bug is
    reported as a view's is (asgi_door.server_error: ADMINS, the error reporter, the log line with
    the request's id, from the HTTP request's `scope`) and is a tool error naming that id: the SDK
    would otherwise answer its own "Error executing tool" and tell nobody."""
    close_old_connections()
    try:
        try:
            body = front_door.perform(caller, operation, data)
        except Exception as error:
            answer = front_door.error_answer(error)
            if answer is None:
                failure = asgi_door.server_error(asgi_door.django_request(scope), error)
                detail = json.loads(failure.content)["detail"]  # type: ignore[attr-defined]
                return _error(detail, detail)
            detail = answer.body["detail"]
            text = _validation_text(detail) if answer.status == 422 else str(detail)
            result = _error(text, detail)
            if "Retry-After" in answer.headers:
                result.structured_content["retry_after"] = int(answer.headers["Retry-After"])
            return result
        return CallToolResult(content=[TextContent(type="text", text=summary(body))], structured_content=body)
    finally:
        close_old_connections()


async def _call(
    ctx: Context, operation: Operation, parameters: dict[str, Any], summary: Callable[[Any], str]
) -> CallToolResult:
    """Every tool: the front door's `operation` (named as the tool) with the arguments the agent gave.
    `parameters` is the tool function's `locals()` on entry, so that its signature alone says which
    arguments it takes (the SDK passes only those): `ctx` and NOT_GIVEN ones are left out, and the
    front door applies REST's defaults (an id left out is None to it, as a missing path id)."""
    data = {key: value for key, value in parameters.items() if key != "ctx" and value is not NOT_GIVEN}
    # A Caller of its own per tool call: each call is counted once.
    request = ctx.request_context.request
    assert request is not None  # the Streamable HTTP transport, the only one served, always has one
    caller = dataclasses.replace(request.state.caller, rate=None)
    return await anyio.to_thread.run_sync(
        _run, caller, operation, data, summary, request.scope, limiter=database_threads()
    )


# Each tool's parameters are the REST request's fields, untyped (see the module's docstring); its
# body hands them to the front door, with the summary that becomes its text content.


def _queued(body: dict) -> str:
    return f"Queued job {body['id']}. Poll get_transcription with this id every 2-3 s until state is done or failed."


def request_tool(operation: Operation, request_serializer: type, summary: Callable[[Any], str]) -> Callable[..., Any]:
    """The tool of `operation` (named as it is), its parameters the fields of the REST request it
    takes (so a job option declared in transcription.job_options is an argument here too)."""

    async def tool(ctx: Context, **arguments: Any) -> CallToolResult:
        return await _call(ctx, operation, {"ctx": ctx, **arguments}, summary)

    parameters = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)]
    parameters += [
        inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, default=NOT_GIVEN)
        for field in request_serializer().fields
    ]
    tool.__name__ = tool.__qualname__ = operation.name
    tool.__signature__ = inspect.Signature(parameters, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    return tool


transcribe = request_tool(operations.transcribe, serializers.TranscribeRequestSerializer, _queued)
create_subtitles = request_tool(operations.create_subtitles, serializers.SubtitlesRequestSerializer, _queued)
burn_subtitles = request_tool(operations.burn_subtitles, serializers.BurnSubtitlesRequestSerializer, _queued)


def _batch_queued(body: dict) -> str:
    return (
        f"Queued batch {body['batch_id']} ({body['title']!r}): {body['count']} jobs, {body['skipped']} videos "
        "skipped. Poll get_batch with batch_id every 2-3 s, or each job with get_transcription."
    )


transcribe_playlist = request_tool(
    operations.transcribe_playlist, serializers.TranscribePlaylistRequestSerializer, _batch_queued
)


def _job_summary(body: dict) -> str:
    text = f"Job {body['id']}: {body['state']}, {body['progress']}%."
    if body["state"] == "failed":
        text += f" Error: {body['error']}"
    elif body["state"] != "done":
        text += " Poll again in 2-3 s."
    return text


async def get_transcription(ctx: Context, id=NOT_GIVEN) -> CallToolResult:  # noqa: A002
    return await _call(ctx, operations.get_transcription, locals(), _job_summary)


def _batch_summary(body: dict) -> str:
    states = [item["state"] for item in body["items"]]
    counts = ", ".join(f"{states.count(state)} {state}" for state in sorted(set(states))) or "no jobs"
    return f"Batch {body['batch_id']} ({body['title']!r}): {counts}."


async def get_batch(ctx: Context, id=NOT_GIVEN) -> CallToolResult:  # noqa: A002
    return await _call(ctx, operations.get_batch, locals(), _batch_summary)


def _renamed(body: dict) -> str:
    return f"Job {body['id']}: speakers renamed. Its txt now reads:\n{body['txt'] or ''}"


async def rename_speakers(ctx: Context, id=NOT_GIVEN, names=NOT_GIVEN) -> CallToolResult:  # noqa: A002
    return await _call(ctx, operations.rename_speakers, locals(), _renamed)


def _segments_summary(body: dict) -> str:
    lines = [
        f"[{s['index']}] {s['start']:.2f}-{s['end']:.2f} Speaker {s['speaker']}: {s['text']}" for s in body["segments"]
    ]
    return f"Version {body['etag']} ({len(lines)} segments):\n" + "\n".join(lines[:200])


async def get_transcript_segments(ctx: Context, id=NOT_GIVEN, version=NOT_GIVEN) -> CallToolResult:  # noqa: A002
    return await _call(ctx, editing.get_transcript_segments, locals(), _segments_summary)


def _edit_summary(body: dict) -> str:
    charge = body.get("charge") or {}
    charged = ""
    if charge.get("error"):
        charged = f" {charge['error']}"
    elif charge.get("languages"):
        verb = "Saving would charge" if body.get("dry_run") else "Charged"
        charged = f" {verb} {charge['minutes']} for translating {charge['cues']} cue(s) again into "
        charged += ", ".join(charge["languages"]) + "."
    head = "Not saved (dry run)." if body.get("dry_run") else "Saved."
    return head + charged + " " + _segments_summary(body)


async def edit_transcript(
    ctx: Context, id=NOT_GIVEN, if_match=NOT_GIVEN, edits=NOT_GIVEN, dry_run=NOT_GIVEN
) -> CallToolResult:  # noqa: A002
    return await _call(ctx, editing.edit_transcript, locals(), _edit_summary)


def _reburning(body: dict) -> str:
    if body["state"] != "burning":
        return f"Job {body['id']} was not burned again: {body['error']}"
    return f"Job {body['id']} is being burned again (state burning). " + POLL_HINT


async def burn_again(ctx: Context, id=NOT_GIVEN) -> CallToolResult:  # noqa: A002
    return await _call(ctx, reburning.burn_again, locals(), _reburning)


def _preview_summary(body: dict) -> str:
    verdict = "fits" if body["fits"] else "does not fit"
    return (
        f"{body['title']!r}: {len(body['videos'])} videos would be queued ({body['skipped']} skipped); "
        f"needs {body['needed_seconds']} s of balance, {body['remaining_seconds']} s left: it {verdict}."
    )


async def preview_playlist(
    ctx: Context,
    url=NOT_GIVEN,
    type=NOT_GIVEN,  # noqa: A002
    quality=NOT_GIVEN,
    target_languages=NOT_GIVEN,
) -> CallToolResult:
    return await _call(ctx, operations.preview_playlist, locals(), _preview_summary)


def _balance_summary(body: dict) -> str:
    return (
        f"{body['remaining_seconds']} seconds left ({pricing.format_minutes(body['remaining_seconds'])}). "
        + (body["pricing"])
    )


async def get_balance(ctx: Context) -> CallToolResult:
    return await _call(ctx, operations.get_balance, locals(), _balance_summary)


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
            id_schema("job"),
            component("TranscriptionApiResponse"),
            READING,
        ),
        (
            rename_speakers,
            "Call a done job's speakers by their names: `names` maps the N of `Speaker N` in its `txt` to a name "
            '(`{"1": "Alice", "2": "Bob"}`; null gives a speaker back its number). `txt` then reads '
            "`[00:00:03] Alice: ...` and every WebVTT voice span `<v Alice>`, translations too. A name is 1 to 40 "
            "characters without line breaks, `:`, `<` or `>`. Free of minutes; counts as a job request. Returns the "
            "job as get_transcription does.",
            rename_schema(),
            component("TranscriptionApiResponse"),
            RENAMING,
        ),
        (
            get_transcript_segments,
            "A done job's transcript as data: its segments (`index`, `start`, `end`, `speaker`, `text`, `words` "
            "with times) and the document's `etag`, which edit_transcript needs. `version` `original`: the "
            "recognition before any edit. Free; counts as a read.",
            segments_schema(),
            component("SegmentsDocument"),
            READING,
        ),
        (
            edit_transcript,
            "Correct a done job's transcript: `edits` applied in order, each naming its segment by the `index` "
            "get_transcript_segments gave it: `text` (new words), `speaker` (to a speaker of the job or the next "
            "new number; `from_word`/`to_word` for a run of its words), `split` (before `word`), `merge` (with the "
            "next segment, same speaker), `times` (`start`/`end`), `restore` (the original back). `if_match`: the "
            "`etag` read; a stale one is an error (read again). A bad edit is an error naming edits[i] and its "
            "field, and nothing is applied. txt, srt, webvtt are made again. Free, except that translations are made "
            "again for the changed cues (1x their seconds per language, once however often a cue is edited before "
            "it is translated); the answer's `charge` says what was charged, and `dry_run: true` quotes it without "
            "saving. burn_again re-burns. Counts as a job request.",
            edit_schema(),
            component("SegmentsDocument"),
            EDITING,
        ),
        (
            burn_again,
            "Burn a done burned job's videos again from its subtitles as they are now (after edit_transcript): "
            "the job's own video and each translation's. Charged as burned videos (3, 4 or 5x the length each, "
            "by quality); without enough minutes nothing is charged and the job's `error` says so. The job goes "
            "`burning`, then `done` with the new videos: poll get_transcription every 2-3 s. Counts as a job request.",
            id_schema("job"),
            component("TranscriptionApiResponse"),
            EDITING,
        ),
        (
            get_batch,
            "Every job of a batch (from transcribe_playlist) in queue order, with state and progress but "
            "without the text (read each job with get_transcription). Free; counts as one read.",
            id_schema("batch"),
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
            assert tool is not None  # added just above
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
    return app, asgi_door.guarded()(McpGate(app))  # a bug past the tools: the 500 of every Django path
