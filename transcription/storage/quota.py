"""An account's storage quota: the bytes it may keep at once (issue 41), counted over everything the
service keeps for it (issue 56): its uploads, and its jobs' files (Job.kept_bytes: the source kept
to burn again, burned videos, the audio kept for the job page's player, the copies handed between
workers while a job runs). A voice's sample is an upload or a link like any job's. The quota is its
plan's `storage_bytes`, or one largest upload (UPLOAD_MAX_BYTES) for an account without a plan or
a plan that leaves it empty.

Live uploads count by the size announced (tus Upload-Length, a POST's Content-Length) or, when
none was, by the room they were given; checked when an upload is created, before any byte is
written (services.upload_create). A job's files are the job's output, paid for: they are never
refused half way, so they may take an account past its quota; its next upload is then refused
until files are deleted (an upload) or expire (a job's, ARTIFACT_RETENTION_DAYS after it ended).
A job's copy of an upload counts on its own: deleting the upload does not free it."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Sum

from accounts.models import Account
from transcription.models import Job, Upload


class StorageFull(Exception):
    """An upload that would take the account's live uploads past its quota (a 413)."""

    def __init__(self, used: int, quota: int, size: int | None, jobs: int = 0) -> None:
        asked = f"this upload ({format_bytes(size)})" if size else "another upload"
        kept = f" (your jobs' files {format_bytes(jobs)} of it)" if jobs else ""
        super().__init__(
            f"Not enough storage: your files take {format_bytes(used)}{kept} of your {format_bytes(quota)} of "
            f"storage, and {asked} would go past it. Delete uploads you no longer need "
            "(DELETE /v1/api/uploads/{id}) or wait until they expire; a job's files (its burned videos, the "
            f"source they are burned from, its audio) are kept {settings.ARTIFACT_RETENTION_DAYS} days after it ended."
        )


def format_bytes(size: int) -> str:
    if size >= 1024**3:
        return f"{size / 1024**3:.1f} GB"
    return f"{size / 1024**2:.1f} MB"


def storage_quota(account: Account) -> int:
    plan = account.plan
    return plan.storage_bytes if plan is not None and plan.storage_bytes is not None else settings.UPLOAD_MAX_BYTES


def storage_used(account_id: int) -> tuple[int, int]:
    """(the bytes the account keeps in all, of which its jobs' files)."""
    uploads = Upload.objects.filter(account_id=account_id).aggregate(total=Sum("size"))["total"] or 0
    jobs = Job.objects.filter(account_id=account_id, kept_bytes__gt=0).aggregate(total=Sum("kept_bytes"))["total"] or 0
    return uploads + jobs, jobs
