"""Webhooks through a real Celery worker: jobs that really run (yt-dlp, ffmpeg, the speech model)
end and their events reach a receiver on 127.0.0.1, which checks every signature with the
standardwebhooks verifier; a receiver that is down is retried with the same webhook-id.

The worker retries after 0.5 s instead of 5 s, 5 min, ... (WEBHOOK_RETRY_SECONDS).
"""

import json

import pytest

from harness.processes import running_worker
from tests.support import wait_for_job
from tests.webhooks.support import fail_job, message_of, wait_for_message
from transcription.pipeline import fetch
from webhooks.models import Message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TEXT_FIELDS = {"txt", "srt", "webvtt"}


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_worker(
        tmp_path_factory.mktemp("hooks") / "worker.log",
        ALLOW_PRIVATE_URLS="true",
        WEBHOOK_RETRY_SECONDS="0.5,0.5,0.5",
        WEBHOOK_TIMEOUT_SECONDS="5",
    ) as process:
        yield process


def submit(api, url):
    response = api.post("/v1/api/transcribe", data=json.dumps({"url": url}), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["id"]


def test_a_job_that_runs_to_the_end_is_announced_with_job_done(worker, api, receiver, secret, media_server):
    job_id = submit(api, media_server.url("/files/speech.mp4"))
    [request] = receiver.wait_for(1, timeout=240)
    assert request.error is None, request.error
    assert request.payload["type"] == "job.done" and request.payload["data"]["id"] == job_id
    polled = api.get(f"/v1/api/transcription/{wait_for_job(job_id).id}").json()
    # CTranslate2's int8 kernels differ by CPU (AVX2, AVX-512): with AVX2 the base model hears "the quick round fox"
    assert polled["state"] == "done" and "lazy dog" in polled["txt"].lower()
    assert request.payload["data"] == {name: value for name, value in polled.items() if name not in TEXT_FIELDS}
    message = Message.objects.get(job_id=job_id)
    assert request.headers["webhook-id"] == message.webhook_id
    assert wait_for_message(message.id, lambda m: m.state == "delivered", "delivery").attempts.count() == 1


def test_a_job_that_fails_is_announced_with_job_failed(worker, api, receiver, secret, media_server):
    job_id = submit(api, media_server.url("/status/404"))
    [request] = receiver.wait_for(1, timeout=60)
    assert request.error is None, request.error
    assert request.payload["type"] == "job.failed" and request.payload["data"]["id"] == job_id
    assert request.payload["data"]["state"] == "failed" and request.payload["data"]["error"] == fetch.MSG_NOT_FOUND


def test_a_receiver_down_for_two_attempts_gets_the_third_with_the_same_id(worker, account, receiver, secret):
    receiver.script = [503, "drop"]
    message = message_of(fail_job(account))
    requests = receiver.wait_for(3)
    assert {request.headers["webhook-id"] for request in requests} == {message.webhook_id}
    assert all(request.payload == json.loads(message.body) for request in requests), "each attempt verifies"
    delivered = wait_for_message(message.id, lambda m: m.state == "delivered", "delivery")
    assert [attempt.outcome for attempt in delivered.attempts.all()] == [
        "HTTP 503",
        "The connection was closed without an answer.",
        "HTTP 200",
    ]
