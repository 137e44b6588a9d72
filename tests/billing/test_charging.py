import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from accounts.services import account_create
from billing.models import AppendOnlyError, LedgerEntry
from billing.selectors import account_balance
from billing.services import job_refund, translation_refund
from tests.factories import JobFactory
from transcription.models import Job
from transcription.writes import services
from transcription.writes.services import job_charge


def make_job(account, seconds, **options):
    return JobFactory(account=account, duration=seconds, **options)


@pytest.mark.django_db
def test_every_account_starts_with_a_ten_minute_grant(account):
    assert account_balance(account.pk) == 600
    entry = account.ledger.get()
    assert (entry.kind, entry.source, entry.seconds) == ("grant", "signup", 600)


@pytest.mark.django_db
def test_a_job_that_fits_is_charged_in_full_once(account):
    job = make_job(account, 125)
    assert job_charge(job).charged_seconds == 125
    assert job_charge(job).charged_seconds == 125  # a retried task
    assert LedgerEntry.objects.filter(job=job, kind="charge").count() == 1
    assert account_balance(account.pk) == 600 - 125


@pytest.mark.django_db
def test_a_job_that_does_not_fit_becomes_a_preview_of_the_covered_minutes(account):
    job = make_job(account, 25 * 60, type="subtitles", target_languages=["es"])  # costs 2 x length
    result = job_charge(job)
    job.refresh_from_db()
    assert result.ok and job.is_preview and job.preview_minutes == 5
    assert result.charged_seconds == 5 * 60 * 2
    assert account_balance(account.pk) == 0


@pytest.mark.django_db
def test_with_no_minutes_left_the_charge_is_refused_with_the_figures(account):
    make_job(account, 600)
    job_charge(Job.objects.get())
    job = make_job(account, 90)
    result = job_charge(job)
    assert not result.ok
    assert "1.5 minutes" in result.error and "0 minutes left" in result.error
    assert not LedgerEntry.objects.filter(job=job).exists()


@pytest.mark.django_db
def test_a_failed_job_is_refunded_in_full_once(account):
    job = make_job(account, 200)
    job_charge(job)
    services.job_fail(job.id, "The page was not found (HTTP 404).")
    services.job_fail(job.id, "again")
    assert job_refund(job) is None
    assert account_balance(account.pk) == 600
    refund = LedgerEntry.objects.get(job=job, kind="refund")
    assert refund.seconds == 200 and "404" in refund.reason


@pytest.mark.django_db
def test_a_failed_translation_is_refunded_its_share_and_the_job_goes_on(account):
    LedgerEntry.objects.create(account=account, kind="grant", source="staff", seconds=1400, reason="test")
    job = make_job(account, 100, type="burned", quality="hd", target_languages=["es", "xx"])
    job_charge(job)
    assert account_balance(account.pk) == 2000 - (400 + 2 * 500)
    failed = job.translations.get(language="xx")
    services.translation_fail(failed.id, "No translation from English to xx.")
    assert translation_refund(failed) is None  # once
    assert account_balance(account.pk) == 2000 - (400 + 500)
    # If the job then fails, it gets back what was not yet refunded, not more.
    services.job_fail(job.id, "boom")
    assert account_balance(account.pk) == 2000


@pytest.mark.django_db
def test_ledger_entries_are_never_edited_or_deleted(account):
    entry = account.ledger.get()
    entry.seconds = 10**6
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        entry.delete()
    assert account_balance(account.pk) == 600


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_jobs_spend_exactly_what_the_account_has():
    # 10 jobs of 2 minutes fit in 21.5 minutes; the 1.5 left pay for one 1-minute preview.
    account = account_create("load@example.com", minutes=0)
    LedgerEntry.objects.create(account=account, kind="grant", source="staff", seconds=21 * 60 + 30, reason="test")
    jobs = [make_job(account, 120) for _ in range(50)]
    barrier = threading.Barrier(50)

    def charge(job):
        barrier.wait()
        try:
            return job_charge(job)
        finally:
            connection.close()  # each thread has its own database connection

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(charge, jobs))

    full = [r for r in results if r.ok and r.preview_minutes is None]
    previews = [r for r in results if r.ok and r.preview_minutes]
    refused = [r for r in results if not r.ok]
    assert len(full) == 10 and all(r.charged_seconds == 120 for r in full)
    assert len(previews) == 1 and previews[0].charged_seconds == 60
    assert len(refused) == 39 and all("minutes left" in r.error for r in refused)
    balance = account_balance(account.pk)
    assert balance == 30
    assert balance == sum(LedgerEntry.objects.filter(account=account).values_list("seconds", flat=True))
    assert LedgerEntry.objects.filter(account=account, kind="charge").count() == 11
