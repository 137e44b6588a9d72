"""One storage quota for everything the service keeps for an account (issue 56, item 3): a burned
job's kept source and videos and its player audio count with the uploads, deleting an upload does
not free what a job copied from it, and an edit does not keep a job's files any longer."""

import json
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.utils import timezone

from billing.models import Plan
from tests.factories import JobFactory, done_job_with_segments
from transcription import states
from transcription.models import Job
from transcription.stages.runner import run_stage
from transcription.storage import files, quota
from transcription.upkeep import retention
from transcription.writes import reburn_services, services

pytestmark = pytest.mark.django_db

FILE = 1400  # bytes of each "14 MB" file, under a "20 MB" quota
QUOTA = 2000


@pytest.fixture
def small_quota(account):
    plan = Plan.objects.create(name="Small storage", monthly_minutes=10, storage_bytes=QUOTA)
    account.plan, account.renews_on = plan, "2099-01-01"
    account.save(update_fields=["plan", "renews_on"])
    return account


@pytest.fixture
def cleanup():
    names: list[str] = []
    yield names
    for name in names:
        default_storage.delete(name)


def _save(name: str, content: bytes, cleanup: list[str]) -> str:
    default_storage.delete(name)
    cleanup.append(default_storage.save(name, ContentFile(content)))
    return cleanup[-1]


def _burned_job_of(upload, account, cleanup):
    """A burned job of `upload` run through the stage runner, its stage doing what the media and
    burn stages leave behind: the upload copied as the kept source, a video drawn from it."""
    job = JobFactory(account=account, type="burned", state=states.BURNING, upload=upload, url=f"upload:{upload.pk}")

    def stage(job, directory) -> bool:
        with default_storage.open(files.upload_name(upload.pk), "rb") as handle:
            _save(files.source_name(job.id), handle.read(), cleanup)
        video = _save(files.burned_name(job.id, None), b"v" * 300, cleanup)
        services.job_finish(job.id, burned_video=video)
        return False

    run_stage(job.id, stage)
    return Job.objects.get(pk=job.pk)


def _upload(account, cleanup):
    """An upload of FILE bytes, whole and in storage; None when the quota refuses it."""
    try:
        upload = services.upload_create(account, size=FILE, filename="talk.mp4")
    except quota.StorageFull:
        return None
    _save(files.upload_name(upload.pk), b"u" * FILE, cleanup)
    return services.upload_ready(upload.pk, size=FILE, duration=10, has_video=True)


def test_three_burned_uploads_do_not_stay_stored_under_a_quota_for_one(small_quota, cleanup):
    # the finding: upload, burn, delete the upload, again: three files stayed stored under the quota
    made = []
    for _ in range(3):
        upload = _upload(small_quota, cleanup)
        if upload is None:
            made.append(None)
            continue
        job = _burned_job_of(upload, small_quota, cleanup)
        services.upload_delete(upload.pk)  # the job's copy stays: it is what a re-burn draws on
        made.append(job)
    assert made[0] is not None and made[1:] == [None, None]
    first = made[0]
    assert default_storage.exists(files.source_name(first.id))
    assert first.kept_bytes == FILE + 300
    used, of_jobs = quota.storage_used(small_quota.pk)
    assert used == of_jobs == FILE + 300 <= QUOTA

    with pytest.raises(quota.StorageFull) as refused:
        services.upload_create(small_quota, size=FILE)
    message = str(refused.value)
    assert "your jobs' files" in message and "30 days after it ended" in message


def test_a_job_copy_counts_with_its_upload_and_expiry_frees_the_room(small_quota, cleanup):
    upload = _upload(small_quota, cleanup)
    job = _burned_job_of(upload, small_quota, cleanup)
    assert quota.storage_used(small_quota.pk) == (FILE + FILE + 300, FILE + 300)

    # 31 days after the job ended its files go, and so does their share of the quota
    services.upload_delete(upload.pk)
    Job.objects.filter(pk=job.pk).update(ended_at=timezone.now() - timedelta(days=31))
    retention.delete_expired_artifacts()
    assert not default_storage.exists(files.source_name(job.id))
    assert Job.objects.get(pk=job.pk).kept_bytes == 0
    assert _upload(small_quota, cleanup) is not None


def test_an_edit_does_not_keep_a_jobs_files_longer(account, cleanup):
    job = done_job_with_segments(account, type="burned")
    ended = timezone.now() - timedelta(days=31)
    video = _save(files.burned_name(job.id, None), b"v" * 300, cleanup)
    kept = [video, _save(files.source_name(job.id), b"s" * 300, cleanup)]
    kept.append(_save(files.playback_name(job.id), b"a" * 300, cleanup))
    Job.objects.filter(pk=job.pk).update(burned_video=video, ended_at=ended, updated_at=ended)

    # the owner corrects a line and renames a speaker today
    client = Client()
    client.force_login(account.user)
    edits = [{"op": "text", "index": 0, "text": "Good evening, how are you today?"}]
    saved = client.patch(
        f"/jobs/{job.pk}/segments", json.dumps({"edits": edits}), content_type="application/json", HTTP_IF_MATCH='"v1"'
    )
    assert saved.status_code == 200, saved.json()
    services.job_rename_speakers(job.id, {"1": "Ann"})
    job.refresh_from_db()
    assert job.updated_at > ended + timedelta(days=30) and job.ended_at == ended

    retention.delete_expired_artifacts()
    assert not any(default_storage.exists(name) for name in kept)


def test_a_job_ends_with_its_end_recorded_and_a_reburn_restarts_it(account):
    job = JobFactory(account=account, type="transcript", state=states.PROCESSING)
    before = timezone.now()
    services.job_finish(job.id)
    assert Job.objects.get(pk=job.pk).ended_at >= before
    failed = JobFactory(account=account, state=states.PROCESSING)
    services.job_fail(failed.id, "no")
    assert Job.objects.get(pk=failed.pk).ended_at >= before

    # a re-burn's new videos are paid for: kept from their making; a failed one moves nothing
    long_ago = timezone.now() - timedelta(days=20)
    timeline = [[states.DONE, long_ago.isoformat()], [states.BURNING, before.isoformat()]]
    burning = JobFactory(account=account, type="burned", state=states.BURNING, timeline=timeline, ended_at=long_ago)
    reburn_services.reburn_end(burning.id, error="the source video is no longer kept")
    assert Job.objects.get(pk=burning.pk).ended_at == long_ago
    Job.objects.filter(pk=burning.pk).update(state=states.BURNING, timeline=timeline)
    reburn_services.reburn_end(burning.id, burned_video=files.burned_name(burning.id, None))
    assert Job.objects.get(pk=burning.pk).ended_at >= before
