"""Under the production server, polls the Redis script can answer are answered in the event loop
(transcription.api.doors.poll_front), Django running inline with the script's answer. A client must
not tell it from the thread-pool path: same bytes, same headers, one count per answered poll,
the same refusals; and it must never touch PostgreSQL (Django refuses database calls made from a
running event loop, so a poll that tried would not be a 200 here)."""

import json
import urllib.request

import pytest
import redis

from accounts.services import token_issue, token_revoke
from harness.processes import running_web
from tests.front_lane import Front
from transcription import states
from transcription.api.front import ratelimit
from transcription.events import poll_cache
from transcription.writes import services


def queue(api) -> str:
    response = api.post(
        "/v1/api/subtitles",
        data=json.dumps({"url": "https://e.com/v", "target_languages": ["es", "fr"]}),
        content_type="application/json",
    )
    return response.json()["id"]


def finish(job_id: str) -> None:
    services.job_advance(job_id, states.PROCESSING)
    services.job_advance(job_id, states.ALIGNING, txt="Hello there.", srt="1\n00:00:00,000 --> 00:00:01,000\nHi.\n")
    services.job_finish(job_id)


@pytest.fixture
def front():
    return Front()


def test_a_cached_poll_is_answered_in_the_event_loop_as_the_drf_view_answers_it(api, token, front):
    job_id = queue(api)
    finish(job_id)
    url = f"/v1/api/transcription/{job_id}"
    first = api.get(url)  # the DRF view: reads the database, caches the answer
    statuses, headers, bodies = zip(*(front.get(url, token) for _ in range(2)))
    slow = api.get(url + "?format=json")  # negotiated by the DRF view
    assert front.passed_on == []  # both answered by the front
    assert statuses == (200, 200) and bodies[0] == bodies[1] == slow.content == first.content
    assert [h["x-ratelimit-remaining"] for h in headers] == ["298", "297"]
    assert slow["X-RateLimit-Remaining"] == "296"  # one count per poll, wherever it was answered
    per_request = ("x-ratelimit-remaining", "x-request-id")
    expected = {name.lower(): value for name, value in slow.items() if name.lower() not in per_request}
    assert {name: value for name, value in headers[1].items() if name not in per_request} == expected
    assert headers[0]["x-request-id"] != headers[1]["x-request-id"]  # each request its own id
    assert "content-security-policy" in expected and expected["x-frame-options"] == "DENY"  # the middleware ran


def test_a_host_this_service_does_not_serve_is_refused_and_not_counted(api, token, front):
    url = f"/v1/api/transcription/{queue(api)}"
    api.get(url)
    assert front.get(url, token)[1]["x-ratelimit-remaining"] == "298"
    refused = front.get(url, token, Host="evil.example")
    assert refused[0] == 400 and front.passed_on == []
    assert front.get(url, token)[1]["x-ratelimit-remaining"] == "297"  # the refused poll's count taken back


def test_polls_the_script_cannot_answer_go_to_the_thread_pool_uncounted(api, account, other_account, front, settings):
    url = f"/v1/api/transcription/{queue(api)}"
    never_polled = f"/v1/api/transcription/{queue(api)}"
    poll_cache.forget(never_polled.rsplit("/", 1)[1])
    api.get(url)  # cached now, and the token too
    token = api.defaults["HTTP_AUTHORIZATION"].split()[1]
    other = token_issue(other_account)
    api.get(url, HTTP_AUTHORIZATION=f"Bearer {other}")  # the other token cached (a 404, counted on that account)
    passed = [
        front.get(never_polled, token),
        front.get(url, other),  # another account's job: the DRF view's 404
        front.get(url, token, query="format=json"),
        front.get(url, token, Accept="text/html"),
        front.get(url, "not-a-token"),
        front.get(url + "/", token),
        front.get("/v1/api/transcription/not-a-uuid", token),
    ]
    assert [status for status, _, _ in passed] == [599] * 7 and len(front.passed_on) == 7
    counters = redis.Redis.from_url(settings.REDIS_URL)
    assert counters.zcard(ratelimit.account_key(account.pk, ratelimit.POLLS)) == 1  # api.get's own
    settings.RATE_LIMIT_POLLS_PER_MINUTE = 2
    assert front.get(url, token)[0] == 200
    assert front.get(url, token)[0] == 599  # over the limit: the DRF view's 429
    token_revoke(account)
    assert front.get(url, token)[0] == 599  # revoked: the token entry is gone at once
    assert counters.zcard(ratelimit.account_key(account.pk, ratelimit.POLLS)) == 2


@pytest.mark.django_db(transaction=True)
def test_the_production_server_answers_cached_polls_with_the_drf_views_bytes_and_headers(client, tmp_path):
    from accounts.services import account_create

    token = token_issue(account_create("front@example.com"))
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    job_id = queue(client)
    finish(job_id)

    def get(base, query="", host=None):
        request = urllib.request.Request(f"{base}/v1/api/transcription/{job_id}{query}")
        request.add_header("Authorization", f"Bearer {token}")
        if host:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    with running_web(tmp_path / "web.log") as base:
        answers = [get(base) for _ in range(3)]  # the first caches the answer, the rest from the front
        slow = get(base, "?format=json")
        refused = get(base, host="evil.example")
        after = get(base)
    assert [a[0] for a in answers] == [200, 200, 200] and slow[0] == 200 and refused[0] == 400
    assert answers[1][2] == answers[2][2] == slow[2] and json.loads(slow[2])["state"] == "done"

    def comparable(headers):
        return {
            name.lower(): value
            for name, value in headers.items()
            if name.lower() not in ("date", "x-ratelimit-remaining", "x-request-id")
        }

    assert comparable(answers[2][1]) == comparable(slow[1])
    remaining = [int(a[1]["x-ratelimit-remaining"]) for a in (*answers, slow, after)]
    assert remaining == [299, 298, 297, 296, 295]  # the refused Host counted nothing
