"""Per-account fixed-window counters: 60 job requests and 300 polls a minute (DESIGN.md section 4).

The counters live in Redis so every web process (and later the MCP server) shares them; an
atomic INCR makes the count exact under concurrency. Without REDIS_URL (the embedded default
of `make run`) a SQLite file on local disk plays the same role for the processes of one machine.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from config import shared_cache

WINDOW_SECONDS = 60
JOBS = "jobs"
POLLS = "polls"


@dataclass(frozen=True)
class RateState:
    limit: int
    remaining: int
    allowed: bool
    retry_after: int  # whole seconds until the window resets


def limit_for(bucket: str) -> int:
    return settings.RATE_LIMIT_JOBS_PER_MINUTE if bucket == JOBS else settings.RATE_LIMIT_POLLS_PER_MINUTE


class RedisCounter:
    """None when Redis cannot be reached: the request is let through uncounted (an outage of
    Redis must not stop polls; queueing answers 503 on its own, transcription.dispatch)."""

    def incr(self, key: str, ttl: int) -> int | None:
        client = shared_cache.reachable_client()
        if client is None:
            return None
        try:
            return self._incr(client, key, ttl)
        except shared_cache.Unavailable as error:
            shared_cache.mark_down(error)
            return None

    def _incr(self, client, key: str, ttl: int) -> int:
        pipe = client.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, ttl)
        count, _ = pipe.execute()
        return int(count)


class SqliteCounter:
    """Counters for the embedded mode: one SQLite file shared by the processes of one machine."""

    def __init__(self, path):
        self.path = str(path)
        self.local = threading.local()

    def _connection(self):
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            connection.execute("CREATE TABLE IF NOT EXISTS counter (key TEXT PRIMARY KEY, count INTEGER, expires REAL)")
            self.local.connection = connection
        return connection

    def incr(self, key: str, ttl: int) -> int:
        connection = self._connection()
        now = time.time()
        connection.execute("DELETE FROM counter WHERE expires < ?", (now,))
        row = connection.execute(
            "INSERT INTO counter (key, count, expires) VALUES (?, 1, ?) "
            "ON CONFLICT(key) DO UPDATE SET count = count + 1 RETURNING count",
            (key, now + ttl),
        ).fetchone()
        return int(row[0])


@lru_cache(maxsize=1)
def counter():
    if settings.REDIS_URL:
        return RedisCounter()
    settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
    return SqliteCounter(settings.DATA_DIR / "ratelimit.sqlite3")


def hit(account_id, bucket: str, now: float | None = None) -> RateState:
    """Count one request of `bucket` for the account and say whether it is allowed."""
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    limit = limit_for(bucket)
    count = counter().incr(f"ratelimit:{bucket}:{account_id}:{window}", WINDOW_SECONDS * 2)
    if count is None:
        count = 0
    retry_after = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
    return RateState(limit=limit, remaining=max(0, limit - count), allowed=count <= limit, retry_after=retry_after)
