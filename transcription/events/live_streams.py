"""The live streams' transport: audio from the door (a web process holding the socket) to a live
worker (bin/live, holding the model), events back, through Redis streams; without REDIS_URL the same
messages through queues in the one process (`make run`'s embedded default).

Keys (docs/decisions/live.md):
- `live:new`: the streams waiting for a worker, a Redis stream read by the consumer group `live`:
  each worker takes one (XREADGROUP) only when it has a free slot, so any web process's socket is
  served by whichever worker is free first; an entry nobody took within START_SECONDS is dropped
  by the worker that finds it (its door has given up).
- `live:{id}:in`: the door's messages to the stream's worker: `audio` (raw bytes and their format),
  `commit`, `clear`, `options`, `finish`. Capped (MAXLEN) and expiring, like every key here.
- `live:{id}:out`: the worker's events, JSON: `accepted` (naming the worker), `progress` (the ms of
  audio recognised so far: the door's bound on how far ahead a client may run), the engine's events
  (transcription.pipeline.live.events.to_json), `failed_stream` (the worker could not go on), `ended`.
- `live:worker:{name}`: the worker's heartbeat, renewed every BEAT_SECONDS, expiring after
  ALIVE_SECONDS: a door whose worker's key is gone tells its client the worker died.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from config import shared_cache

NEW = "live:new"
GROUP = "live"
KEEP_SECONDS = 3600
INBOX_MAXLEN = 20000
BEAT_SECONDS = 1.0
ALIVE_SECONDS = 5
START_SECONDS = 30.0


def inbox(stream_id: str) -> str:
    return f"live:{stream_id}:in"


def outbox(stream_id: str) -> str:
    return f"live:{stream_id}:out"


def worker_key(worker: str) -> str:
    return f"live:worker:{worker}"


def beating_on(url: str, host: str) -> bool:
    """Whether a live worker of `host` (its names begin with the host's name) renews its heartbeat:
    a container's health (deploy/entrypoint healthcheck)."""
    client = shared_cache.connect(url)
    return any(True for _ in client.scan_iter(match=worker_key(f"{host}-*"), count=1000))


def _encode(message: dict[str, Any]) -> Any:
    fields = {key: value for key, value in message.items() if key != "data" and value is not None}
    return {
        "json": json.dumps(fields),
        "data": message.get("data", b""),
    }


def _decode(fields: dict[bytes, bytes]) -> dict[str, Any]:
    message = json.loads(fields[b"json"])
    message["data"] = fields.get(b"data", b"")
    return message


# --- The door's side (asyncio) ------------------------------------------------------------------


class RedisDoor:
    """One socket's link to its worker through Redis (the door's event loop owns it)."""

    def __init__(self, url: str, stream_id: str):
        self.redis = shared_cache.subscriber(url)
        self.stream_id = stream_id
        self.last = "0-0"

    async def start(self, options: dict[str, Any]) -> None:
        entry = {"stream": self.stream_id, "options": json.dumps(options), "at": str(time.time())}
        await self.redis.xadd(NEW, entry, maxlen=10000, approximate=True)  # type: ignore[arg-type]

    async def send(self, message: dict[str, Any]) -> None:
        key = inbox(self.stream_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(key, _encode(message), maxlen=INBOX_MAXLEN, approximate=True)
            pipe.expire(key, KEEP_SECONDS)
            await pipe.execute()

    async def receive(self, timeout: float) -> list[dict[str, Any]]:
        answer: Any = await self.redis.xread({outbox(self.stream_id): self.last}, count=200, block=int(timeout * 1000))
        events = []
        for _, entries in answer or []:
            for entry_id, fields in entries:
                self.last = entry_id
                events.append(json.loads(fields[b"event"]))
        return events

    async def alive(self, worker: str) -> bool:
        return bool(await self.redis.exists(worker_key(worker)))

    async def close(self) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.expire(inbox(self.stream_id), 60)
            pipe.expire(outbox(self.stream_id), 60)
            await pipe.execute()
        await self.redis.aclose()


# --- The worker's side (threads) ----------------------------------------------------------------


class RedisWorker:
    """A live worker's link to the streams through Redis (thread-safe: redis-py's pool)."""

    def __init__(self, url: str, name: str):
        self.redis = shared_cache.connect(url)
        self.blocking = shared_cache.blocking(url)  # reads that wait (BLOCK) for up to a few seconds
        self.name = name
        self._group_made = False

    def _group(self) -> None:
        if self._group_made:
            return
        try:
            self.redis.xgroup_create(NEW, GROUP, id="0", mkstream=True)
        except shared_cache.Unavailable as error:
            if "BUSYGROUP" not in str(error):
                raise
        self._group_made = True

    def take(self, timeout: float) -> tuple[str, dict[str, Any]] | None:
        """A stream waiting for a worker, or None after `timeout`."""
        self._group()
        client = self.blocking
        answer: Any = client.xreadgroup(GROUP, self.name, {NEW: ">"}, count=1, block=int(timeout * 1000))
        for _, entries in answer or []:
            for entry_id, fields in entries:
                client.xack(NEW, GROUP, entry_id)
                client.xdel(NEW, entry_id)
                if time.time() - float(fields[b"at"]) > START_SECONDS:
                    continue
                return fields[b"stream"].decode(), json.loads(fields[b"options"])
        return None

    def read(self, stream_id: str, last: str, timeout: float) -> tuple[str, list[dict[str, Any]]]:
        client = self.blocking
        answer: Any = client.xread({inbox(stream_id): last}, count=500, block=int(timeout * 1000))
        messages = []
        for _, entries in answer or []:
            for entry_id, fields in entries:
                last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                messages.append(_decode(fields))
        return last, messages

    def publish(self, stream_id: str, events: list[dict[str, Any]]) -> None:
        if not events:
            return
        key = outbox(stream_id)
        with self.redis.pipeline(transaction=False) as pipe:
            for event in events:
                pipe.xadd(key, {"event": json.dumps(event)}, maxlen=INBOX_MAXLEN, approximate=True)
            pipe.expire(key, KEEP_SECONDS)
            pipe.execute()

    def beat(self) -> None:
        self.redis.set(worker_key(self.name), "1", ex=ALIVE_SECONDS)

    def gone(self) -> None:
        self.redis.delete(worker_key(self.name))


# --- In one process (no REDIS_URL) ---------------------------------------------------------------


@dataclass
class _LocalStream:
    inbox: queue.Queue = field(default_factory=queue.Queue)
    outbox: asyncio.Queue | None = None
    loop: asyncio.AbstractEventLoop | None = None


class LocalHub:
    """The same messages as Redis carries, between the event loop's doors and the worker's threads
    of one process."""

    def __init__(self) -> None:
        self.new: queue.Queue = queue.Queue()
        self.streams: dict[str, _LocalStream] = {}
        self.beats: dict[str, float] = {}
        self.lock = threading.Lock()

    def stream(self, stream_id: str) -> _LocalStream:
        with self.lock:
            return self.streams.setdefault(stream_id, _LocalStream())


class LocalDoor:
    def __init__(self, hub: LocalHub, stream_id: str):
        self.hub, self.stream_id = hub, stream_id
        self.local = hub.stream(stream_id)
        self.local.loop = asyncio.get_running_loop()
        self.local.outbox = asyncio.Queue()

    async def start(self, options: dict[str, Any]) -> None:
        self.hub.new.put((self.stream_id, options, time.time()))

    async def send(self, message: dict[str, Any]) -> None:
        self.local.inbox.put(message)

    async def receive(self, timeout: float) -> list[dict[str, Any]]:
        assert self.local.outbox is not None
        try:
            first = await asyncio.wait_for(self.local.outbox.get(), timeout)
        except TimeoutError:
            return []
        events = [first]
        while not self.local.outbox.empty():
            events.append(self.local.outbox.get_nowait())
        return events

    async def alive(self, worker: str) -> bool:
        return time.monotonic() - self.hub.beats.get(worker, 0.0) < ALIVE_SECONDS

    async def close(self) -> None:
        with self.hub.lock:
            self.hub.streams.pop(self.stream_id, None)


class LocalWorker:
    def __init__(self, hub: LocalHub, name: str):
        self.hub, self.name = hub, name

    def take(self, timeout: float) -> tuple[str, dict[str, Any]] | None:
        try:
            stream_id, options, at = self.hub.new.get(timeout=timeout)
        except queue.Empty:
            return None
        if time.time() - at > START_SECONDS:
            return None
        return stream_id, options

    def read(self, stream_id: str, last: str, timeout: float) -> tuple[str, list[dict[str, Any]]]:
        local = self.hub.stream(stream_id)
        try:
            messages = [local.inbox.get(timeout=timeout)]
        except queue.Empty:
            return last, []
        while not local.inbox.empty():
            messages.append(local.inbox.get_nowait())
        return last, messages

    def publish(self, stream_id: str, events: list[dict[str, Any]]) -> None:
        with self.hub.lock:
            local = self.hub.streams.get(stream_id)
        if local is None or local.loop is None or local.outbox is None or not events:
            return
        for event in events:
            local.loop.call_soon_threadsafe(local.outbox.put_nowait, event)

    def beat(self) -> None:
        self.hub.beats[self.name] = time.monotonic()

    def gone(self) -> None:
        self.hub.beats.pop(self.name, None)
