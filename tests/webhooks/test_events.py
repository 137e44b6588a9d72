"""Which events a job's end records, what they carry, and that they commit with the job's end:
job.done / job.failed for every job, batch.done once, when the last job of a batch ends, even when
two jobs of the batch end at the same moment."""

import json
import threading

import pytest
from django.db import connection, connections, transaction

from tests.support import wait_until
from tests.webhooks.support import fail_job, message_of, new_job
from transcription.models import Batch, Translation
from transcription.storage.artifacts import unsign
from transcription.writes import services as job_services
from webhooks.models import Message

TEXT_FIELDS = {"txt", "srt", "webvtt"}


def without_text(document: dict) -> dict:
    """The poll answer less the long text fields, as events carry it."""
    return {
        **{name: value for name, value in document.items() if name not in TEXT_FIELDS},
        "translations": [{k: v for k, v in t.items() if k not in ("srt", "webvtt")} for t in document["translations"]],
    }


def files_named(document: dict) -> dict:
    """The document with each signed link replaced by the storage name it opens."""

    def name(link):
        return link and unsign(link.rsplit("/", 1)[1]).name

    return {
        **document,
        "burned_video_url": name(document["burned_video_url"]),
        "translations": [{**t, "burned_video_url": name(t["burned_video_url"])} for t in document["translations"]],
    }


@pytest.mark.django_db
def test_a_finished_job_is_sent_as_the_api_returns_it_without_its_texts(account, api, secret, settings):
    settings.PUBLIC_BASE_URL = "https://transcribe.example.org"
    job = new_job(account, type="burned", state="burning", duration=42)
    Translation.objects.create(
        job=job,
        language="Spanish",
        language_code="es",
        state="done",
        srt="1\n...",
        webvtt="WEBVTT",
        burned_video=f"burned/{job.id}/video.es.mp4",
    )
    job_services.job_finish(
        job.id,
        txt="[00:00:00] Speaker 1: Hello.",
        srt="1\n00:00:00,000 --> 00:00:01,000\nHello.\n",
        webvtt="WEBVTT\n",
        burned_video=f"burned/{job.id}/video.mp4",
    )
    event = json.loads(message_of(job).body)
    assert set(event) == {"type", "timestamp", "data"} and event["type"] == "job.done"
    assert event["timestamp"].endswith("Z")
    polled = api.get(f"/v1/api/transcription/{job.id}").json()
    assert polled["txt"] and polled["translations"][0]["srt"], "the poll has the texts"
    data = event["data"]
    assert not TEXT_FIELDS & set(data) and not {"srt", "webvtt"} & set(data["translations"][0])
    assert files_named(data) == files_named(without_text(polled))
    # Links are signed when made (so they differ by their time) and, outside a request, absolute
    # on PUBLIC_BASE_URL.
    assert data["burned_video_url"].startswith("https://transcribe.example.org/v1/files/")
    assert data["translations"][0]["burned_video_url"].startswith("https://transcribe.example.org/v1/files/")


@pytest.mark.django_db
def test_a_failed_job_is_sent_with_its_error(account, api, secret):
    job = fail_job(account, error="This video is private.")
    event = json.loads(message_of(job).body)
    assert event["type"] == "job.failed" and event["data"]["error"] == "This video is private."
    assert event["data"] == without_text(api.get(f"/v1/api/transcription/{job.id}").json())


@pytest.mark.django_db
def test_nothing_is_recorded_without_a_webhook(account, other_account, secret):
    assert not Message.objects.filter(job=fail_job(other_account)).exists()


@pytest.mark.django_db
def test_the_event_commits_with_the_end_of_the_job_or_not_at_all(account, secret):
    job = new_job(account)
    with pytest.raises(RuntimeError), transaction.atomic():
        job_services.job_fail(job.id, "boom")
        raise RuntimeError("the worker's transaction broke after the job ended")
    job.refresh_from_db()
    assert job.state == "processing" and not Message.objects.filter(job=job).exists()


@pytest.mark.django_db
def test_a_job_that_ends_twice_records_one_event(account, secret):
    job = new_job(account)
    assert job_services.job_fail(job.id, "first")
    assert job_services.job_fail(job.id, "late failure of a retried task") is None
    assert Message.objects.filter(job=job).count() == 1


def batch_of(account, size: int) -> Batch:
    batch = Batch.objects.create(
        account=account, url="https://example.com/playlist", title="Talks", total=size, type="transcript"
    )
    for position in range(size):
        new_job(account, batch=batch, position=position, url=f"https://example.com/{position}.mp4")
    return batch


@pytest.mark.django_db
def test_batch_done_comes_once_with_the_last_job_as_the_api_returns_the_batch(account, api, secret):
    batch = batch_of(account, 3)
    first, second, third = batch.jobs.order_by("position")
    job_services.job_finish(first.id, txt="one")
    job_services.job_fail(second.id, "This video has been removed.")
    assert not Message.objects.filter(event_type="batch.done").exists(), "one job still runs"
    job_services.job_finish(third.id, txt="three")
    [message] = Message.objects.filter(event_type="batch.done")
    event = json.loads(message.body)
    assert message.batch == batch and event["type"] == "batch.done"
    assert event["data"] == api.get(f"/v1/api/batch/{batch.id}").json()
    assert [item["state"] for item in event["data"]["items"]] == ["done", "failed", "done"]
    assert Message.objects.filter(event_type__startswith="job.").count() == 3, "each job has its own event too"


def _blocked_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_two_jobs_of_a_batch_ending_at_the_same_moment_send_batch_done_once(account, secret):
    """The worst interleaving, forced: both jobs are written `done`, neither transaction has
    committed, and both are about to check whether the batch is over. Without the batch lock each
    would see the other still running and nobody would send batch.done."""
    first, second = batch_of(account, 2).jobs.order_by("position")
    first_written, may_commit = threading.Event(), threading.Event()
    errors = []

    def end(job_id, hold: bool):
        try:
            with transaction.atomic():
                job_services.job_finish(job_id, txt="text")
                if hold:
                    first_written.set()
                    assert may_commit.wait(30)
        except Exception as error:  # noqa: BLE001 - reported by the test thread
            errors.append(error)
        finally:
            connections.close_all()

    holder = threading.Thread(target=end, args=(first.id, True))
    holder.start()
    assert first_written.wait(30)
    racer = threading.Thread(target=end, args=(second.id, False))
    racer.start()
    try:
        # The second job's end runs until it waits for the batch row (or, without the lock, to its end).
        wait_until(lambda: not racer.is_alive() or _blocked_on_a_lock(), "racer blocked or ended", timeout=30)
    finally:
        may_commit.set()
        holder.join(30), racer.join(30)
    assert not errors
    assert Message.objects.filter(event_type="batch.done").count() == 1, "the last job to end sends batch.done"
    assert Message.objects.filter(event_type="job.done").count() == 2
