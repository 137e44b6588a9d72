"""Workers' claims on jobs, their heartbeat, and the sweeper that sends lost work again.

On the real PostgreSQL and Redis: the sweeper's re-queued tasks are read back from the broker's
queues. Killing real workers is in tests/e2e/test_killed_worker.py.
"""

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from tests.factories import JobFactory
from tests.support import queued, wait_until
from transcription.models import Job
from transcription.stages import burning
from transcription.upkeep import sweeper
from transcription.writes import services
from transcription.writes.claims import JobClaim

pytestmark = pytest.mark.django_db


def _job(account, state, *, minutes_ago=30, lease=None, attempts=0, type="burned"):
    job = JobFactory(account=account, type=type, state=state, attempts=attempts)
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(minutes=minutes_ago), lease_until=lease)
    return Job.objects.get(pk=job.pk)


def test_a_job_whose_worker_is_alive_is_never_swept(account, broker):
    working = _job(account, "burning", minutes_ago=600, lease=timezone.now() + timedelta(seconds=90))
    swept = sweeper.sweep_stalled_jobs()
    assert working.id not in swept["requeued"] + swept["resent"] + swept["failed"]
    assert queued(broker) == []
    assert Job.objects.get(pk=working.pk).state == "burning"


def test_a_lapsed_claim_is_requeued_at_its_stage_at_once(account, broker):
    lapsed = timezone.now() - timedelta(seconds=5)
    burning = _job(account, "burning", minutes_ago=1, lease=lapsed)
    processing = _job(account, "processing", minutes_ago=1, lease=lapsed)
    downloading = _job(account, "downloading", minutes_ago=1, lease=lapsed)

    swept = sweeper.sweep_stalled_jobs()

    assert set(swept["requeued"]) == {burning.id, processing.id, downloading.id}
    assert sorted(queued(broker)) == sorted(
        [
            ("burn", "burn_job", str(burning.id)),
            ("asr", "transcribe_job", str(processing.id)),
            ("media", "start_job", str(downloading.id)),
        ]
    )
    for job in Job.objects.filter(pk__in=swept["requeued"]):
        assert job.attempts == 1 and job.lease_until is None, "free for the next worker; one attempt used"
    assert sweeper.sweep_stalled_jobs()["requeued"] == [], "re-queued once, not at every sweep"


def test_a_job_that_keeps_killing_its_worker_fails_and_is_refunded(account, broker):
    job = _job(
        account, "processing", lease=timezone.now() - timedelta(seconds=5), attempts=settings.STALLED_MAX_ATTEMPTS
    )
    swept = sweeper.sweep_stalled_jobs()
    assert swept["failed"] == [job.id]
    job.refresh_from_db()
    assert job.state == "failed" and job.error == sweeper.STALLED_ERROR
    assert queued(broker) == []


def test_a_job_waiting_in_a_queue_is_sent_again_but_never_failed(account, broker):
    """A backlog longer than STALLED_AFTER_SECONDS (or a broker that lost its messages) must not
    cost a job its attempts: its task is sent again, at most once per period."""
    waiting = _job(account, "waiting", minutes_ago=16, attempts=settings.STALLED_MAX_ATTEMPTS)
    handed_over = _job(account, "burning", minutes_ago=16)  # the speech stage ended; no burn worker free yet
    fresh = _job(account, "waiting", minutes_ago=1)

    swept = sweeper.sweep_stalled_jobs()

    assert set(swept["resent"]) == {waiting.id, handed_over.id} and swept["failed"] == []
    assert sorted(queued(broker)) == sorted(
        [("media", "start_job", str(waiting.id)), ("burn", "burn_job", str(handed_over.id))]
    )
    assert Job.objects.get(pk=waiting.pk).attempts == settings.STALLED_MAX_ATTEMPTS
    assert Job.objects.get(pk=fresh.pk).state == "waiting"
    assert sweeper.sweep_stalled_jobs()["resent"] == [], "at most once per STALLED_AFTER_SECONDS"
    again = sweeper.sweep_stalled_jobs(now=timezone.now() + timedelta(seconds=settings.STALLED_AFTER_SECONDS + 1))
    assert set(again["resent"]) == {waiting.id, handed_over.id, fresh.id} and again["failed"] == []


def test_a_second_delivery_while_a_worker_runs_the_job_does_nothing(account, tmp_path):
    job = _job(account, "burning", lease=None)
    assert services.job_claim(job.id, 60), "the first worker claims it"
    work = tmp_path / "work"
    scratch = work / str(job.id) / "burned.mp4"
    scratch.parent.mkdir(parents=True)
    scratch.write_bytes(b"half an encode")
    with override_settings(WORK_DIR=work):
        assert burning.run_burn_stage(job.id) is False
    assert scratch.read_bytes() == b"half an encode", "the running worker's files are left alone"
    job.refresh_from_db()
    assert job.state == "burning" and job.lease_until > timezone.now()


def test_a_claim_is_released_when_the_stage_ends(account):
    job = _job(account, "burning", lease=None)  # no source video in storage: the stage fails at once
    burning.run_burn_stage(job.id)
    job.refresh_from_db()
    assert job.state == "failed" and job.lease_until is None


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_renews_the_claim_while_the_stage_runs(account):
    job = _job(account, "burning", lease=None)
    with override_settings(WORKER_HEARTBEAT_SECONDS=0.2):
        claim = JobClaim(job.id)
        assert claim.take()
        first = Job.objects.get(pk=job.pk).lease_until

        def renewed_claim():
            lease = Job.objects.get(pk=job.pk).lease_until
            return lease if lease > first else None

        with claim:
            renewed = wait_until(renewed_claim, "renewed claim while the stage runs", timeout=5)
        assert renewed > first
        assert Job.objects.get(pk=job.pk).lease_until == claim.until, "the last beat is the claim the worker holds"
        claim.release()
    assert Job.objects.get(pk=job.pk).lease_until is None, "released"


@pytest.mark.django_db(transaction=True)
def test_a_worker_whose_claim_was_taken_over_leaves_the_new_claim_alone(account):
    """A worker that stalled past its claim (a long pause, a database outage) and comes back must
    neither extend nor drop the claim of the worker the sweeper gave its job to."""
    job = _job(account, "burning", lease=None)
    with override_settings(WORKER_HEARTBEAT_SECONDS=0.2):
        stalled = JobClaim(job.id)
        assert stalled.take()
        Job.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))  # it lapsed
        other = JobClaim(job.id)
        assert other.take(), "the next worker takes the lapsed claim"
        with stalled:
            wait_until(
                lambda: not stalled.thread.is_alive(), "the stalled worker's heartbeat stopping on its own", timeout=5
            )
        stalled.release()
    assert Job.objects.get(pk=job.pk).lease_until == other.until, "neither renewed nor released by the old holder"


def test_beat_sends_the_sweep_to_a_queue_no_download_holds_up(broker):
    """On `media` the sweep waited behind every queued download (the fleet test saw a dead worker's
    job re-queued 28 s after its claim lapsed, with sweeps every 5 s); `hooks` runs only short tasks."""
    from celery import current_app

    sweep = settings.CELERY_BEAT_SCHEDULE["sweep-stalled-jobs"]["task"]
    current_app.send_task(sweep)
    [message] = broker.lrange("hooks", 0, -1)
    assert json.loads(message)["headers"]["task"] == sweep
    assert broker.llen("media") == 0


def test_a_job_a_lost_redis_forgot_is_put_back_in_its_line_and_a_turn_takes_it(account, broker):
    from transcription.scheduling import dispatch, lines

    waiting = _job(account, "waiting", minutes_ago=30)  # its line entry and its turn are gone
    assert lines.place(waiting.id) is None
    assert sweeper.sweep_stalled_jobs()["resent"] == [waiting.id]
    assert lines.place(waiting.id) == 1 and queued(broker) == [("media", "start_job", str(waiting.id))]
    taken = dispatch.job_take(dispatch.START_JOB, str(waiting.id), turn=True)
    assert taken is not None and taken.job_id == str(waiting.id)
    assert dispatch.job_take(dispatch.START_JOB, str(waiting.id), turn=True) is None, "a second delivery: nothing"


def test_a_turn_drops_jobs_that_ended_or_run_elsewhere_and_takes_the_next(account, broker):
    from transcription.scheduling import dispatch, lines

    ended = _job(account, "failed")
    running = _job(account, "waiting", lease=timezone.now() + timedelta(seconds=90))
    next_one = _job(account, "waiting")
    for job in (ended, running, next_one):  # in this order: one account's jobs
        lines.join("media", job.id, job.account_id)
    taken = dispatch.job_take(dispatch.START_JOB, str(ended.id), turn=True)
    assert taken is not None and taken.job_id == str(next_one.id)
    assert lines.stats(top=5)[0].waiting == 0


def test_a_reburn_given_up_ends_the_reburn_with_a_refund_never_the_job(account, broker):
    from billing.models import LedgerEntry
    from billing.selectors import account_balance
    from tests.factories import done_job_with_segments
    from transcription.writes import reburn_services

    job = done_job_with_segments(
        account, type="burned", burned_video="burned/x/video.mp4", timeline=[["done", "2026-01-01T00:00:00+00:00"]]
    )
    balance = account_balance(account.pk)
    assert reburn_services.reburn_start(job.id).state == "burning"
    assert account_balance(account.pk) == balance - 3 * 20
    lapsed = timezone.now() - timedelta(seconds=5)
    Job.objects.filter(pk=job.pk).update(lease_until=lapsed, attempts=settings.STALLED_MAX_ATTEMPTS)

    swept = sweeper.sweep_stalled_jobs()

    assert swept["failed"] == []
    ended = Job.objects.get(pk=job.pk)
    assert ended.state == "done" and ended.burned_video == "burned/x/video.mp4", "the video made before stays"
    assert ended.error.startswith("The subtitles could not be burned again (a burn worker was lost)")
    assert account_balance(account.pk) == balance, "the re-burn's minutes come back, and only they"
    assert not LedgerEntry.objects.filter(job_id=job.id, source="job").exists()


def test_a_retranslation_whose_message_was_lost_is_sent_again_once_per_period(account, broker):
    from tests.factories import done_job_with_segments
    from transcription.models import Translation

    job = done_job_with_segments(account, target_languages=["es"])
    Translation.objects.filter(job=job).update(
        state="translating", redo={"plan": [], "charged": 3}, updated_at=timezone.now() - timedelta(hours=1)
    )
    fresh = done_job_with_segments(account, target_languages=["es"])
    Translation.objects.filter(job=fresh).update(state="translating", redo={"plan": [], "charged": 3})

    swept = sweeper.sweep_stalled_jobs()

    assert swept["retranslations"] == [job.id], "one waiting for less than the period may still come"
    assert queued(broker) == [("asr", "retranslate_job", str(job.id))]
    assert sweeper.sweep_stalled_jobs()["retranslations"] == [], "sent once per period"
