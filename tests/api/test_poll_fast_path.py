"""Polls of a cached job are answered in one Redis round trip (transcription.api.front.polls), in front
of the DRF view. What a client sees must not tell the two apart: same bytes, same headers, one
count per poll, the same refusals."""

import json
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone
from rest_framework.views import APIView

from accounts.models import ApiToken
from accounts.services import token_issue, token_revoke
from transcription import states
from transcription.models import Job
from transcription.storage.artifacts import unsign
from transcription.writes import services


def queue(api):
    response = api.post(
        "/v1/api/subtitles",
        data=json.dumps({"url": "https://e.com/v", "target_languages": ["es", "fr"]}),
        content_type="application/json",
    )
    return response.json()["id"]


@pytest.fixture
def drf_calls():
    """How many requests reached a DRF view (the spy calls the real dispatch)."""
    with mock.patch.object(APIView, "dispatch", autospec=True, side_effect=APIView.dispatch) as spy:
        yield spy


def finished_job(api):
    job_id = queue(api)
    services.job_advance(job_id, states.PROCESSING)
    services.job_advance(
        job_id, states.ALIGNING, txt="Hello there.", srt="1\n00:00:00,000 --> 00:00:01,000\nHello — “there”\u2028.\n"
    )
    services.job_finish(job_id)
    return job_id


def test_a_cached_poll_answers_the_bytes_and_headers_of_the_drf_view(api, drf_calls):
    job_id = finished_job(api)
    url = f"/v1/api/transcription/{job_id}"
    first = api.get(url)  # not cached yet: the DRF view reads the database and caches the answer
    calls = drf_calls.call_count
    fast = api.get(url)
    assert drf_calls.call_count == calls  # answered from the cache, no DRF view
    slow = api.get(url + "?format=json")  # ?format= is negotiated by the DRF view
    assert drf_calls.call_count == calls + 1
    assert first.status_code == fast.status_code == slow.status_code == 200
    assert fast.content == slow.content == first.content
    assert fast.json()["srt"].endswith("\u2028.\n") and b"\\u2028" in fast.content
    assert [first["X-RateLimit-Remaining"], fast["X-RateLimit-Remaining"], slow["X-RateLimit-Remaining"]] == [
        "299",
        "298",
        "297",
    ]
    per_request = ("X-RateLimit-Remaining", "X-Request-ID")
    headers = {name: value for name, value in slow.items() if name not in per_request}
    assert {name: value for name, value in fast.items() if name not in per_request} == headers
    assert fast["X-Request-ID"] != slow["X-Request-ID"]
    assert list(fast.headers) == list(slow.headers)
    assert fast["Content-Type"] == "application/json" and fast["Allow"] == "GET, HEAD, OPTIONS"


def test_a_cached_answer_with_burned_videos_gets_fresh_signed_links(api, drf_calls):
    job_id = finished_job(api)
    Job.objects.filter(pk=job_id).update(burned_video="burned/video.mp4")
    translation = Job.objects.get(pk=job_id).translations.order_by("position").first()
    translation.burned_video = "burned/video-es.mp4"
    translation.save()  # a save: the cached answer is forgotten (the update above bypasses it)
    url = f"/v1/api/transcription/{job_id}"
    slow = api.get(url).json()
    calls = drf_calls.call_count
    fast = api.get(url).json()
    assert drf_calls.call_count == calls
    for body in (slow, fast):
        link = body["burned_video_url"]
        assert (
            link.startswith("http://testserver/") and unsign(link.rstrip("/").split("/")[-1]).name == "burned/video.mp4"
        )
        assert (
            unsign(body["translations"][0]["burned_video_url"].rstrip("/").split("/")[-1]).name == "burned/video-es.mp4"
        )

    def without_links(body):
        return {**body, "burned_video_url": None, "translations": [t["language"] for t in body["translations"]]}

    assert without_links(fast) == without_links(slow)


def test_a_revoked_token_is_refused_on_the_next_poll_of_a_cached_job(api, account, drf_calls):
    url = f"/v1/api/transcription/{queue(api)}"
    api.get(url)
    calls = drf_calls.call_count
    assert api.get(url).status_code == 200 and drf_calls.call_count == calls  # from the cache
    token_revoke(account)
    refused = api.get(url)
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Bearer"
    assert refused.json() == {"detail": "Invalid or revoked API token."}


def test_a_replaced_token_stops_working_at_once(api, account):
    url = f"/v1/api/transcription/{queue(api)}"
    assert api.get(url).status_code == 200 and api.get(url).status_code == 200
    new = token_issue(account)
    assert api.get(url).status_code == 401
    assert api.get(url, HTTP_AUTHORIZATION=f"Bearer {new}").status_code == 200


def test_another_accounts_cached_job_is_a_404_counted_once(api, client, other_account):
    url = f"/v1/api/transcription/{queue(api)}"
    api.get(url)  # cached now
    other = token_issue(other_account)
    answers = [client.get(url, HTTP_AUTHORIZATION=f"Bearer {other}") for _ in range(2)]
    assert [a.status_code for a in answers] == [404, 404]
    assert answers[1].json() == {"detail": "No job with that id on this account."}
    assert [a["X-RateLimit-Remaining"] for a in answers] == ["299", "298"]


def test_the_limit_holds_exactly_on_cached_polls(api, settings):
    settings.RATE_LIMIT_POLLS_PER_MINUTE = 5
    url = f"/v1/api/transcription/{queue(api)}"
    answers = [api.get(url) for _ in range(7)]
    assert [a.status_code for a in answers] == [200] * 5 + [429] * 2
    assert [a["X-RateLimit-Remaining"] for a in answers] == ["4", "3", "2", "1", "0", "0", "0"]
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    assert answers[-1].json()["detail"].startswith("Rate limit exceeded")


def test_a_token_not_checked_for_a_minute_goes_to_the_database(api, token):
    url = f"/v1/api/transcription/{queue(api)}"
    api.get(url)
    long_ago = timezone.now() - timedelta(minutes=5)
    ApiToken.objects.update(last_used_at=long_ago)
    from accounts.authentication import encode_cached_token, token_cache_key
    from accounts.tokens import token_digest
    from config import shared_cache

    digest = token_digest(token)
    account_id = ApiToken.objects.get().account_id
    key = shared_cache.full_key(token_cache_key(digest))
    shared_cache.client().set(
        key, encode_cached_token(account_id, long_ago, ApiToken.objects.get().account.user_id), ex=300
    )  # checked long ago
    assert api.get(url).status_code == 200
    assert ApiToken.objects.get().last_used_at > long_ago  # checked (and noted) in the database


def test_an_accept_header_other_than_json_is_negotiated_as_before(api):
    url = f"/v1/api/transcription/{queue(api)}"
    api.get(url)
    assert api.get(url, HTTP_ACCEPT="text/html").status_code == 406
    indented = api.get(url, HTTP_ACCEPT="application/json; indent=2")
    assert indented.status_code == 200 and indented.content.startswith(b"{\n  ")


def test_a_web_process_that_held_an_older_answer_serves_the_new_one(api, drf_calls):
    url = f"/v1/api/transcription/{queue(api)}"
    assert [api.get(url).json()["state"] for _ in range(3)] == ["waiting"] * 3  # held in this process now
    services.job_advance(url.rsplit("/", 1)[1], states.PROCESSING)
    services.job_progress(url.rsplit("/", 1)[1], 0.5)  # a queryset update: forgotten explicitly
    calls = drf_calls.call_count
    answers = [api.get(url).json() for _ in range(3)]
    assert drf_calls.call_count == calls + 1  # the first read the database, the others the cache
    assert {a["state"] for a in answers} == {"processing"}
    assert {a["progress"] for a in answers} == {states.progress_in(states.PROCESSING, 0.5)}


def test_a_waiting_jobs_place_in_line_is_the_same_header_on_both_lanes(
    api, client, other_account, broker, drf_calls, django_capture_on_commit_callbacks
):
    from accounts.services import token_issue

    other = f"Bearer {token_issue(other_account)}"
    with django_capture_on_commit_callbacks(execute=True):  # queued: in the media line
        playlist = [queue(api) for _ in range(3)]
        single = client.post(
            "/v1/api/subtitles",
            data=json.dumps({"url": "https://e.com/w"}),
            content_type="application/json",
            HTTP_AUTHORIZATION=other,
        ).json()["id"]
    url = f"/v1/api/transcription/{playlist[2]}"
    slow = api.get(url)  # not cached yet: the DRF view
    calls = drf_calls.call_count
    fast = api.get(url)
    assert drf_calls.call_count == calls  # the cached answer
    assert slow["X-Queue-Position"] == fast["X-Queue-Position"] == "4"  # behind the other account's turn
    assert list(fast.headers) == list(slow.headers)
    single_place = client.get(f"/v1/api/transcription/{single}", HTTP_AUTHORIZATION=other)["X-Queue-Position"]
    assert single_place in ("1", "2")  # in the first round, beside the playlist's first job
    done = finished_job(api)
    assert "X-Queue-Position" not in api.get(f"/v1/api/transcription/{done}")
    assert "X-Queue-Position" not in api.get(f"/v1/api/transcription/{done}")
