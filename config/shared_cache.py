"""The service's one Redis module: every Redis client is made here (`connect`, `connect_async`,
`subscriber`), with one set of timeouts and one outage pause; and the cache the web processes share
in Redis (token lookups, poll answers).

Django's RedisCache builds a new client object on every call, which costs more than the Redis
round trip itself on the poll path; this keeps one client (and its connection pool) per process.
Without REDIS_URL nothing is cached: a per-process cache would let a revoked token live on in
the other web processes.

Redis going away must not take the web tier with it: everything kept here is also in PostgreSQL,
so a read that cannot reach Redis is a miss and a write is skipped. After a failure this process
leaves Redis alone for OUTAGE_PAUSE_SECONDS, so that a Redis host that does not answer at all
costs one short timeout every few seconds, not one per call (reads and writes; deletes are
always tried). A delete that fails while Redis is down but keeps its data can leave a cached poll
answer (10 min) or token lookup (5 min) behind; Redis restarted without persistence has none.

Nothing read from Redis is unpickled: Redis is a network service another machine may reach (or
pose as), and a pickle runs whatever code its bytes name. Values are JSON behind a head that names
their Shape and its version (`get`, `set`); one written under another version (the release before
or after an upgrade, both running for a while) or not by `set` at all is a miss, never an error.
The other values kept in Redis are plain text each reader parses itself (poll_cache, the token
lookups of accounts.authentication, transcription.scheduling.lines).
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import redis
import redis.asyncio
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

# Short timeouts: every caller has PostgreSQL to fall back on, or answers that Redis is down.
CONNECT_TIMEOUT_SECONDS = 0.5
READ_TIMEOUT_SECONDS = 1.0
OUTAGE_PAUSE_SECONDS = 5.0
_down_until = 0.0

Unavailable = redis.RedisError


@lru_cache(maxsize=8)
def connect(url: str) -> redis.Redis:
    """A client on `url` (one per process and address: its connection pool is shared)."""
    return redis.Redis.from_url(
        url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, socket_timeout=READ_TIMEOUT_SECONDS
    )


def connect_async(url: str) -> redis.asyncio.Redis:
    """An asyncio client on `url`, for the event loop that makes it (each loop needs its own)."""
    return redis.asyncio.Redis.from_url(
        url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, socket_timeout=READ_TIMEOUT_SECONDS
    )


@lru_cache(maxsize=8)
def blocking(url: str) -> redis.Redis:
    """A client for reads that wait (XREAD BLOCK, at most a few seconds: the live worker's)."""
    return redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, socket_timeout=30.0)


def subscriber(url: str) -> redis.asyncio.Redis:
    """An asyncio client for a subscription: no read timeout, since it waits for messages."""
    return redis.asyncio.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS)


def client():
    """The shared cache's client, or None without REDIS_URL."""
    return connect(settings.REDIS_URL) if settings.REDIS_URL else None


def reachable_client():
    """The client, or None when there is no Redis or it failed a moment ago."""
    if time.monotonic() < _down_until:
        return None
    return client()


def mark_down(error: Exception) -> None:
    """Note a failed Redis call: this process leaves Redis alone for OUTAGE_PAUSE_SECONDS."""
    global _down_until
    if time.monotonic() >= _down_until:
        logger.warning("Redis unreachable (%s); answering from PostgreSQL for now", error)
    _down_until = time.monotonic() + OUTAGE_PAUSE_SECONDS


@dataclass(frozen=True)
class Shape:
    """One kind of value kept in the cache, as JSON: `dump` makes plain data of it (dicts, lists,
    strings, numbers), `load` makes the value again and raises (TypeError, ValueError, KeyError,
    IndexError) on data of any other shape. Raise `version` whenever what `dump` writes changes."""

    name: str
    version: str
    dump: Callable[[Any], Any]
    load: Callable[[Any], Any]

    @property
    def head(self) -> bytes:
        return f"json {self.name} {self.version}\n".encode()


def get(key: str, shape: Shape):
    """The value kept under `key`, or None: a miss also for a value of another shape or version,
    or anything else found there (an older release's pickle is never unpickled)."""
    redis_client = reachable_client()
    if redis_client is None:
        return None
    try:
        raw = redis_client.get(f"cache:{key}")
    except Unavailable as error:
        mark_down(error)
        return None
    if raw is None:
        return None
    head = shape.head
    if not raw.startswith(head):
        return None  # another release's value (or not ours): it is replaced by the next set
    collecting = gc.isenabled()
    gc.disable()  # a value of a million small objects, none of them in a cycle: no collection while it is made
    try:
        return shape.load(json.loads(raw[len(head) :]))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
        # under the right head but not the shape: a bug, or a value written by something else
        logger.warning("cache value %s is not a %s %s (%s); read as a miss", key, shape.name, shape.version, error)
        return None
    finally:
        if collecting:
            gc.enable()


def set(key: str, value, timeout: int, shape: Shape) -> None:  # noqa: A001 - mirrors the cache API
    redis_client = reachable_client()
    if redis_client is None:
        return
    raw = shape.head + json.dumps(shape.dump(value), ensure_ascii=False, separators=(",", ":")).encode()
    try:
        redis_client.set(f"cache:{key}", raw, ex=timeout)
    except Unavailable as error:
        mark_down(error)


def delete(key: str) -> None:
    redis_client = reachable_client()
    if redis_client is None:
        return
    try:
        redis_client.delete(f"cache:{key}")
    except Unavailable as error:
        mark_down(error)


def add_counts(counts: dict[str, int]) -> None:
    """Add to counters kept in Redis (`count:{name}`), which every process shares (the store's
    bytes and errors for /metrics). Best effort: with Redis down or absent the counts are lost,
    never the caller's work."""
    redis_client = reachable_client()
    if redis_client is None or not counts:
        return
    try:
        with redis_client.pipeline(transaction=False) as pipe:
            for name, amount in counts.items():
                pipe.incrby(f"count:{name}", amount)
            pipe.execute()
    except Unavailable as error:
        mark_down(error)


def read_counts(names: list[str]) -> dict[str, int]:
    """The counters `names` (0 for one never added to); raises Unavailable when Redis is down."""
    redis_client = client()
    if redis_client is None:
        return dict.fromkeys(names, 0)
    values = redis_client.mget([f"count:{name}" for name in names])
    return {name: int(value or 0) for name, value in zip(names, values)}


def full_key(key: str) -> str:
    """The Redis key behind `key` (for a Lua script that reads it: transcription.api.front.polls)."""
    return f"cache:{key}"


def get_bytes_and_version(key: str, version_key: str) -> tuple[bytes | None, bytes | None]:
    """A value kept as plain bytes and the version guarding it (set_bytes_if_version), in one round
    trip. Read the version before what the value is made from (the database): see set_bytes_if_version."""
    redis_client = reachable_client()
    if redis_client is None:
        return None, None
    try:
        value, version = redis_client.mget([full_key(key), full_key(version_key)])
    except Unavailable as error:
        mark_down(error)
        return None, None
    return value, version


# Writes the value only while the version key still holds what the reader saw (absent: "").
_SET_IF_VERSION = """
if (redis.call('GET', KEYS[2]) or '') == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""


@lru_cache(maxsize=1)
def _set_if_version_script():
    return client().register_script(_SET_IF_VERSION)


def set_bytes_if_version(key: str, value: bytes, timeout: int, version_key: str, seen: bytes | None) -> bool:
    """Set `key` unless `version_key` moved since the reader read `seen` (get_bytes_and_version).

    A reader that read the database before a write committed, and writes the cache after the
    write's delete, would otherwise put the old value back for its whole timeout. Writers bump
    the version with the delete (forget), so such a late write is refused.
    True when written."""
    redis_client = reachable_client()
    if redis_client is None:
        return False
    try:
        script = _set_if_version_script()
        return bool(script(keys=[full_key(key), full_key(version_key)], args=[value, timeout, seen or b""]))
    except Unavailable as error:
        mark_down(error)
        return False


def forget(key: str, version_key: str, timeout: int) -> None:
    """Delete `key` and move its version, now and again once the current transaction commits: a
    reader who read the database before the commit can then not set the old value back
    (set_bytes_if_version). Outside a transaction on_commit runs at once: twice, harmlessly."""
    _delete_and_bump_version(key, version_key, timeout)
    transaction.on_commit(lambda: _delete_and_bump_version(key, version_key, timeout))


def _delete_and_bump_version(key: str, version_key: str, timeout: int) -> None:
    # Always tried, even during a pause: a skipped delete would leave an old answer behind once
    # Redis is back (a cached poll, a revoked token), so only a failing Redis skips it.
    redis_client = client()
    if redis_client is None:
        return
    try:
        pipe = redis_client.pipeline(transaction=False)
        pipe.incr(full_key(version_key))
        pipe.expire(full_key(version_key), timeout)
        pipe.delete(full_key(key))
        pipe.execute()
    except Unavailable as error:
        mark_down(error)
