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

from transcription.api import ratelimit

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
    with mock.patch("transcription.api.ratelimit.time.time", return_value=time.time()):
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
