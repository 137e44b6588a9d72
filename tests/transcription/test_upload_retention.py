"""Uploads are inputs: the hourly retention sweep deletes them UPLOAD_RETENTION_HOURS after they were
last written or named by a job, never while a job that reads them runs."""

import os
import time
import uuid
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from tests.factories import JobFactory, UploadFactory
from transcription.models import Job, Upload
from transcription.storage import files
from transcription.upkeep import retention

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_upload(account):
    """An upload whose bytes are in storage (or still arriving, for one that is receiving)."""
    made = []

    def make(age_hours: float, **fields):
        upload = UploadFactory.create(account=account, **fields)
        if upload.state == "ready":
            default_storage.save(files.upload_name(upload.id), ContentFile(b"RIFF...."))
        else:
            files.incoming_path(upload.id).parent.mkdir(parents=True, exist_ok=True)
            files.incoming_path(upload.id).write_bytes(b"RIFF")
        Upload.objects.filter(pk=upload.pk).update(updated_at=timezone.now() - timedelta(hours=age_hours))
        made.append(upload.id)
        return upload

    yield make
    for upload_id in made:
        default_storage.delete(files.upload_name(upload_id))
        files.incoming_path(upload_id).unlink(missing_ok=True)


def exists(upload) -> bool:
    name = files.upload_name(upload.id)
    return Upload.objects.filter(pk=upload.pk).exists() and (
        default_storage.exists(name) or files.incoming_path(upload.id).exists()
    )


def test_old_uploads_go_and_recent_or_busy_ones_stay(stored_upload, account):
    old = stored_upload(25)
    abandoned = stored_upload(30, state="receiving", received=4)
    recent = stored_upload(23)
    busy = stored_upload(40)
    finished_with = stored_upload(40)
    JobFactory(account=account, upload=busy, url=f"upload:{busy.id}", state="processing")
    job = JobFactory(account=account, upload=finished_with, url=f"upload:{finished_with.id}", state="done")

    result = retention.delete_expired_artifacts()

    assert result["uploads"] >= 3  # and the files earlier tests left without a row
    assert not exists(old) and not exists(abandoned) and not exists(finished_with)
    assert exists(recent), "younger than UPLOAD_RETENTION_HOURS"
    assert exists(busy), "a running job still reads it"
    job = Job.objects.get(pk=job.pk)
    assert job.upload is None and job.url == f"upload:{finished_with.id}", "the job still says what it read"


def test_files_no_upload_owns_are_swept(db):
    stray = files.upload_name(uuid.uuid4())
    default_storage.save(stray, ContentFile(b"left by a crash"))
    orphan = files.incoming_path(uuid.uuid4())
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"half")
    day_ago = time.time() - 25 * 3600
    os.utime(orphan, (day_ago, day_ago))
    arriving = files.incoming_path(uuid.uuid4())
    arriving.write_bytes(b"a creation in flight")

    retention.delete_expired_artifacts()

    assert not default_storage.exists(stray) and not orphan.exists()
    assert arriving.exists(), "a young file may belong to an upload being created"
    arriving.unlink()
