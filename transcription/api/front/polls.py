"""GET /v1/api/transcription/{id}, the hottest path of the service, in one Redis round trip.

A poll of a job whose answer is cached (transcription.events.poll_cache) is answered by one Lua script:
it reads the token's cached account and the job's cached answer and, only when it can answer the
poll, counts it in the account's sliding window (the very function ratelimit.hit runs). The
answer's bytes are sent as they are. Every other request goes to the DRF view, so the rules hold
by construction:

- Authentication first: a token that is not in the token cache, or whose last database check is
  older than LAST_USED_RESOLUTION, is left to the front door (accounts.authentication.token_holder:
  the database, then the cache). The cache holds only tokens of active logins; revoking or
  replacing a token, or a change of its login's status (deactivation), deletes its entry
  (accounts.services, accounts.signals), and the script reads that entry on every poll: both are
  immediate.
- The counter is exact and shared: the script counts a poll only when it answers it (a cached
  answer of the token's own account, within the limit). Anything else (rate limited, another
  account's job, not cached) is counted by the DRF view's throttle, once, as any other request.
- Same bytes, same headers: the cached body is what DRF's JSONRenderer made of the document, and
  the headers are those the DRF view adds (tests/api/test_poll_fast_path.py compares the two).
  Requests that ask for something else (an Accept header other than JSON, any query string) or
  that are not GETs go to the DRF view, which negotiates as before. The fast lane serves only what
  the front door would answer: tests/api/test_poll_equivalence.py drives both with random
  tokens, ids, queries and Accept headers and compares status, body, headers and counters.
- Redis down or absent (the embedded mode): everything goes to the DRF view, which knows what to
  do then.

Two callers run the script: this module's Django view (poll_view), and, under the production
server, transcription.api.doors.poll_front, which runs it in the event loop before the request reaches
Django's thread pool and hands Django the script's answer (ANSWER_ENVIRON_KEY).

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
from typing import NamedTuple

import redis
from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer

from accounts.authentication import LAST_USED_RESOLUTION, token_cache_key
from accounts.tokens import looks_like_token, token_digest
from config import shared_cache
from transcription.api.front import ratelimit
from transcription.api.wire.presenters import job_document, translations_in_order, with_links
from transcription.events import poll_cache
from transcription.models import Job
from transcription.scheduling import lines

# What the DRF view answers in Allow (a ViewSet routes HEAD to its GET); compared in the tests.
ALLOW = "GET, HEAD, OPTIONS"
# Accept headers whose negotiation DRF settles on its JSON renderer with no parameters.
PLAIN_JSON_ACCEPTS = frozenset(["", "*/*", "application/json", "application/json, */*"])
# Where transcription.api.doors.poll_front leaves the script's answer for poll_view: a WSGI environ key
# no request header can become (those are all HTTP_*).
ANSWER_ENVIRON_KEY = "transcription.poll_answer"
# A waiting job's place in line; the Job document stays as the contract has it.
QUEUE_POSITION = "X-Queue-Position"

# KEYS[1]: the token cache entry ("<account id>:<ms of its last database check>:<user id>"), KEYS[2]: the
# job's cached poll ("<account id> <links> <digest>\n<json>"), KEYS[3..5]: the waiting lines
# (transcription.scheduling.lines). ARGV: now (ms), window (ms), limit, a unique member, the token entry's max
# age (ms), the poll counters' key prefix, the tag of the entry this process holds (or ""), the job's
# id. Answers {0} when it cannot answer the poll (nothing counted), else {1, entries in the window,
# the cached poll, or 1 when it is the entry held, the job's place in line or 0}. The held entry
# is compared by its first bytes: copying a done job's tens of kB into Lua would cost Redis more
# than the rest of the script.
POLL_SCRIPT = (
    ratelimit.WINDOW_HIT_LUA
    + lines.PLACE_LUA
    + """
local token = redis.call('GET', KEYS[1])
if not token then return {0} end
local account, checked = string.match(token, '^(%d+):(%d+):%d+$')
if not account then return {0} end
local now = tonumber(ARGV[1])
if now - tonumber(checked) > tonumber(ARGV[5]) then return {0} end
local owner = account .. ' '
local held = ARGV[7]
local poll
if held ~= '' and string.sub(held, 1, #owner) == owner
    and redis.call('GETRANGE', KEYS[2], 0, #held - 1) == held then
  poll = 1
else
  poll = redis.call('GET', KEYS[2])
  if not poll or string.sub(poll, 1, #owner) ~= owner then return {0} end
end
local hit = window_hit(ARGV[6] .. account, now, tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4])
if hit[1] == 0 then return {0} end
return {1, hit[2], poll, place(3, ARGV[8])}
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
    cached, version = poll_cache.get(job_id)  # the version before the row: poll_cache's docstring
    if cached is None:
        job = Job.objects.filter(pk=job_id).prefetch_related(translations_in_order()).first()
        if job is None:
            return None
        document = job_document(job)
        cached = poll_cache.put(job_id, job.account_id, _has_links(document), render(document), version)
    return cached


def document(cached: poll_cache.CachedPoll, request) -> dict:
    """The answer as data, for the DRF view (which renders it as the request negotiated)."""
    return with_links(json.loads(cached.body), request)


class Poll(NamedTuple):
    """A poll the script may answer: whose token, which job, and the script's keys and arguments."""

    job_id: uuid.UUID
    limit: int
    member: str  # its entry in the account's window, should the script count it
    held: poll_cache.CachedPoll | None
    keys: list[str]
    args: list


class PollAnswer(NamedTuple):
    job_id: uuid.UUID
    cached: poll_cache.CachedPoll
    state: ratelimit.RateState
    member: str
    place: int | None  # in the waiting line (X-Queue-Position)


def poll_for(method: str, accept: str, query_string: str, authorization: str, id: str) -> Poll | None:
    """The script call for a request, or None when the DRF view must answer it: anything but a
    plain GET with a well-formed bearer token and job id, or Redis down or absent."""
    # Any query string goes to the DRF view: its negotiation reads the parsed query (?format=,
    # and %66ormat= too), which a test on the raw string cannot match, and polls send none.
    if method != "GET" or accept not in PLAIN_JSON_ACCEPTS or query_string:
        return None
    parts = authorization.split()
    if len(parts) != 2 or not authorization.isascii() or parts[0].lower() != "bearer":
        return None
    if not looks_like_token(parts[1]) or shared_cache.reachable_client() is None:
        return None
    try:
        job_id = uuid.UUID(id)
    except ValueError:
        return None  # the DRF view's 422, after authentication and the count
    limit = ratelimit.limit_for(ratelimit.POLLS)
    member = ratelimit.new_member()
    held = _held(job_id)
    keys = [
        shared_cache.full_key(token_cache_key(token_digest(parts[1]))),
        poll_cache.redis_key(job_id),
        *lines.place_keys(),
    ]
    args = [
        int(time.time() * 1000),
        ratelimit.WINDOW_SECONDS * 1000,
        limit,
        member,
        int(LAST_USED_RESOLUTION.total_seconds() * 1000),
        ratelimit.account_key("", ratelimit.POLLS),
        held.tag if held is not None else b"",
        str(job_id),
    ]
    return Poll(job_id, limit, member, held, keys, args)


def answer_from(poll: Poll, reply: list) -> PollAnswer | None:
    """What the script answered: the poll counted and its answer, or None (nothing counted)."""
    if not reply[0]:
        return None
    cached: poll_cache.CachedPoll | None
    if reply[2] == 1 and poll.held is not None:
        cached = poll.held  # Redis holds the very entry this process does
    else:
        cached = poll_cache.decode(reply[2])
        if cached is None:  # an entry the script took for this account's, in a format gone since
            return None
        _hold(poll.job_id, cached)
    state = ratelimit.rate_state(poll.limit, True, int(reply[1]), 0)
    return PollAnswer(poll.job_id, cached, state, poll.member, int(reply[3]) or None)


def response(answer: PollAnswer, request) -> HttpResponse:
    cached = answer.cached
    body = render(document(cached, request)) if cached.has_links else cached.body
    response = HttpResponse(body, content_type="application/json")
    response["Allow"] = ALLOW
    response["X-RateLimit-Limit"] = str(answer.state.limit)
    response["X-RateLimit-Remaining"] = str(answer.state.remaining)
    _add_place(response, answer.place)
    return response


def _add_place(response: HttpResponse, place: int | None) -> None:
    """A waiting job's place in its line (1: the next job a worker takes), last of the view's
    headers on both lanes. A place, not a time: jobs ahead of it differ in length, and a newcomer
    of another account may be served first (every account in turn)."""
    if place is not None:
        response[QUEUE_POSITION] = str(place)


def _place(job_id: str) -> int | None:
    """For the DRF lane: the place from Redis in one round trip (nothing when Redis is down), or
    from the database's lines without Redis (the embedded default)."""
    job = _uuid_or_none(job_id)
    if job is None:
        return None
    try:
        return lines.place(job)
    except shared_cache.Unavailable as error:
        shared_cache.mark_down(error)
        return None


@functools.lru_cache(maxsize=1)
def script():
    return shared_cache.client().register_script(POLL_SCRIPT)


def _answer(request, id: str) -> PollAnswer | None:
    meta = request.META
    poll = poll_for(
        request.method,
        meta.get("HTTP_ACCEPT", ""),
        meta.get("QUERY_STRING", ""),
        meta.get("HTTP_AUTHORIZATION", ""),
        id,
    )
    if poll is None:
        return None
    try:
        reply = script()(keys=poll.keys, args=poll.args)
    except redis.RedisError as error:
        shared_cache.mark_down(error)  # the DRF view then counts nothing, as ratelimit.hit does
        return None
    return answer_from(poll, reply)


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def poll_view(drf_view):
    """`drf_view` (JobViewSet's retrieve) with the cached answer in front. The attributes of the
    DRF view are kept (functools.wraps), so the OpenAPI document still finds the operation."""

    @functools.wraps(drf_view)
    def view(request, id: str):
        answer = request.META.pop(ANSWER_ENVIRON_KEY, None)
        if answer is None or answer.job_id != _uuid_or_none(id):  # any spelling of the same id
            answer = _answer(request, id)
        if answer is not None:
            return response(answer, request)
        answered = drf_view(request, id=id)
        if answered.status_code == 200 and request.method in ("GET", "HEAD"):
            _add_place(answered, _place(id))
        return answered

    return view
