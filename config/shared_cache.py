"""The cache the web processes share in Redis (token lookups, poll answers).

Django's RedisCache builds a new client object on every call, which costs more than the Redis
round trip itself on the poll path; this keeps one client (and its connection pool) per process.
Without REDIS_URL nothing is cached: a per-process cache would let a revoked token live on in
the other web processes.
"""

from __future__ import annotations

import pickle
from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=1)
def client():
    if not settings.REDIS_URL:
        return None
    return redis.Redis.from_url(settings.REDIS_URL)


def get(key: str):
    redis_client = client()
    if redis_client is None:
        return None
    raw = redis_client.get(f"cache:{key}")
    return None if raw is None else pickle.loads(raw)


def set(key: str, value, timeout: int) -> None:  # noqa: A001 - mirrors the cache API
    redis_client = client()
    if redis_client is not None:
        redis_client.set(f"cache:{key}", pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), ex=timeout)


def delete(key: str) -> None:
    redis_client = client()
    if redis_client is not None:
        redis_client.delete(f"cache:{key}")
