"""A live stream's recording kept as a job (issue 52: "kept like any other job"): the writes of its
job and upload, from the stream's start to the recording handed to the pipeline.

- `live_job_open`: when a live worker takes the stream, a `transcript` job (it has the SRT and
  WebVTT of every job) of an upload that receives the recording, stored but not queued: the
  sweeper leaves a job whose upload is still arriving alone. The stream prepays it
  (billing.live_services.live_keep: the stream's one ledger entry is all its audio costs).
- `live_job_release`: the stream ended and its recording (a WAV under the upload's incoming path,
  on the door's machine) is whole: moved into storage as the upload, which becomes ready, and the
  job queued, to run as a job of an uploaded file runs. A recording under MIN_SECONDS (a stream
  closed before it said anything) fails the job with NO_SPEECH instead: nothing is charged for it.
- `live_jobs_orphaned`: the sweeper's: a job whose stream was settled without its door releasing
  it (the web process died mid-stream, its recording with it) fails with LOST.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from billing import live_services as billing
from transcription import states
from transcription.models import FailureReason, Job, JobType, UploadState
from transcription.scheduling import dispatch
from transcription.storage import files, quota

from . import services

MIN_SECONDS = 0.5
NO_SPEECH = (
    "The live stream ended with under half a second of audio: there was nothing to transcribe. "
    "Nothing was charged for this job (the stream's seconds are its only charge)."
)
LOST = (
    "The live stream's recording could not be kept (the server holding its connection, or the file "
    "store, was lost), so it was not transcribed as a job; its text was sent on the stream as it ran. "
    "Nothing was charged for this job."
)


def recording_name(when: Any) -> str:
    """The upload's file name, which the job shows as its title."""
    return f"Live stream {when:%Y-%m-%d %H:%M} UTC"


def live_job_open(
    account: Account, stream_id: str, *, language: str | None, prompt: str, reserve: int
) -> tuple[Job, Any]:
    """The stream's job and its upload (receiving), or quota.StorageFull when the account has no
    room at all. The upload holds `reserve` bytes of the storage quota (the longest recording the
    stream may make), or the room left when less: a recording stops growing there."""
    name = recording_name(timezone.now())
    with transaction.atomic():
        try:
            upload = services.upload_create(account, size=reserve, filename=name)
        except quota.StorageFull:
            upload = services.upload_create(account, size=None, filename=name)
        job = services.job_create(
            account,
            type=JobType.TRANSCRIPT,
            upload=upload,
            queued=False,
            language_code=language,
            prompt=prompt or "",
        )
        billing.live_keep(stream_id, job.id)
    return job, upload


def live_job_release(job_id: Any, recording: Path, *, size: int, seconds: float) -> Job | None:
    """The recording whole (`size` bytes, `seconds` of audio): the upload ready and the job queued,
    or the job failed with NO_SPEECH when it is under MIN_SECONDS. None when the job had ended
    already (the sweeper found its stream lost first)."""
    job = Job.objects.select_related("account").get(pk=job_id)
    if job.upload_id is None or job.state in states.FINAL_STATES:
        recording.unlink(missing_ok=True)
        return None
    if seconds < MIN_SECONDS:
        failed = services.job_fail(job.id, NO_SPEECH, FailureReason.MEDIA)
        services.upload_delete(job.upload_id)
        return failed
    files.store_moving(recording, files.upload_name(job.upload_id))
    with transaction.atomic():
        services.upload_ready(job.upload_id, size=size, duration=seconds, has_video=False)
        dispatch.job_send_on_commit(job.id, job.account_id)
    return job


def live_jobs_orphaned() -> list[Any]:
    """Fail every kept stream's job whose stream was settled while its recording still arrived (its
    door died: the sweeper or the account's next stream settled it); their ids."""
    orphans = Job.objects.filter(
        upload__state=UploadState.RECEIVING, live_stream__settled_at__isnull=False
    ).values_list("pk", flat=True)
    failed = []
    for job_id in list(orphans):
        if services.job_fail(job_id, LOST, FailureReason.OTHER) is not None:
            failed.append(job_id)
    return failed
