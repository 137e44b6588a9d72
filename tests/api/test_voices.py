"""POST/GET/DELETE /v1/api/voices without a worker: what is stored, queued, listed and forgotten.
tests/e2e/test_voices.py runs the samples through a real worker."""

import json
import uuid

import numpy as np
from django.conf import settings

from billing.selectors import account_balance
from tests.support import queued
from transcription.models import Job, Voice
from transcription.pipeline.voice_print_model import VOICE_PRINT_MODEL
from transcription.writes import services, voice_services


def post(api, path, body):
    return api.post(path, data=json.dumps(body), content_type="application/json")


def test_a_voice_is_queued_as_a_sample_job_and_listed_while_it_is_read(
    api, account, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, "/v1/api/voices", {"name": "Alice", "url": "https://example.com/alice.mp4"})
    assert response.status_code == 200, response.json()
    assert response["X-RateLimit-Limit"] == str(settings.RATE_LIMIT_JOBS_PER_MINUTE), "a job request"
    body = response.json()
    assert set(body) == {"id", "name", "state"} and body["name"] == "Alice" and body["state"] == "processing"
    voice = Voice.objects.get(pk=body["id"])
    assert voice.account == account and voice.embedding is None
    assert voice.job.is_voice_sample and voice.job.url == "https://example.com/alice.mp4"
    assert voice.job.type == "transcript", "charged as a transcript of the sample"
    assert queued(broker) == [("media", "start_job", str(voice.job.id))]

    listed = api.get("/v1/api/voices")
    assert listed.status_code == 200
    assert listed["X-RateLimit-Limit"] == str(settings.RATE_LIMIT_POLLS_PER_MINUTE), "a poll"
    [entry] = listed.json()
    assert entry == {
        "id": body["id"],
        "name": "Alice",
        "state": "processing",
        "error": None,
        "seconds": None,
        "created_at": entry["created_at"],
    }


def test_the_list_says_ready_or_failed_with_the_reason(api, account, broker):
    ready = voice_services.voice_create(account, name="Alice", url="https://example.com/a.mp4")
    Job.objects.filter(pk=ready.job_id).update(duration=31)
    voice_services.voice_store(ready.job_id, np.ones(192, dtype=np.float32).tobytes(), VOICE_PRINT_MODEL)
    services.job_finish(ready.job_id)
    failed = voice_services.voice_create(account, name="Bob", url="https://example.com/b.mp4")
    services.job_fail(failed.job_id, "The sample holds 2 voices; a voice sample must hold one person's voice alone.")
    earlier = voice_services.voice_create(account, name="Carol", url="https://example.com/c.mp4")
    voice_services.voice_store(earlier.job_id, np.ones(256, dtype=np.float32).tobytes(), "resemblyzer-0.1.4")
    services.job_finish(earlier.job_id)
    listed = {entry["name"]: entry for entry in api.get("/v1/api/voices").json()}
    assert listed["Alice"]["state"] == "ready" and listed["Alice"]["seconds"] == 31 and listed["Alice"]["error"] is None
    assert listed["Bob"]["state"] == "failed" and listed["Bob"]["error"].startswith("The sample holds 2 voices")
    # enrolled before the encoder changed: its print names nobody now, and the list says so
    assert listed["Carol"]["state"] == "failed" and "earlier speaker model" in listed["Carol"]["error"]


def test_bad_requests_are_422s_naming_each_field(api, broker):
    response = post(api, "/v1/api/voices", {"name": "A<b>", "url": "not a url"})
    assert response.status_code == 422
    assert {tuple(entry["loc"]) for entry in response.json()["detail"]} == {("body", "name"), ("body", "url")}
    response = post(api, "/v1/api/voices", {})
    assert {tuple(entry["loc"]) for entry in response.json()["detail"]} == {("body", "name"), ("body", "url")}
    assert not Voice.objects.exists() and queued(broker) == []


def test_deleting_forgets_the_voice_and_stops_a_sample_still_read(api, account, broker):
    balance = account_balance(account.pk)
    voice = voice_services.voice_create(account, name="Alice", url="https://example.com/a.mp4")
    Job.objects.filter(pk=voice.job_id).update(duration=40, state="processing")
    services.job_charge(Job.objects.get(pk=voice.job_id))
    assert account_balance(account.pk) == balance - 40

    response = api.delete(f"/v1/api/voices/{voice.id}")
    assert response.status_code == 204 and response.content == b""
    assert not Voice.objects.filter(pk=voice.id).exists()
    job = Job.objects.get(pk=voice.job_id)
    assert job.state == "failed" and job.error == voice_services.VOICE_DELETED_ERROR
    assert account_balance(account.pk) == balance, "refunded"
    assert api.get("/v1/api/voices").json() == []
    assert api.delete(f"/v1/api/voices/{voice.id}").status_code == 404


def test_another_accounts_voices_are_neither_listed_nor_deleted(api, other_account, broker):
    theirs = voice_services.voice_create(other_account, name="Carol", url="https://example.com/c.mp4")
    assert api.get("/v1/api/voices").json() == []
    response = api.delete(f"/v1/api/voices/{theirs.id}")
    assert response.status_code == 404 and response.json() == {"detail": "No voice with that id on this account."}
    assert Voice.objects.filter(pk=theirs.id).exists()
    assert api.delete(f"/v1/api/voices/{uuid.uuid4()}").status_code == 404
    assert api.delete("/v1/api/voices/nope").json()["detail"][0]["loc"] == ["path", "id"]


def test_an_accounts_voices_go_with_the_account(db, broker):
    from tests.factories import AccountFactory

    account = AccountFactory()  # no ledger entries and no jobs left, which protect an account's row
    voice = voice_services.voice_create(account, name="Alice", url="https://example.com/a.mp4")
    voice.job.delete()
    account.delete()
    assert not Voice.objects.filter(pk=voice.pk).exists()


def test_a_failed_samples_job_is_not_retried_as_a_transcript(account, broker):
    import pytest

    voice = voice_services.voice_create(account, name="Alice", url="https://example.com/a.mp4")
    services.job_fail(voice.job_id, "The sample holds 2 voices; a voice sample must hold one person's voice alone.")
    with pytest.raises(ValueError, match="enrols the voice again"):
        services.job_retry(voice.job_id)
    assert Job.objects.count() == 1


def test_a_sample_may_be_an_upload_of_the_account(api, account, other_account, broker):
    from tests.factories import UploadFactory

    upload = UploadFactory(account=account, duration=30)
    response = post(api, "/v1/api/voices", {"name": "Alice", "upload_id": str(upload.id)})
    assert response.status_code == 200, response.json()
    voice = Voice.objects.get(pk=response.json()["id"])
    assert voice.job.upload_id == upload.id and voice.job.is_voice_sample
    foreign = UploadFactory(account=other_account)
    response = post(api, "/v1/api/voices", {"name": "Bob", "upload_id": str(foreign.id)})
    assert response.status_code == 404 and response.json() == {"detail": "No upload with that id on this account."}
    response = post(
        api, "/v1/api/voices", {"name": "Bob", "url": "https://example.com/b.mp4", "upload_id": str(upload.id)}
    )
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "upload_id"]
    response = post(api, "/v1/api/voices", {"name": "Bob", "language_code": "en", "url": "https://example.com/b.mp4"})
    assert response.status_code == 200, "a transcript's options are not the sample's: ignored as any unknown field"
