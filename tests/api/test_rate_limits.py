import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer

from transcription.api.front import ratelimit

# The live server's listen backlog must hold 100 simultaneous connections.
ThreadedWSGIServer.request_queue_size = 128


def poll(api):
    return api.get(f"/v1/api/transcription/{uuid.uuid4()}")


def queue(api, body=None):
    return api.post(
        "/v1/api/transcribe",
        data=json.dumps({"url": "https://example.com/v"} if body is None else body),
        content_type="application/json",
    )


def test_every_authenticated_response_carries_the_limit_and_what_is_left(api):
    first, second = poll(api), poll(api)
    assert first["X-RateLimit-Limit"] == "300" and first["X-RateLimit-Remaining"] == "299"
    assert second["X-RateLimit-Remaining"] == "298"
    job = queue(api)
    assert job["X-RateLimit-Limit"] == "60" and job["X-RateLimit-Remaining"] == "59"
    invalid = queue(api, {})
    assert invalid.status_code == 422 and invalid["X-RateLimit-Remaining"] == "58"


def test_the_61st_job_request_in_a_minute_is_a_429(api):
    statuses = [queue(api).status_code for _ in range(60)]
    assert statuses == [200] * 60
    response = queue(api)
    assert response.status_code == 429
    assert set(response.json()) == {"detail"}
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    assert response["X-RateLimit-Limit"] == "60" and response["X-RateLimit-Remaining"] == "0"
    # Polls have their own counter.
    assert poll(api).status_code == 404


def test_the_301st_poll_is_a_429_and_comes_before_validation(api):
    # 300 polls take seconds on a busy machine: the clock stands still so they share one window.
    with mock.patch("transcription.api.front.ratelimit.time.time", return_value=time.time()):
        for _ in range(300):
            assert poll(api).status_code == 404
        assert poll(api).status_code == 429
        assert api.get("/v1/api/transcription/not-a-uuid").status_code == 429
        assert api.get("/v1/api/playlist").status_code == 429  # the preview counts as a poll


def test_accounts_have_separate_counters(client, api, other_account):
    from accounts.services import token_issue

    for _ in range(60):
        queue(api)
    assert queue(api).status_code == 429
    other = token_issue(other_account)
    response = client.post(
        "/v1/api/transcribe",
        data=json.dumps({"url": "https://e.com/v"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {other}",
    )
    assert response.status_code == 200


def test_the_limiter_counts_exactly_under_100_concurrent_hits():
    account_id = f"concurrency-{uuid.uuid4()}"
    barrier = threading.Barrier(100)

    def hit(_):
        barrier.wait()
        return ratelimit.hit(account_id, ratelimit.JOBS)

    with ThreadPoolExecutor(max_workers=100) as pool:
        results = list(pool.map(hit, range(100)))
    assert sum(r.allowed for r in results) == 60
    assert sorted(r.remaining for r in results if r.allowed) == list(range(60))


@pytest.mark.django_db(transaction=True)
def test_100_concurrent_http_requests_get_exactly_60_answers_and_40_429s(live_server, account):
    from accounts.services import token_issue

    token = token_issue(account)
    barrier = threading.Barrier(100)

    def send(_):
        request = urllib.request.Request(
            f"{live_server.url}/v1/api/transcribe",
            data=b'{"url": "https://example.com/v.mp4"}',
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        barrier.wait()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    with ThreadPoolExecutor(max_workers=100) as pool:
        statuses = list(pool.map(send, range(100)))
    assert statuses.count(200) == 60 and statuses.count(429) == 40


def _at(seconds_into_a_minute: float) -> float:
    """A moment `seconds_into_a_minute` past the start of a calendar minute."""
    return (time.time() // 60 + 1) * 60 + seconds_into_a_minute


def test_no_double_burst_across_a_minute_boundary(api, settings):
    settings.RATE_LIMIT_JOBS_PER_MINUTE = 5
    late = _at(59.5)
    with mock.patch("transcription.api.front.ratelimit.time.time", return_value=late):
        assert [queue(api).status_code for _ in range(5)] == [200] * 5
    # One second later, in the next calendar minute: the five are still within 60 seconds.
    with mock.patch("transcription.api.front.ratelimit.time.time", return_value=late + 1):
        refused = queue(api)
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) == 59
    with mock.patch("transcription.api.front.ratelimit.time.time", return_value=late + 60.01):
        assert queue(api).status_code == 200


def test_a_slot_frees_as_each_request_ages_out():
    account_id = f"sliding-{uuid.uuid4()}"
    start = _at(10)
    for n in range(60):
        assert ratelimit.hit(account_id, ratelimit.JOBS, now=start + n).allowed
    refused = ratelimit.hit(account_id, ratelimit.JOBS, now=start + 59.9)
    assert not refused.allowed and refused.retry_after == 1
    assert ratelimit.hit(account_id, ratelimit.JOBS, now=start + 60.5).allowed  # the first aged out
    assert not ratelimit.hit(account_id, ratelimit.JOBS, now=start + 60.6).allowed


def test_requests_without_a_valid_token_are_throttled_per_address(client, settings):
    settings.RATE_LIMIT_ANONYMOUS_PER_MINUTE = 3
    path = f"/v1/api/transcription/{uuid.uuid4()}"
    missing = [client.get(path, REMOTE_ADDR="203.0.113.7").status_code for _ in range(3)]
    wrong = client.get(path, REMOTE_ADDR="203.0.113.7", HTTP_AUTHORIZATION="Bearer not-a-token")
    assert missing == [401] * 3
    assert wrong.status_code == 429 and int(wrong["Retry-After"]) >= 1
    assert set(wrong.json()) == {"detail"}
    assert client.post("/v1/api/transcribe", REMOTE_ADDR="203.0.113.7").status_code == 429
    assert client.get(path, REMOTE_ADDR="203.0.113.8").status_code == 401  # another client
    # The same /64 of IPv6 is one client.
    assert [client.get(path, REMOTE_ADDR=f"2001:db8::{n}").status_code for n in range(4)] == [401] * 3 + [429]


def test_a_valid_token_is_not_counted_by_address(api, settings):
    settings.RATE_LIMIT_ANONYMOUS_PER_MINUTE = 1
    assert [poll(api).status_code for _ in range(3)] == [404] * 3


def test_the_forwarded_address_counts_only_behind_a_trusted_proxy(client, settings):
    settings.RATE_LIMIT_ANONYMOUS_PER_MINUTE = 1
    path = f"/v1/api/transcription/{uuid.uuid4()}"

    def get(forwarded):
        return client.get(path, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded).status_code

    assert [get("198.51.100.1"), get("198.51.100.2")] == [401, 429]  # both are the proxy's address
    settings.TRUST_PROXY_HEADERS = True
    # 10.0.0.2 is not one of TRUSTED_PROXIES (loopback by default): its header is the client's own.
    assert get("198.51.100.9") == 429
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    # The last entry is what our proxy saw; the ones before it are whatever the client wrote.
    assert [get("198.51.100.3"), get("1.2.3.4, 198.51.100.4"), get("5.6.7.8, 198.51.100.4")] == [401, 401, 429]
    # A chain of our own proxies is skipped from the right; an entry that is no address ends the walk.
    assert [get("198.51.100.5, 10.0.0.9"), get("198.51.100.5, 10.1.2.3")] == [401, 429]
    assert get("198.51.100.6, not-an-address, 10.0.0.7") == 401  # counted as our proxy 10.0.0.7


def test_requests_go_through_uncounted_when_redis_is_down(settings):
    from config import shared_cache

    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    ratelimit.counter.cache_clear()
    shared_cache.connect.cache_clear()
    try:
        states = [ratelimit.hit("redis-down", ratelimit.JOBS) for _ in range(61)]
    finally:
        ratelimit.counter.cache_clear()
        shared_cache.connect.cache_clear()
    assert all(state.allowed for state in states)
