"""The poll fast lane (transcription.api.front.polls and poll_front: a Lua script in Redis, answered in
the event loop or before DRF) serves only what the front door would answer. Random tokens (valid,
revoked, unknown, of a deactivated login, malformed), ids (own, foreign, unknown, every spelling
a UUID parser accepts, malformed), query strings, Accept headers and rate-limit states go through
both: the fast lane as bin/web runs it (PollFront, then Django's thread-pool path with poll_view
for what it passes on) and the DRF view alone (tests/front_door_urls.py). Status, body, headers
(security headers included) and every rate-limit counter must be the same."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable

import pytest
import redis
from django.conf import settings as django_settings
from django.test import Client, override_settings
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.authentication import TokenRefused, token_cache_key, token_holder
from accounts.services import account_create, account_deactivate, token_issue
from accounts.tokens import token_digest
from config import shared_cache
from tests.front_lane import Front
from transcription import states
from transcription.api.front import ratelimit
from transcription.writes import services

POLL_LIMIT = 4
ANONYMOUS_LIMIT = 3
SPELLINGS: dict[str, Callable[[object], str]] = {
    "canonical": str,
    "upper": lambda id: str(id).upper(),
    "hex": lambda id: uuid.UUID(str(id)).hex,
    "braces": lambda id: "{" + str(id) + "}",
    "urn": lambda id: "urn:uuid:" + str(id),
}
MALFORMED_IDS = ["not-a-uuid", "123", "0" * 31, "g" * 32]
QUERIES = ["", "format=json", "format=api", "%66ormat=api", "x=1", "format=json&x=1", "FORMAT=api"]
ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "text/html",
    "application/json; indent=2",
    "application/json, */*",
    "text/*",
]


@pytest.fixture
def world(db):
    """Three logins (one deactivated), their tokens (one revoked), their jobs."""
    own = account_create("own@example.com")
    other = account_create("other@example.com")
    gone = account_create("gone@example.com")
    revoked = token_issue(own)
    valid = token_issue(own)  # replaces `revoked`
    foreign = token_issue(other)
    deactivated = token_issue(gone)
    account_deactivate(gone)
    jobs = {}
    for name, account in (("own done", own), ("own waiting", own), ("foreign", other)):
        job = services.job_create(account, type="transcript", url="https://e.com/v")
        jobs[name] = str(job.pk)
    services.job_advance(jobs["own done"], states.PROCESSING)
    services.job_advance(jobs["own done"], states.ALIGNING, txt="Hello.", srt="1\n00:00:00,000 --> 00:00:01,000\nHi.\n")
    services.job_finish(jobs["own done"])
    jobs["unknown"] = str(uuid.uuid4())
    tokens = {
        "valid": valid,
        "revoked": revoked,
        "foreign": foreign,
        "deactivated": deactivated,
        "unknown": "vts_" + "A" * 43,
    }
    return {"accounts": {"own": own, "other": other, "gone": gone}, "tokens": tokens, "jobs": jobs}


# Weighted towards what the fast lane can answer (a valid, cached token; the owner's cached job),
# where the two paths could differ; the refusals are drawn too.
authorizations = st.one_of(
    st.sampled_from(["valid"] * 6 + ["revoked", "foreign", "deactivated", "unknown"]).map(lambda name: ("token", name)),
    st.sampled_from(["", "Bearer", "Bearer vts_short", "Basic dXNlcjpwYXNz", "bearer  {valid}", "Token {valid}"]).map(
        lambda raw: ("raw", raw)
    ),
)
ids = st.one_of(
    st.tuples(
        st.sampled_from(["own done"] * 4 + ["own waiting", "foreign", "unknown"]), st.sampled_from(sorted(SPELLINGS))
    ),
    st.sampled_from(MALFORMED_IDS).map(lambda raw: (raw, None)),
)


def authorization_header(world, authorization) -> str | None:
    kind, value = authorization
    if kind == "token":
        return f"Bearer {world['tokens'][value]}"
    return value.replace("{valid}", world["tokens"]["valid"]) or None


def job_path(world, drawn) -> str:
    name, spelling = drawn
    if spelling is None:
        return f"/v1/api/transcription/{name}"
    return f"/v1/api/transcription/{SPELLINGS[spelling](world['jobs'][name])}"


def counters(world) -> dict:
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    found = {
        name: client.zcard(ratelimit.account_key(account.pk, bucket))
        for name, account in world["accounts"].items()
        for bucket in (ratelimit.POLLS, ratelimit.JOBS)
    }
    found["address"] = client.zcard(f"ratelimit:{ratelimit.ANONYMOUS}:127.0.0.1")
    return found


def prepare(world, prior_polls: int, prior_bad: int, warm: bool) -> None:
    """The same starting state for each door: the windows as drawn, the token cache warm or cold."""
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    keys = list(client.scan_iter("ratelimit:*"))
    if keys:
        client.delete(*keys)
    for _ in range(prior_polls):
        ratelimit.hit(world["accounts"]["own"].pk, ratelimit.POLLS)
    for _ in range(prior_bad):
        ratelimit.hit_address("127.0.0.1")
    for token in world["tokens"].values():
        shared_cache.client().delete(shared_cache.full_key(token_cache_key(token_digest(token))))
        if warm:
            try:
                token_holder(token_digest(token))
            except TokenRefused:
                pass


COMPARED_HEADERS = (
    "content-type",
    "allow",
    "vary",
    "www-authenticate",
    "retry-after",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "content-security-policy",
    "x-frame-options",
    "x-content-type-options",
    "referrer-policy",
    "cross-origin-opener-policy",
    "strict-transport-security",
)


def answer_of(status: int, headers: dict, body: bytes) -> tuple:
    lower = {name.lower(): value for name, value in headers.items()}
    return status, body, {name: lower.get(name) for name in COMPARED_HEADERS}


def through_front_door(path, query, headers) -> tuple:
    with override_settings(ROOT_URLCONF="tests.front_door_urls"):
        response = Client().get(path, QUERY_STRING=query, **headers)
    return answer_of(response.status_code, dict(response.items()), response.content)


def through_fast_lane(path, query, headers) -> tuple:
    asgi_headers = {name[5:].replace("_", "-").title(): value for name, value in headers.items()}
    front = Front()
    status, answered_headers, body = front.request(path, query, asgi_headers)
    if front.passed_on:  # the thread pool's path: Django with poll_view (which may run the script too)
        response = Client().get(path, QUERY_STRING=query, **headers)
        return answer_of(response.status_code, dict(response.items()), response.content)
    return answer_of(status, answered_headers, body)


@hypothesis_settings(
    max_examples=int(os.environ.get("POLL_EQUIVALENCE_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    authorization=authorizations,
    drawn_id=ids,
    query=st.sampled_from(["", "", *QUERIES]),
    accept=st.sampled_from([None, None, *ACCEPTS]),
    prior_polls=st.sampled_from([0, 0, POLL_LIMIT - 1, POLL_LIMIT]),
    prior_bad=st.sampled_from([0, ANONYMOUS_LIMIT]),
    warm=st.sampled_from([True, True, True, False]),
    cached=st.sampled_from([True, True, True, False]),
)
# The defects the hostile-client probe found, always tried: a deactivated login's warm token, an
# id spelled in upper case (counted twice), ?%66ormat=api (served by the fast lane, 404 by DRF).
@example(("token", "deactivated"), ("own done", "canonical"), "", None, 0, 0, True, True)
@example(("token", "valid"), ("own done", "upper"), "", None, 0, 0, True, True)
@example(("token", "valid"), ("own done", "urn"), "", None, POLL_LIMIT - 1, 0, True, True)
@example(("token", "valid"), ("own done", "canonical"), "%66ormat=api", None, 0, 0, True, True)
def test_the_fast_lane_answers_exactly_what_the_front_door_answers(
    world, settings, authorization, drawn_id, query, accept, prior_polls, prior_bad, warm, cached
):
    settings.RATE_LIMIT_POLLS_PER_MINUTE = POLL_LIMIT
    settings.RATE_LIMIT_ANONYMOUS_PER_MINUTE = ANONYMOUS_LIMIT
    path = job_path(world, drawn_id)
    headers = {}
    header = authorization_header(world, authorization)
    if header is not None:
        headers["HTTP_AUTHORIZATION"] = header
    if accept is not None:
        headers["HTTP_ACCEPT"] = accept
    if cached:  # the job's answers in the poll cache (a poll of its owner put them there)
        from transcription.api.front.polls import cached_poll

        for name in ("own done", "own waiting", "foreign"):
            cached_poll(uuid.UUID(world["jobs"][name]))

    prepare(world, prior_polls, prior_bad, warm)
    expected = through_front_door(path, query, headers)
    expected_counters = counters(world)
    prepare(world, prior_polls, prior_bad, warm)
    answered = through_fast_lane(path, query, headers)
    assert answered == expected, (path, query, headers)
    assert counters(world) == expected_counters
    if expected[0] == 200:
        assert json.loads(expected[1])["id"] in world["jobs"].values()


def test_the_fast_lane_answers_most_plain_polls_itself(world, settings):
    """Not a vacuous equivalence: the plain poll of a cached job by its owner is the fast lane's."""
    prepare(world, 0, 0, warm=True)
    from transcription.api.front.polls import cached_poll

    cached_poll(uuid.UUID(world["jobs"]["own done"]))
    front = Front()
    status, _, _ = front.get(f"/v1/api/transcription/{world['jobs']['own done']}", world["tokens"]["valid"])
    assert status == 200 and front.passed_on == []
