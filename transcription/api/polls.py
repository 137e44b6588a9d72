"""GET /v1/api/transcription/{id}, the hottest path of the service, in one Redis round trip.

A poll of a job whose answer is cached (transcription.poll_cache) is answered here, by a plain
Django view in front of the DRF one: one Lua script reads the token's cached account, counts
the poll in the account's sliding window (the very function ratelimit.hit runs) and hands back
the cached answer's bytes, which are sent as they are. Every other request goes to the DRF view,
so the rules hold by construction:

- Authentication first: a token that is not in the token cache, or whose last database check is
  older than LAST_USED_RESOLUTION, is left to BearerTokenAuthentication (the database, then the
  cache). Revoking or replacing a token deletes its cache entry (accounts.services), and the
  script reads that entry on every poll: revocation is immediate.
- The counter is exact and shared: the script counts each poll it sees once; when the answer is
  not a plain 200 (rate limited, another account's job, not cached) the DRF view answers with
  that count (request.poll_counted, read by AccountRateThrottle) instead of counting again.
  Nothing is counted here before a request is handed over for any other reason.
- Same bytes, same headers: the cached body is what DRF's JSONRenderer made of the document, and
  the headers are those the DRF view adds (tests/api/test_poll_fast_path.py compares the two).
  Requests that ask for something else (an Accept header other than JSON, ?format=) or that are
  not GETs go to the DRF view, which negotiates as before.
- Redis down or absent (the embedded mode): everything goes to the DRF view, which knows what to
  do then.

The answers this process sent last are kept in it (RECENT_POLL_BYTES in all): the script is told
the tag of the one held (the cached entry's first line, with a digest of the body) and answers
"the same" instead of the bytes when Redis holds that very entry. Redis stays the only truth:
an entry forgotten there is a miss here too, whatever this process holds.

It reads keys the script builds itself (the account's counter), which a Redis Cluster would not
allow; the service runs one Redis (docs/decisions.md).
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid
from collections import OrderedDict

import redis
from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer

from accounts.authentication import LAST_USED_RESOLUTION, token_cache_key
from accounts.tokens import looks_like_token, token_digest
from config import shared_cache
from transcription import poll_cache
from transcription.models import Job

from . import ratelimit
from .presenters import job_document, translations_in_order, with_links

# What the DRF view answers in Allow (a ViewSet routes HEAD to its GET); compared in the tests.
ALLOW = "GET, HEAD, OPTIONS"
# Accept headers whose negotiation DRF settles on its JSON renderer with no parameters.
PLAIN_JSON_ACCEPTS = frozenset(["", "*/*", "application/json", "application/json, */*"])

# KEYS[1]: the token cache entry ("<account id>:<ms of its last database check>"), KEYS[2]: the
# job's cached poll. ARGV: now (ms), window (ms), limit, a unique member, the token entry's max
# age (ms), the poll counters' key prefix, the tag of the entry this process holds (or "").
# Answers {0} when the token must go to the database (nothing counted), else {1, account id,
# allowed, entries, ms to wait, the cached poll, or 1 when it is the entry held, or nil}.
_POLL_SCRIPT = (
    ratelimit.WINDOW_HIT_LUA
    + """
local token = redis.call('GET', KEYS[1])
if not token then return {0} end
local account, checked = string.match(token, '^(%d+):(%d+)$')
if not account then return {0} end
local now = tonumber(ARGV[1])
if now - tonumber(checked) > tonumber(ARGV[5]) then return {0} end
local hit = window_hit(ARGV[6] .. account, now, tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4])
local poll = redis.call('GET', KEYS[2])
local held = ARGV[7]
if poll and held ~= '' and string.sub(poll, 1, #held) == held then poll = 1 end
return {1, account, hit[1], hit[2], hit[3], poll}
"""
)

_renderer = JSONRenderer()

# The cached polls this process answered last, by job: a busy job's answer (tens of kB once done)
# is not fetched from Redis on each of its polls, only checked. Bounded in bytes, oldest out.
RECENT_POLL_BYTES = 4 * 1024 * 1024
_recent: OrderedDict[uuid.UUID, poll_cache.CachedPoll] = OrderedDict()
_recent_size = 0
_recent_lock = threading.Lock()


def _held(job_id: uuid.UUID) -> poll_cache.CachedPoll | None:
    with _recent_lock:
        cached = _recent.get(job_id)
        if cached is not None:
            _recent.move_to_end(job_id)
        return cached


def _hold(job_id: uuid.UUID, cached: poll_cache.CachedPoll) -> None:
    global _recent_size
    if len(cached.body) > RECENT_POLL_BYTES // 4:
        return
    with _recent_lock:
        previous = _recent.pop(job_id, None)
        _recent_size -= len(previous.body) if previous is not None else 0
        _recent[job_id] = cached
        _recent_size += len(cached.body)
        while _recent_size > RECENT_POLL_BYTES:
            _, oldest = _recent.popitem(last=False)
            _recent_size -= len(oldest.body)


def render(data: dict) -> bytes:
    """The bytes DRF's Response renders for `data` (no Accept parameters)."""
    return _renderer.render(data)


def _has_links(document: dict) -> bool:
    return bool(document["burned_video_url"]) or any(t["burned_video_url"] for t in document["translations"])


def cached_poll(job_id: uuid.UUID) -> poll_cache.CachedPoll | None:
    """The job's cached poll, read from the database and cached when missing; None: no such job."""
    cached = poll_cache.get(job_id)
    if cached is None:
        job = Job.objects.filter(pk=job_id).prefetch_related(translations_in_order()).first()
        if job is None:
            return None
        document = job_document(job)
        cached = poll_cache.put(job_id, job.account_id, _has_links(document), render(document))
    return cached


def document(cached: poll_cache.CachedPoll, request) -> dict:
    """The answer as data, for the DRF view (which renders it as the request negotiated)."""
    return with_links(json.loads(cached.body), request)


@functools.lru_cache(maxsize=1)
def _script():
    return shared_cache.client().register_script(_POLL_SCRIPT)


def _bearer_digest(request) -> str | None:
    """The token's digest when the header is exactly what BearerTokenAuthentication accepts."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    parts = header.split()
    if len(parts) != 2 or not header.isascii() or parts[0].lower() != "bearer" or not looks_like_token(parts[1]):
        return None
    return token_digest(parts[1])


def _answer_from_cache(request, id: str) -> HttpResponse | None:
    """The answer, or None to let the DRF view answer (with request.poll_counted when counted)."""
    if request.META.get("HTTP_ACCEPT", "") not in PLAIN_JSON_ACCEPTS:
        return None
    if request.META.get("QUERY_STRING") and "format" in request.GET:
        return None
    if shared_cache.reachable_client() is None:
        return None
    digest = _bearer_digest(request)
    if digest is None:
        return None
    try:
        job_id = uuid.UUID(id)
    except ValueError:
        return None  # the DRF view's 422, after authentication and the count
    limit = ratelimit.limit_for(ratelimit.POLLS)
    held = _held(job_id)
    try:
        reply = _script()(
            keys=[shared_cache.full_key(token_cache_key(digest)), poll_cache.redis_key(job_id)],
            args=[
                int(time.time() * 1000),
                ratelimit.WINDOW_SECONDS * 1000,
                limit,
                ratelimit.new_member(),
                int(LAST_USED_RESOLUTION.total_seconds() * 1000),
                ratelimit.account_key("", ratelimit.POLLS),
                held.tag if held is not None else b"",
            ],
        )
    except redis.RedisError as error:
        shared_cache.mark_down(error)  # the DRF view then counts nothing, as ratelimit.hit does
        return None
    if not reply[0]:
        return None
    account_id = int(reply[1])
    state = ratelimit.rate_state(limit, bool(reply[2]), int(reply[3]), int(reply[4]))
    poll = reply[5] if len(reply) > 5 else None
    if poll == 1 and held is not None:
        cached = held  # Redis holds the very entry this process does
    else:
        cached = poll_cache.decode(poll if isinstance(poll, bytes) else None)
        if cached is not None:
            _hold(job_id, cached)
    if not state.allowed or cached is None or cached.account_id != account_id:
        request.poll_counted = (account_id, state)
        return None
    body = render(document(cached, request)) if cached.has_links else cached.body
    response = HttpResponse(body, content_type="application/json")
    response["Allow"] = ALLOW
    response["X-RateLimit-Limit"] = str(state.limit)
    response["X-RateLimit-Remaining"] = str(state.remaining)
    return response


def poll_view(drf_view):
    """`drf_view` (JobViewSet's retrieve) with the cached answer in front. The attributes of the
    DRF view are kept (functools.wraps), so the OpenAPI document still finds the operation."""

    @functools.wraps(drf_view)
    def view(request, id: str):
        if request.method == "GET":
            response = _answer_from_cache(request, id)
            if response is not None:
                return response
        return drf_view(request, id=id)

    return view
