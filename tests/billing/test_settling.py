"""A job's charge comes from the file's header; once its audio is decoded it is settled against
the length decoded (issue 41): the difference charged or refunded in one entry, the preview rule
where the balance falls short, and every later refund still exact."""

import pytest

from billing.models import LedgerEntry
from billing.selectors import account_balance
from tests.factories import JobFactory
from transcription.writes import services
from transcription.writes.services import job_charge, job_settle

pytestmark = pytest.mark.django_db


def charged_job(account, header_seconds, **options):
    job = JobFactory(account=account, duration=header_seconds, **options)
    assert job_charge(job).ok
    return job


def settlement(job):
    return LedgerEntry.objects.get(job=job, source="length")


def test_a_longer_audio_is_charged_the_difference_once(account):
    job = charged_job(account, 1)
    result = job_settle(job, 62)
    assert result.ok and result.charged_seconds == 61 and result.preview_minutes is None
    assert job_settle(job, 62).ok  # a retried stage settles nothing more
    job.refresh_from_db()
    assert job.duration == 62 and not job.is_preview
    entry = settlement(job)
    assert (entry.kind, entry.seconds) == ("charge", -61)
    assert entry.reason == "transcript: the audio decoded is 62 s long, the file said 1 s"
    assert account_balance(account.pk) == 600 - 62


def test_a_shorter_audio_is_refunded_the_difference_and_a_failure_later_returns_the_rest(account):
    job = charged_job(account, 300, type="subtitles", target_languages=["es"])  # 2 x length
    assert job_settle(job, 100).charged_seconds == -400
    assert (settlement(job).kind, settlement(job).seconds) == ("refund", 400)
    assert account_balance(account.pk) == 600 - 200
    services.translation_fail(job.translations.get().id, "no model")  # its share of the 100 s
    assert account_balance(account.pk) == 600 - 100
    services.job_fail(job.id, "boom")
    assert account_balance(account.pk) == 600
    assert LedgerEntry.objects.filter(job=job, source="job", kind="refund").get().seconds == 100


def test_a_preview_whose_audio_is_shorter_than_the_preview_becomes_whole(account):
    job = charged_job(account, 3600)  # the 10 minutes left make a 10-minute preview
    job.refresh_from_db()
    assert job.is_preview and job.preview_minutes == 10
    assert job_settle(job, 90).ok
    job.refresh_from_db()
    assert (job.duration, job.is_preview, job.preview_minutes) == (90, False, None)
    assert account_balance(account.pk) == 600 - 90


def test_a_difference_the_balance_cannot_pay_makes_a_preview_of_the_minutes_covered(account):
    job = charged_job(account, 1)
    LedgerEntry.objects.create(account=account, kind="charge", source="staff", seconds=-30, reason="spent")
    result = job_settle(job, 900)  # 15 minutes decoded; 1 s paid and 569 s left cover 9 whole minutes
    assert result.ok and result.preview_minutes == 9 and result.charged_seconds == 540 - 1
    job.refresh_from_db()
    assert (job.duration, job.is_preview, job.preview_minutes) == (900, True, 9)
    assert account_balance(account.pk) == 600 - 30 - 540
    assert "(preview of 9 min)" in settlement(job).reason


def test_under_a_minute_covered_the_job_fails_with_the_figures_and_is_refunded(account):
    LedgerEntry.objects.create(account=account, kind="charge", source="staff", seconds=-570, reason="spent")
    job = charged_job(account, 1)
    result = job_settle(job, 62)
    assert not result.ok
    assert result.error == (
        "Not enough minutes: the audio is 62 s long (its file said 1 s), so this job needs 1 minute "
        "and the account has 0.5 minutes for it."
    )
    assert not LedgerEntry.objects.filter(job=job, source="length").exists()
    services.job_fail(job.id, result.error)
    assert account_balance(account.pk) == 30


def test_a_job_never_charged_is_not_settled(account):
    job = JobFactory(account=account, duration=1)
    assert job_settle(job, 62).ok
    assert not LedgerEntry.objects.filter(job=job).exists()


def test_a_burned_job_whose_picture_runs_longer_says_it_was_charged_for_the_picture(account):
    """Issue 56: a burn encodes the whole picture, so a burned job's charge is settled against it
    when it runs longer than the audio; the entry and the shortfall's message say so."""
    job = charged_job(account, 2, type="burned")  # 3 x the length at 720p
    assert job_settle(job, 6, stream="video").charged_seconds == 3 * 4
    assert (
        settlement(job).reason
        == "burned: the video (its picture, longer than its audio) is 6 s long, the file said 2 s"
    )
    assert account_balance(account.pk) == 600 - 3 * 6
    LedgerEntry.objects.create(account=account, kind="charge", source="staff", seconds=-500, reason="spent")
    poor = charged_job(account, 2, type="burned")  # 82 s left: under a minute of a burn
    assert not (result := job_settle(poor, 3600, stream="video")).ok
    assert result.error.startswith("Not enough minutes: the video (its picture, longer than its audio) is 3600 s long")
