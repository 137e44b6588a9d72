"""Every write of a transcript's correction (api.editing): the edited segments, the text and
subtitles made again from them, and the edit's line in the job's history. Apart from services.py
(which holds the job's life from POST to its end) because an edit happens after that life.

The document is written only if its version is still the one the editor read (the ETag they sent
as If-Match): the row is locked, the version compared, then raised by one, so of two editors who
read the same version one wins and the other is told (StaleVersion), never overwritten silently.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import Job, JobSegments
from .services import RowId


class StaleVersion(Exception):
    """The document changed since the editor read it."""

    def __init__(self, version: int):
        super().__init__(f"The transcript is at version {version}.")
        self.version = version


class NotEditable(Exception):
    """The job is not done (or has no kept segments): nothing to correct."""


@transaction.atomic
def segments_edit(
    job_id: RowId,
    *,
    read_version: int,
    segments: list[dict[str, Any]],
    rendered: dict[str, str],
    who: dict[str, Any],
    ops: list[str],
) -> JobSegments:
    """Store the edited `segments` (the original kept at the first edit) and the job's `rendered`
    txt/srt/webvtt, if the document is still at `read_version`; else raise StaleVersion."""
    job = Job.objects.select_for_update().only("id", "state").get(pk=job_id)
    # the document and the original are megabytes for a long job: neither is read here
    kept = JobSegments.objects.select_for_update().only("job_id", "version", "history").filter(job_id=job_id).first()
    if job.state != "done" or kept is None:
        raise NotEditable(job.state)
    if kept.version != read_version:
        raise StaleVersion(kept.version)
    # the first edit keeps the recognition as it was (copied by the database)
    JobSegments.objects.filter(job_id=job_id, original__isnull=True).update(original=F("segments"))
    kept.segments = segments
    kept.version += 1
    kept.history = [
        *kept.history,
        {"at": timezone.now().isoformat(), **who, "ops": ops, "version": kept.version},
    ]
    kept.save(update_fields=["segments", "version", "history"])
    job.txt, job.srt, job.webvtt = rendered["txt"], rendered["srt"], rendered["webvtt"]
    # the save drops the cached poll (poll_cache's post_save), so every door reads the new text
    job.save(update_fields=["txt", "srt", "webvtt", "updated_at"])
    return kept
