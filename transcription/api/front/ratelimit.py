"""Per-account sliding-window limits: 60 job requests and 300 polls in any 60 seconds (DESIGN.md
section 4), and a per-address limit on API requests that carry no valid token.

A sliding window log, not fixed windows: each allowed request is one entry (its time) in a
sorted set per account and bucket; a request is allowed while fewer than `limit` entries are
younger than 60 seconds. So no 60 seconds ever hold more than `limit` requests: fixed
one-minute windows let a client spend one window's allowance in its last second and the next
window's in the following one (91 job POSTs in 2.4 s). Refused requests are not entries, so a
client that keeps knocking is let in again as its old requests age out. A GCRA with a burst of
`limit` would cost one key instead of up to `limit` entries, but still lets about twice the
limit through in some 60 seconds; the entries are a few KB per busy account.

The check and the entry are one Lua script in Redis, atomic, so the count is exact under
concurrency, and shared by every front door of the account (the API, the website, the MCP
server): they all call `hit`. Without REDIS_URL (the embedded default of `make run`) a SQLite
file on local disk plays the same role for the processes of one machine.

When Redis cannot be reached, requests are let through uncounted (and a warning logged): a
limiter that is down should not take the service down with it.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

import redis
from django.conf import settings

from accounts import client as accounts_client
from config import shared_cache

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60
JOBS = "jobs"
POLLS = "polls"
# API requests without a valid token, counted per client address (see client_address).
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class RateState:
    limit: int
    remaining: int
    allowed: bool
    retry_after: int  # whole seconds until one more request would be allowed


def limit_for(bucket: str) -> int:
    if bucket == ANONYMOUS:
        return settings.RATE_LIMIT_ANONYMOUS_PER_MINUTE
    return settings.RATE_LIMIT_JOBS_PER_MINUTE if bucket == JOBS else settings.RATE_LIMIT_POLLS_PER_MINUTE


# The window as a Lua function, so that a script doing more in the same round trip (the poll
# path's, transcription.api.front.polls) counts exactly as `hit` does. key: the sorted set of the
# allowed requests' times (ms); now and window in ms; member unique per request. Answers
# {allowed (1/0), entries in the window, ms until a slot frees}.
WINDOW_HIT_LUA = """
local function window_hit(key, now, window, limit, member)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  if count < limit then
    redis.call('ZADD', key, now, member)
    redis.call('PEXPIRE', key, window)
    return {1, count + 1, 0}
  end
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local wait = window
  if oldest[2] then wait = tonumber(oldest[2]) + window - now end
  return {0, count, wait}
end
"""

# KEYS[1]: the sorted set. ARGV: now (ms), window (ms), limit, a unique member.
_SLIDING_WINDOW = (
    WINDOW_HIT_LUA
    + """
return window_hit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4])
"""
)


class RedisWindow:
    def __init__(self, client: redis.Redis):
        self.script = client.register_script(_SLIDING_WINDOW)

    def hit(self, key: str, now_ms: int, window_ms: int, limit: int) -> tuple[bool, int, int]:
        allowed, count, wait_ms = self.script(keys=[key], args=[now_ms, window_ms, limit, new_member()])
        return bool(allowed), int(count), int(wait_ms)


class SqliteWindow:
    """The same window for the embedded mode: one SQLite file shared by the processes of one machine."""

    def __init__(self, path):
        self.path = str(path)
        self.local = threading.local()

    def _connection(self):
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            connection.execute("CREATE TABLE IF NOT EXISTS hits (key TEXT, at INTEGER)")
            connection.execute("CREATE INDEX IF NOT EXISTS hits_key_at ON hits (key, at)")
            connection.execute("CREATE INDEX IF NOT EXISTS hits_at ON hits (at)")
            self.local.connection = connection
        return connection

    def hit(self, key: str, now_ms: int, window_ms: int, limit: int) -> tuple[bool, int, int]:
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")  # one writer at a time: the count and the entry agree
        try:
            connection.execute("DELETE FROM hits WHERE at <= ?", (now_ms - window_ms,))
            count, oldest = connection.execute("SELECT COUNT(*), MIN(at) FROM hits WHERE key = ?", (key,)).fetchone()
            if count < limit:
                connection.execute("INSERT INTO hits (key, at) VALUES (?, ?)", (key, now_ms))
                result = (True, count + 1, 0)
            else:
                result = (False, count, (oldest + window_ms - now_ms) if oldest is not None else window_ms)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        return result


@lru_cache(maxsize=1)
def counter():
    if settings.REDIS_URL:
        return RedisWindow(shared_cache.client())
    settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
    return SqliteWindow(settings.DATA_DIR / "ratelimit.sqlite3")


def _hit(key: str, limit: int, now: float | None) -> RateState:
    now = time.time() if now is None else now
    window_ms = WINDOW_SECONDS * 1000
    uncounted = RateState(limit=limit, remaining=limit, allowed=True, retry_after=0)
    if settings.REDIS_URL and shared_cache.reachable_client() is None:
        return uncounted  # Redis failed a moment ago: no timeout per request while it is down
    try:
        allowed, count, wait_ms = counter().hit(key, int(now * 1000), window_ms, limit)
    except redis.RedisError as error:
        shared_cache.mark_down(error)
        logger.warning("Rate limit not counted, Redis is unreachable: %s", error)
        return uncounted
    return rate_state(limit, allowed, count, wait_ms)


def rate_state(limit: int, allowed: bool, count: int, wait_ms: int) -> RateState:
    """The state after a window hit that answered (allowed, entries in the window, ms to wait)."""
    return RateState(
        limit=limit,
        remaining=max(0, limit - count),
        allowed=allowed,
        retry_after=0 if allowed else max(1, math.ceil(wait_ms / 1000)),
    )


def account_key(account_id, bucket: str) -> str:
    return f"ratelimit:{bucket}:{account_id}"


def new_member() -> str:
    """A unique sorted-set member for one request (two requests in the same ms are two entries):
    a random prefix per process and a counter, which costs no system call per request."""
    return f"{_member_prefix}{next(_member_numbers)}"


# Set by _new_member_prefix, at import and again in each forked child.
_member_prefix: str
_member_numbers: itertools.count[int]


def _new_member_prefix() -> None:
    global _member_prefix, _member_numbers
    _member_prefix = secrets.token_hex(8) + ":"
    _member_numbers = itertools.count()


_new_member_prefix()
os.register_at_fork(after_in_child=_new_member_prefix)  # a forked child must not repeat its parent's


def hit(account_id, bucket: str, now: float | None = None) -> RateState:
    """Count one request of `bucket` for the account and say whether it is allowed."""
    return _hit(account_key(account_id, bucket), limit_for(bucket), now)


def hit_address(address: str, now: float | None = None) -> RateState:
    """Count one request without a valid token from `address` (see client_address)."""
    return _hit(f"ratelimit:{ANONYMOUS}:{address}", limit_for(ANONYMOUS), now)


def client_address(request) -> str:
    """The address a request comes from, as the limits count it (accounts.client: REMOTE_ADDR, or
    under TRUST_PROXY_HEADERS the address our own proxy saw; an IPv6 client by its /64)."""
    return accounts_client.counted_client_address(request) or "unknown"
