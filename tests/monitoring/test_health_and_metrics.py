"""/health for load balancers and /metrics for Prometheus, on the real PostgreSQL and Redis."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from config.shared_cache import CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS
from tests.factories import JobFactory, TranslationFactory
from tests.support import ends_within

# Nothing listens on port 1 of this machine: a Redis that is really down.
STOPPED_REDIS = "redis://127.0.0.1:1/0"


def samples(response) -> dict[tuple, float]:
    """{(sample name, (label, value), ...): value} of a Prometheus text answer."""
    return {
        (sample.name, *sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


@pytest.mark.django_db
def test_health_answers_ok_without_a_token(client):
    with ends_within(CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS, "/health"):
        response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "redis": "ok"}


@pytest.mark.django_db
def test_health_says_503_within_its_timeouts_when_redis_is_down(client):
    with (
        override_settings(REDIS_URL=STOPPED_REDIS),
        ends_within(CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS, "/health"),
    ):
        response = client.get("/health")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "ok", "redis": "unreachable"}


@pytest.mark.django_db
def test_metrics_are_for_the_operator_only(client):
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 403
    with override_settings(METRICS_TOKEN="s3cret-scrape-token"):
        assert client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
        allowed = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    assert allowed.status_code == 200
    assert allowed["Content-Type"].startswith("text/plain; version=")
    assert client.get("/metrics").status_code == 200  # the test client comes from 127.0.0.1


@pytest.mark.django_db
def test_metrics_count_queues_jobs_failures_and_stage_times(client, broker):
    now = timezone.now()
    JobFactory.create_batch(2, state="waiting")
    JobFactory(state="processing", type="subtitles")
    JobFactory(state="failed", failure_reason="source", error="The video could not be found.")
    JobFactory(state="failed", failure_reason="stalled", error="…")
    done = JobFactory(
        state="done",
        timeline=[
            ["waiting", (now - timedelta(seconds=100)).isoformat()],
            ["downloading", (now - timedelta(seconds=90)).isoformat()],
            ["processing", (now - timedelta(seconds=60)).isoformat()],
            ["done", now.isoformat()],
        ],
    )
    TranslationFactory(job=done, state="failed", language_code="fr", language="French")
    broker.rpush("asr", "a message", "another")

    figures = samples(client.get("/metrics"))

    assert figures[("transcription_queue_messages", ("queue", "asr"))] == 2
    assert figures[("transcription_queue_messages", ("queue", "media"))] == 0
    assert figures[("transcription_broker_up",)] == 1
    assert figures[("transcription_jobs", ("state", "waiting"), ("type", "transcript"))] == 2
    assert figures[("transcription_jobs", ("state", "processing"), ("type", "subtitles"))] == 1
    assert figures[("transcription_jobs", ("state", "burning"), ("type", "burned"))] == 0
    assert figures[("transcription_job_failures_total", ("reason", "source"))] == 1
    assert figures[("transcription_job_failures_total", ("reason", "stalled"))] == 1
    assert figures[("transcription_job_failures_total", ("reason", "balance"))] == 0
    assert figures[("transcription_stage_seconds", ("quantile", "1.0"), ("stage", "processing"))] == 60
    assert figures[("transcription_stage_seconds", ("quantile", "0.5"), ("stage", "downloading"))] == 30
    assert figures[("transcription_stage_samples", ("stage", "waiting"))] == 1
    assert figures[("transcription_translation_failures_total", ("language", "fr"))] == 1
    assert figures[("transcription_webhook_failed_attempts_total",)] == 0


@pytest.mark.django_db
def test_metrics_count_the_chunks_of_long_jobs_waiting_claimed_and_lapsed(client):
    from transcription.models import RecognitionChunk

    now = timezone.now()
    running, ended = JobFactory(state="processing"), JobFactory(state="failed")
    for index, (done, lease) in enumerate(
        [
            (False, None),  # waiting
            (False, None),
            (False, now + timedelta(seconds=60)),  # claimed
            (False, now - timedelta(seconds=5)),  # lapsed: its worker died
            (True, now - timedelta(seconds=5)),  # recognised: none of them
        ]
    ):
        RecognitionChunk.objects.create(
            job=running, index=index, start=index * 180, end=index * 180 + 180, done=done, lease_until=lease
        )
    RecognitionChunk.objects.create(job=ended, index=0, start=0, end=180)  # a failed job's: not waiting for anyone

    figures = samples(client.get("/metrics"))

    assert figures[("transcription_recognition_chunks", ("state", "waiting"))] == 2
    assert figures[("transcription_recognition_chunks", ("state", "claimed"))] == 1
    assert figures[("transcription_recognition_chunks", ("state", "lapsed"))] == 1


@pytest.mark.django_db
def test_metrics_still_answer_from_postgresql_when_the_broker_is_down(client):
    with override_settings(CELERY_BROKER_URL=STOPPED_REDIS):
        response = client.get("/metrics")
    assert response.status_code == 200
    figures = samples(response)
    assert figures[("transcription_broker_up",)] == 0
    assert ("transcription_jobs", ("state", "done"), ("type", "transcript")) in figures


@pytest.mark.django_db
def test_metrics_show_each_lines_depth_and_wait_and_its_busiest_accounts(client, broker):
    from monitoring import metrics
    from transcription.scheduling import lines

    first = JobFactory(state="waiting")
    playlist = [first, *JobFactory.create_batch(2, state="waiting", account=first.account)]
    single = JobFactory(state="uploading")
    for job in [*playlist, single]:
        lines.join("media", job.id, job.account_id)
    lines.join("asr", single.id, single.account_id)
    original_top, metrics.TOP_ACCOUNTS = metrics.TOP_ACCOUNTS, 1
    try:
        figures = samples(client.get("/metrics"))
    finally:
        metrics.TOP_ACCOUNTS = original_top

    assert figures[("transcription_lines_up",)] == 1
    assert figures[("transcription_waiting_jobs", ("queue", "media"))] == 4
    assert figures[("transcription_waiting_jobs", ("queue", "asr"))] == 1
    assert figures[("transcription_waiting_jobs", ("queue", "burn"))] == 0
    assert 0 <= figures[("transcription_waiting_seconds", ("queue", "media"))] < 60
    assert figures[("transcription_waiting_seconds", ("queue", "burn"))] == 0
    playlist_account = ("account", str(first.account_id))
    jobs_shown = {
        tuple(labels): value
        for (name, *labels), value in figures.items()
        if name == "transcription_account_waiting_jobs"
    }
    assert jobs_shown == {
        (playlist_account, ("queue", "media")): 3,  # the busiest account only (TOP_ACCOUNTS)
        (("account", str(single.account_id)), ("queue", "asr")): 1,
    }
    assert 0 <= figures[("transcription_account_waiting_seconds", playlist_account, ("queue", "media"))] < 60
    assert lines.take("media") is not None
    assert samples(client.get("/metrics"))[("transcription_waiting_jobs", ("queue", "media"))] == 3
