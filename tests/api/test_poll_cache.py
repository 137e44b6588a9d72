"""Polls are served from a cache; every write to a job or its translations must show at once."""

import json

from accounts.services import token_revoke
from transcription import states
from transcription.models import Job
from transcription.writes import services


def queue(api):
    response = api.post(
        "/v1/api/subtitles",
        data=json.dumps({"url": "https://e.com/v", "target_languages": ["es"]}),
        content_type="application/json",
    )
    return response.json()["id"]


def poll(api, job_id):
    return api.get(f"/v1/api/transcription/{job_id}").json()


def test_every_kind_of_write_shows_in_the_next_poll(api):
    job_id = queue(api)
    assert poll(api, job_id)["state"] == "waiting"
    services.job_advance(job_id, states.PROCESSING)
    assert poll(api, job_id)["state"] == "processing"
    services.job_progress(job_id, 0.5)
    assert poll(api, job_id)["progress"] == states.progress_in(states.PROCESSING, 0.5)
    translation = Job.objects.get(pk=job_id).translations.get()
    services.translation_fail(translation.id, "No translation from en to es here.")
    assert poll(api, job_id)["translations"][0]["error"] == "No translation from en to es here."
    services.job_advance(job_id, states.ALIGNING, srt="1\n00:00:00,000 --> 00:00:01,000\nHi\n")
    services.job_finish(job_id)
    body = poll(api, job_id)
    assert body["state"] == "done" and body["srt"].startswith("1\n")


def test_a_cached_job_is_still_a_404_for_another_account(api, client, other_account):
    from accounts.services import token_issue

    job_id = queue(api)
    poll(api, job_id)  # now cached
    other = token_issue(other_account)
    response = client.get(f"/v1/api/transcription/{job_id}", HTTP_AUTHORIZATION=f"Bearer {other}")
    assert response.status_code == 404


def test_a_revoked_token_is_refused_even_right_after_a_cached_poll(api, account):
    job_id = queue(api)
    assert api.get(f"/v1/api/transcription/{job_id}").status_code == 200
    token_revoke(account)
    assert api.get(f"/v1/api/transcription/{job_id}").status_code == 401


def test_a_poll_that_read_the_job_before_a_write_cannot_cache_the_old_answer(api, monkeypatch):
    """The race bench/asr/pipeline.py met: a poll read the row (`aligning`), the job ended and its
    cached answer was deleted, then the poll cached what it had read: later polls saw `aligning`
    for ten minutes. Here the write lands between the poll's read of the row and its cache write."""
    from transcription.api.front import polls

    job_id = queue(api)
    services.job_advance(job_id, states.PROCESSING)
    real_document = polls.job_document

    def document_then_a_write_lands(job):
        document = real_document(job)  # the row as read: processing
        services.job_advance(job_id, states.ALIGNING, srt="1\n00:00:00,000 --> 00:00:01,000\nHi\n")
        services.job_finish(job_id)
        return document

    monkeypatch.setattr(polls, "job_document", document_then_a_write_lands)
    assert poll(api, job_id)["state"] == "processing"  # this poll answers what it read
    monkeypatch.setattr(polls, "job_document", real_document)
    assert poll(api, job_id)["state"] == "done"  # the next one is not served that from the cache


def test_an_unchanged_job_is_cached(api):
    from transcription.events import poll_cache

    job_id = queue(api)
    assert poll_cache.get(job_id)[0] is None
    poll(api, job_id)
    cached, _ = poll_cache.get(job_id)
    assert cached is not None and json.loads(cached.body)["state"] == "waiting"
