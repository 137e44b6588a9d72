"""`GET /v1/realtime` (any query: `?intent=transcription`, `?model=...`): OpenAI's Realtime
transcription protocol over a WebSocket (api/wire/realtime_events.py has the events), so a client
written for OpenAI's Realtime API streams here by changing its base URL. config/asgi.py routes it.

A thin adapter, like every door: the token (the `Authorization` header, or the subprotocol
`openai-insecure-api-key.<token>` browsers send) makes the Caller through the front door's rules
(deactivated logins, the per-address bad-token limit, the job-request limit), then
front/live.open_stream opens a stream (the plan's cap of streams at once, the balance). Every
refusal is an `error` event in OpenAI's shape; a refusal at the opening closes the socket (1008),
a bad frame leaves it open. The audio goes to a live worker through the transport
(events/live_streams: Redis streams, or a worker thread of this process without REDIS_URL); the
worker's events come back and are sent as OpenAI's.

Money: the stream's whole seconds of audio are paid as they arrive (front/live.pay holds balance a
few seconds ahead); when the balance runs out the client gets an `error` (insufficient_quota), the
audio paid for is finished, and the socket closes normally. The stream is settled once, at its end,
whatever ends it. Limits: LIVE_IDLE_TIMEOUT_SECONDS without a message, LIVE_MAX_STREAM_SECONDS of
audio, MAX_MESSAGE_BYTES a message; past LIVE_BUFFER_SECONDS ahead of the worker the door stops
reading the socket until the worker catches up (the client is slowed; memory stays bounded).
A worker that stops beating: an `error` (live_worker_lost) and the socket closes.

Kept like any other job (docs/decisions/live.md): unless the session sets `keep_recording` false,
the stream's audio becomes a `transcript` job. Once a worker takes the stream the door makes the
job (front/live.keep, prepaid by the stream) and announces it, `transcription_session.job` with its
id and the URL that reads it; the audio is written as it goes to the worker (live_recording), and
at the stream's end, whatever ended it and before it is settled, the recording is handed to
storage and the job queued (front/live.release), to run as an uploaded file's job runs.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import math
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.urls import reverse

from transcription.api.doors import asgi_door
from transcription.api.doors.live_recording import Recording
from transcription.api.doors.uploads import db
from transcription.api.front import front_door, live
from transcription.api.wire import realtime_events as wire
from transcription.api.wire.error_bodies import RateLimited, StreamRefused
from transcription.events import live_streams
from transcription.storage import quota

logger = logging.getLogger(__name__)

PATH = "/v1/realtime"
MAX_MESSAGE_BYTES = 1024 * 1024  # an append of 1 MiB carries 16 s of 24 kHz PCM16
KEY_PROTOCOL = "openai-insecure-api-key."
START_TIMEOUT_SECONDS = 30.0  # for a free worker to take the stream (the model may be loading)
WORKER_CHECK_SECONDS = 2.0
FINISH_SECONDS = 15.0  # for the worker's last events after the client's audio ended


class Closing(Exception):
    """End the socket after an `error` event: `code` the WebSocket close code."""

    def __init__(self, event: dict, code: int = 1000, reason: str = "settled"):
        super().__init__(event["error"]["message"])
        self.event, self.code, self.reason = event, code, reason


def _headers(scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}


def _token_header(scope) -> str | None:
    headers = _headers(scope)
    if "authorization" in headers:
        return headers["authorization"]
    for protocol in scope.get("subprotocols") or ():
        if protocol.startswith(KEY_PROTOCOL):
            return f"Bearer {protocol[len(KEY_PROTOCOL) :]}"
    return None


def _http_scope(scope) -> dict:
    scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "ws"), "http")
    return {**scope, "type": "http", "method": "GET", "scheme": scheme}


def _caller(request, authorization):
    return front_door.caller_from_token(
        authorization, front_door.ratelimit.client_address(request), front_door.REALTIME
    )


def _refused(error: Exception) -> dict | None:
    if isinstance(error, StreamRefused):
        kind = "insufficient_quota" if error.refusal_code == "no_minutes" else "rate_limit_exceeded"
        return wire.error_event(str(error.detail), error.refusal_code, kind)
    answer = front_door.error_answer(error)
    if answer is None:
        return None
    message = str(answer.body.get("detail"))
    if answer.status == 401:
        return wire.error_event(message, "invalid_api_key")
    if isinstance(error, RateLimited) or answer.status == 429:
        return wire.error_event(message, "rate_limit_exceeded", "rate_limit_exceeded")
    return wire.error_event(message, "refused")


async def application(scope, receive, send):
    scope = asgi_door.with_request_id(_http_scope(scope)) | {"type": "websocket"}
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    request = asgi_door.django_request(_http_scope(scope))
    refusal, protective = await sync_to_async(asgi_door.protections, thread_sensitive=False)(request)
    offered = scope.get("subprotocols") or []
    accept = {"type": "websocket.accept", "headers": protective if refusal is None else []}
    if "realtime" in offered:
        accept["subprotocol"] = "realtime"
    await send(accept)
    if refusal is not None:
        event = wire.error_event("The request was refused by the server's protections.", "refused")
        return await _close(send, event, 1008)
    dialect = wire.BETA if "realtime=v1" in _headers(scope).get("openai-beta", "") else wire.GA
    try:
        caller = await db(_caller, request, _token_header(scope))
        stream_id = await db(live.open_stream, caller)
    except Exception as error:
        event = _refused(error)
        if event is None:
            raise
        return await _close(send, event, 1008)
    socket = Socket(stream_id, wire.new_session(dialect), receive, send, Keeper(caller, request))
    try:
        await socket.run()
    finally:
        charged = await asyncio.shield(socket.close_out())
        logger.info("live stream %s ended (%s): %s s charged", stream_id, socket.ended, charged)


async def _close(send, event: dict | None, code: int = 1000) -> None:
    with contextlib.suppress(Exception):
        if event is not None:
            await send({"type": "websocket.send", "text": json.dumps(event)})
        await send({"type": "websocket.close", "code": code})


def _link(stream_id: str):
    if settings.REDIS_URL:
        return live_streams.RedisDoor(settings.REDIS_URL, stream_id)
    from transcription.stages import live as live_role  # the worker's threads start with the first stream

    return live_streams.LocalDoor(live_role.local_hub(), stream_id)


class Keeper:
    """Who the stream's job is made for, and the address its URL is absolute to."""

    def __init__(self, caller, request):
        self.caller, self.request = caller, request

    def job_url(self, job_id: str) -> str:
        return self.request.build_absolute_uri(reverse("transcription", kwargs={"id": job_id}))


class Socket:
    """One client's socket: its session, its audio counted and paid (and kept), its worker's events."""

    def __init__(self, stream_id: str, session: wire.Session, receive, send, keeper: Keeper):
        self.stream_id, self.session, self.receive, self.send = stream_id, session, receive, send
        self.keeper = keeper
        self.recording: Recording | None = None
        self.gone = False  # the client closed its socket
        self.link: Any = None
        self.worker: str | None = None
        self.sent_ms = 0.0
        self.heard_ms = 0.0
        self.held = 0
        self.balance_out = False
        self.ended = "the client closed the socket"
        self.spans: dict[str, list[int]] = {}
        self.caught_up = asyncio.Event()
        self.finished = asyncio.Event()

    def paid_seconds(self) -> int:
        return min(math.ceil(self.sent_ms / 1000 - 1e-9), self.held) if self.sent_ms else 0

    async def emit(self, event: dict) -> None:
        """Send an event; to a client gone, nothing (the pump goes on reading the worker's last
        events, the `ended` its recording and settling wait for, instead of dying on the send)."""
        if self.gone:
            return
        try:
            await self.send({"type": "websocket.send", "text": json.dumps(event)})
        except Exception:  # the socket closed under us; its disconnect ends the reading
            self.gone = True

    async def run(self) -> None:
        await self.emit(wire.session_event(self.session, created=True))
        pump = None
        try:
            self.link = _link(self.stream_id)
            pump = asyncio.ensure_future(self.pump())
            await self.read()
            await self.finish()
        except Closing as closing:
            self.ended = closing.reason
            await self.finish()
            await _close(self.send, closing.event, closing.code)
        finally:
            if pump is not None:
                pump.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(pump, 2.0)
            if self.link is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(self.link.close(), 2.0)

    async def close_out(self) -> int:
        """The stream's end: its recording handed on (its job queued), then the stream settled; the
        seconds charged. A recording that cannot be handed on leaves its job to the sweeper, which
        fails it once the stream is settled (writes.live_job_services.live_jobs_orphaned)."""
        recording = self.recording
        if recording is not None:
            try:
                size = await recording.close()
                await db(live.release, recording.job_id, recording.path, size, recording.seconds)
            except Exception:
                logger.exception("live stream %s: its recording could not be kept", self.stream_id)
        return await db(live.settle, self.stream_id, self.paid_seconds(), self.ended)

    async def finish(self) -> None:
        """The worker's last events for the audio that came (when a stream was started)."""
        if self.worker is None or self.finished.is_set():
            return
        with contextlib.suppress(Exception):
            await self.link.send({"kind": "finish"})
            await asyncio.wait_for(self.finished.wait(), FINISH_SECONDS)

    # --- client -> door ---

    async def read(self) -> None:
        while True:
            try:
                message = await asyncio.wait_for(self.receive(), settings.LIVE_IDLE_TIMEOUT_SECONDS)
            except TimeoutError:
                seconds = f"{settings.LIVE_IDLE_TIMEOUT_SECONDS:g}"
                raise Closing(
                    wire.error_event(f"No message for {seconds} s: the session is closed.", "idle_timeout"),
                    reason="idle timeout",
                ) from None
            if message["type"] == "websocket.disconnect":
                self.gone = True
                return
            text = message.get("text")
            if text is None:
                text = (message.get("bytes") or b"").decode("utf-8", "replace")
            try:
                await self.handle(text)
            except wire.ProtocolError as refused:
                await self.emit(wire.error_event(refused.message, refused.code, param=refused.param))

    async def handle(self, text: str) -> None:
        if len(text) > MAX_MESSAGE_BYTES:
            raise wire.ProtocolError(
                f"A message is at most {MAX_MESSAGE_BYTES // 1024} KiB; this one was {len(text) // 1024} KiB. "
                "Send audio in smaller appends.",
                "message_too_large",
            )
        try:
            event = json.loads(text)
        except ValueError:
            raise wire.ProtocolError("The message is not JSON.", "invalid_json") from None
        if not isinstance(event, dict):
            raise wire.ProtocolError("An event is a JSON object with a `type`.", "invalid_event")
        kind = event.get("type")
        if kind in ("session.update", "transcription_session.update"):
            update = wire.update_ga if kind == "session.update" else wire.update_beta
            self.session = self.kept_as(update(event, self.session))
            await self.emit(wire.session_event(self.session, created=False))
            if self.worker is not None:
                await self.link.send({"kind": "options", "options": self.session.options()})
        elif kind == "input_audio_buffer.append":
            await self.append(event)
        elif kind == "input_audio_buffer.commit":
            await self.started()
            await self.link.send({"kind": "commit"})
        elif kind == "input_audio_buffer.clear":
            if self.worker is not None:
                await self.link.send({"kind": "clear"})
            await self.emit(wire.server_event("input_audio_buffer.cleared"))
        else:
            raise wire.ProtocolError(f"Unknown event type {kind!r}.", "unknown_event", "type")

    async def append(self, event: dict) -> None:
        audio = event.get("audio")
        if not isinstance(audio, str) or not audio:
            raise wire.ProtocolError("input_audio_buffer.append needs `audio`, base64 text.", param="audio")
        try:
            data = base64.b64decode(audio, validate=True)
        except (binascii.Error, ValueError):
            raise wire.ProtocolError("`audio` is not base64.", "invalid_base64", "audio") from None
        width = wire.BYTES_PER_SAMPLE[self.session.kind]
        if len(data) % width:
            raise wire.ProtocolError(
                f"PCM16 audio comes in whole 2-byte samples; this append has {len(data)} bytes.", "odd_bytes", "audio"
            )
        ms = len(data) / width / self.session.rate * 1000
        if (self.sent_ms + ms) / 1000 > settings.LIVE_MAX_STREAM_SECONDS:
            raise Closing(
                wire.error_event(
                    f"A live stream carries at most {settings.LIVE_MAX_STREAM_SECONDS} s of audio.", "stream_too_long"
                ),
                reason="maximum length",
            )
        await self.pay(self.sent_ms + ms)
        await self.started()
        while self.sent_ms - self.heard_ms > settings.LIVE_BUFFER_SECONDS * 1000:
            self.caught_up.clear()
            await self.caught_up.wait()  # the client waits (its socket unread) while the worker catches up
        self.sent_ms += ms
        fmt = {"format": self.session.kind, "rate": self.session.rate}
        await self.link.send({"kind": "audio", "data": data, **fmt})
        if self.recording is not None:
            await self.recording.add(data)

    async def pay(self, ms: float) -> None:
        seconds = math.ceil(ms / 1000 - 1e-9)
        if seconds <= self.held:
            return
        self.held = await db(live.pay, self.stream_id, seconds)
        if self.held < seconds:
            raise Closing(
                wire.error_event(
                    "Your minutes ran out: the audio paid for is transcribed and the session closes.",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
                reason="balance ran out",
            )

    async def started(self) -> None:
        """The stream's worker, taken at the first audio or commit."""
        if self.worker is not None:
            return
        await self.link.start(self.session.options())
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while self.worker is None:
            if time.monotonic() > deadline:
                raise Closing(
                    wire.error_event(
                        "No live worker is free to serve this stream; try again.", "no_live_worker", "server_error"
                    ),
                    code=1011,
                    reason="no live worker",
                )
            await asyncio.sleep(0.05)
        await self.keep()

    # --- the recording, kept as a job ---

    async def keep(self) -> None:
        """The stream's job, made and announced once a worker took the stream (unless the session
        said not to keep it); none, with an `error` that says so, when the account's storage is full."""
        if not self.session.keep_recording:
            return
        try:
            kept = await db(live.keep, self.keeper.caller, self.stream_id, self.session.language, self.session.prompt)
        except quota.StorageFull as full:
            await self.emit(wire.error_event(f"{full} This stream is not kept as a job.", "recording_not_kept"))
            return
        self.recording = Recording(kept.job_id, kept.path, kept.limit, self.session.kind, self.session.rate)
        await self.emit(wire.job_event(kept.job_id, self.keeper.job_url(kept.job_id)))

    def kept_as(self, session: wire.Session) -> wire.Session:
        """The session an update asks for, unless it changes what a started stream keeps: whether it
        is kept (its job is announced, or none was made), or (audio kept) its audio's format."""
        if self.worker is not None and session.keep_recording != self.session.keep_recording:
            raise wire.ProtocolError(
                "session.keep_recording cannot change once the stream has started; set it before the first audio.",
                param="session.keep_recording",
            )
        if self.recording is not None and not self.recording.reformat(session.kind, session.rate):
            param = "session.audio.input.format" if session.dialect == wire.GA else "session.input_audio_format"
            raise wire.ProtocolError(
                "The audio's format cannot change once audio is kept: its recording has one format. "
                "Set the format before the first audio, or keep_recording false to keep nothing.",
                "format_locked",
                param,
            )
        return session

    # --- worker -> client ---

    async def pump(self) -> None:
        checked = touched = time.monotonic()
        while True:
            events = await self.link.receive(0.5)
            for event in events:
                await self.forward(event)
            now = time.monotonic()
            if self.worker is not None and now - checked > WORKER_CHECK_SECONDS:
                checked = now
                if not self.finished.is_set() and not await self.link.alive(self.worker):
                    await self.lost("The live worker serving this stream stopped; start a new session.")
                    return
            if now - touched > live.TOUCH_SECONDS:
                touched = now
                await db(live.pay, self.stream_id, self.paid_seconds())

    async def forward(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "accepted":
            self.worker = event["worker"]
        elif kind == "progress":
            self.heard_ms = max(self.heard_ms, float(event["heard_ms"]))
            self.caught_up.set()
        elif kind == "ended":
            self.finished.set()
        elif kind == "failed_stream":
            await self.lost(event.get("message") or "The live worker failed.")
        else:
            shaped = wire.engine_event(event, self.spans)
            if shaped is not None:
                await self.emit(shaped)

    async def lost(self, message: str) -> None:
        self.ended = "the live worker was lost"
        self.finished.set()
        self.caught_up.set()
        await _close(self.send, wire.error_event(message, "live_worker_lost", "server_error"), 1011)
