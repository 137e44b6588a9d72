"""Support's job actions: cancel (fail + refund) and retry (a fresh job), as services and from the
admin; and the admin's time-per-stage table."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from audit.models import AuditEvent
from billing.models import LedgerEntry
from billing.selectors import account_balance
from tests.support import queued
from transcription import states
from transcription.admin import format_duration, stage_durations
from transcription.models import Job, Translation
from transcription.writes import services
from transcription.writes.services import job_charge

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/transcription/job/"


def charged_job(account, *, seconds=120, state=states.PROCESSING, **options):
    job = services.job_create(
        account, url="https://example.com/v.mp4", type=options.pop("type", "transcript"), **options
    )
    job.duration = seconds
    job.save()
    assert job_charge(job).ok
    Job.objects.filter(pk=job.pk).update(state=state, timeline=[*job.timeline, [state, datetime.now(UTC).isoformat()]])
    return job


def run_action(client, action, *jobs):
    response = client.post(CHANGELIST, {"action": action, "_selected_action": [j.pk for j in jobs]}, follow=True)
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


# --- cancel -----------------------------------------------------------------------------------------


def test_cancel_fails_a_running_job_and_refunds_its_charge(account, support_user):
    job = charged_job(account)
    assert account_balance(account.pk) == 600 - 120
    cancelled = services.job_cancel(job.id, support_user)
    assert cancelled.state == "failed" and cancelled.error == "Cancelled by support."
    refund = LedgerEntry.objects.get(job=job, kind="refund")
    assert refund.seconds == 120
    assert account_balance(account.pk) == 600
    event = AuditEvent.objects.get(action="job_cancelled")
    assert event.actor == support_user and event.account == account and str(job.id) in event.detail


def test_cancel_refunds_only_what_was_not_refunded_yet(account):
    job = charged_job(account, type="subtitles", target_languages=["Spanish"])
    assert LedgerEntry.objects.get(job=job, kind="charge").seconds == -240  # 120 s + one translation
    services.translation_fail(job.translations.get().pk, "no model")
    services.job_cancel(job.id)
    refunds = sorted(LedgerEntry.objects.filter(job=job, kind="refund").values_list("seconds", flat=True))
    assert refunds == [120, 120] and account_balance(account.pk) == 600


def test_cancel_of_a_waiting_uncharged_job_refunds_nothing(account):
    job = services.job_create(account, url="https://example.com/v.mp4", type="transcript")
    assert services.job_cancel(job.id).state == "failed"
    assert not LedgerEntry.objects.filter(job=job).exists()


def test_cancel_leaves_an_ended_job_alone(account):
    job = charged_job(account, state=states.DONE)
    assert services.job_cancel(job.id) is None
    job.refresh_from_db()
    assert job.state == "done" and not LedgerEntry.objects.filter(job=job, kind="refund").exists()
    assert not AuditEvent.objects.filter(action="job_cancelled").exists()


def test_the_cancel_action_says_what_it_refunded(support_client, account):
    running, done = charged_job(account), charged_job(account, state=states.DONE)
    messages = run_action(support_client, "cancel_jobs", running, done)
    assert any(f"Cancelled job {running.id}; refunded 2 minutes." == m for m in messages)
    assert any(str(done.id) in m and "already ended" in m for m in messages)
    running.refresh_from_db()
    assert running.state == "failed"


def test_a_worker_finishing_a_stage_after_cancel_cannot_revive_the_job(account):
    job = charged_job(account)
    services.job_cancel(job.id)
    with pytest.raises(states.InvalidTransition):
        services.job_advance(job.id, states.MERGING)


# --- retry --------------------------------------------------------------------------------------------


def test_retry_queues_a_fresh_job_with_the_same_options_and_the_failed_one_stays_failed(
    account, support_user, broker, django_capture_on_commit_callbacks
):
    job = services.job_create(
        account,
        url="https://example.com/v.mp4",
        type="subtitles",
        target_languages=["Spanish", "French"],
        language_code="en",
        verbatim=True,
        subtitle_format="webvtt",
    )
    services.job_fail(job.id, "The video could not be downloaded.")
    broker.delete("media")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        new = services.job_retry(job.id, support_user)
        assert queued(broker) == [], "nothing is queued before the commit"
    for callback in callbacks:
        callback()
    assert queued(broker) == [("media", "start_job", str(new.id))], "the new job is queued once committed"
    assert new.pk != job.pk and new.state == "waiting" and new.batch is None
    for name in ["url", "type", "language_code", "verbatim", "subtitle_format", "target_languages", "quality"]:
        assert getattr(new, name) == getattr(job, name), name
    assert list(Translation.objects.filter(job=new).values_list("language_code", flat=True)) == ["es", "fr"]
    job.refresh_from_db()
    assert job.state == "failed" and job.error == "The video could not be downloaded."
    event = AuditEvent.objects.get(action="job_retried")
    assert event.actor == support_user and str(new.id) in event.detail


def test_only_a_failed_job_is_retried(account):
    job = services.job_create(account, url="https://example.com/v.mp4", type="transcript")
    with pytest.raises(ValueError):
        services.job_retry(job.id)
    assert Job.objects.count() == 1


def test_the_retry_action_creates_a_new_job_and_says_the_old_one_stays_failed(support_client, account):
    failed = services.job_create(account, url="https://example.com/v.mp4", type="transcript")
    services.job_fail(failed.id, "boom")
    waiting = services.job_create(account, url="https://example.com/w.mp4", type="transcript")
    messages = run_action(support_client, "retry_jobs", failed, waiting)
    assert Job.objects.count() == 3
    new = Job.objects.exclude(pk__in=[failed.pk, waiting.pk]).get()
    assert any(f"Job {failed.id} stays failed" in m and str(new.id) in m for m in messages)
    assert any(str(waiting.id) in m and "not retried" in m for m in messages)


# --- the job page ---------------------------------------------------------------------------------


def test_stage_durations_come_from_the_timeline():
    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    timeline = [
        [s, (t0 + timedelta(seconds=offset)).isoformat()]
        for s, offset in [("waiting", 0), ("preparing", 2), ("downloading", 5), ("processing", 65), ("done", 200)]
    ]
    rows = stage_durations(timeline)
    assert [(state, seconds) for state, _, seconds, _ in rows] == [
        ("waiting", 2),
        ("preparing", 3),
        ("downloading", 60),
        ("processing", 135),
        ("done", None),
    ]
    running = stage_durations(timeline[:3], now=t0 + timedelta(seconds=35))
    assert running[-1][0] == "downloading" and running[-1][2] == 30 and running[-1][3] is True
    assert stage_durations([["bad"], None, ["waiting", "not a time"]]) == []
    assert [format_duration(s) for s in (0.4, 42, 185, 7620)] == ["0.4 s", "42 s", "3 min 05 s", "2 h 07 min"]


def test_the_job_page_shows_stages_error_and_translations_read_only(support_client, account):
    job = services.job_create(account, url="https://example.com/v.mp4", type="subtitles", target_languages=["German"])
    services.job_advance(job.id, states.PREPARING)
    services.job_fail(job.id, "The video is private.")
    page = support_client.get(reverse("admin:transcription_job_change", args=[job.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and page.context["has_change_permission"] is False
    assert "The video is private." in html and "Time per stage" in html and "<td>preparing</td>" in html
    assert "German" in html and 'name="translations-0-language"' not in html
    assert (
        support_client.post(reverse("admin:transcription_job_change", args=[job.pk]), {"state": "done"}).status_code
        == 403
    )


def test_the_job_list_filters_by_state_type_account_and_date(support_client, account, other_account):
    services.job_create(account, url="https://example.com/a", type="transcript")
    failed = services.job_create(other_account, url="https://example.com/b", type="subtitles")
    services.job_fail(failed.id, "nope")
    today = str(datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0))
    for query, count in [
        ({"state__exact": "failed"}, 1),
        ({"type__exact": "transcript"}, 1),
        ({"account__id__exact": other_account.pk}, 1),
        ({"created_at__gte": today}, 2),
        ({"q": str(failed.id)}, 1),
    ]:
        response = support_client.get(CHANGELIST, query)
        assert response.status_code == 200 and response.context["cl"].result_count == count, query


def test_cancelling_a_reburn_ends_the_reburn_not_the_job(support_client, account):
    from tests.factories import done_job_with_segments
    from transcription.writes import reburn_services

    job = done_job_with_segments(
        account, type="burned", burned_video="burned/x/video.mp4", timeline=[["done", "2026-01-01T00:00:00+00:00"]]
    )
    balance = account_balance(account.pk)
    reburn_services.reburn_start(job.id)
    messages = run_action(support_client, "cancel_jobs", job)
    assert messages == [f"Cancelled the re-burn of job {job.id}; its minutes were refunded."]
    job.refresh_from_db()
    assert job.state == "done" and job.burned_video == "burned/x/video.mp4"
    assert "cancelled by support" in job.error and account_balance(account.pk) == balance
    assert AuditEvent.objects.get(action="job_cancelled").detail == f"Re-burn of job {job.id} cancelled"
