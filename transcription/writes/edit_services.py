"""Every write of a transcript's correction (api.front.editing): the edited segments, the text and
subtitles made again from them, and the edit's line in the job's history. Apart from services.py
(which holds the job's life from POST to its end) because an edit happens after that life.

The document is written only if its version is still the one the editor read (the ETag they sent
as If-Match): the row is locked, the version compared, then raised by one, so of two editors who
read the same version one wins and the other is told (StaleVersion), never overwritten silently.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from transcription.models import Job, JobSegments, SegmentsPart
from transcription.writes.services import RowId


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
    changed: tuple[int, int, int] | None = None,
) -> JobSegments:
    """Store the edited `segments` (the original kept at the first edit) and the job's `rendered`
    txt/srt/webvtt, if the document is still at `read_version`; else raise StaleVersion.
    `changed` (rerender.changed_segments): segments start..end_old-1 of the version read are now
    start..end_new-1, the others are as they were: only the parts holding them are written."""
    job = Job.objects.select_for_update().only("id", "state").get(pk=job_id)
    # the document and the original are megabytes for a long job: neither is read here
    kept = (
        JobSegments.objects.select_for_update()
        .only("job_id", "version", "history", "parts")
        .filter(job_id=job_id)
        .first()
    )
    if job.state != "done" or kept is None:
        raise NotEditable(job.state)
    if kept.version != read_version:
        raise StaleVersion(kept.version)
    if kept.parts is None:
        # the document goes into parts; the recognition is kept as it was (copied by the database),
        # unless an edit made before parts existed kept it already
        JobSegments.objects.filter(job_id=job_id).update(original=Coalesce("original", "segments"), segments=[])
    _write_parts(kept, segments, None if kept.parts is None else changed)
    kept.version += 1
    kept.history = [
        *kept.history,
        {"at": timezone.now().isoformat(), **who, "ops": ops, "version": kept.version},
    ]
    kept.save(update_fields=["parts", "version", "history"])
    job.txt, job.srt, job.webvtt = rendered["txt"], rendered["srt"], rendered["webvtt"]
    # the save drops the cached poll (poll_cache's post_save), so every door reads the new text
    job.save(update_fields=["txt", "srt", "webvtt", "updated_at"])
    return kept


PART_SEGMENTS = 64  # segments in a part when a document is cut into parts


def _write_parts(kept: JobSegments, segments: list[dict[str, Any]], changed: tuple[int, int, int] | None) -> None:
    """The parts of `kept` holding the changed segments written again (every part without `changed`)."""
    if changed is None:
        SegmentsPart.objects.filter(job_id=kept.job_id).delete()
        runs = [segments[at : at + PART_SEGMENTS] for at in range(0, len(segments), PART_SEGMENTS)] or [[]]
        SegmentsPart.objects.bulk_create(
            [SegmentsPart(job_id=kept.job_id, position=position, segments=run) for position, run in enumerate(runs)]
        )
        kept.parts = [len(run) for run in runs]
        return
    start, end_old, end_new = changed
    sizes, ends = list(kept.parts or []), list[int]()
    for size in sizes:
        ends.append((ends[-1] if ends else 0) + size)
    # the parts from the one holding `start` to the one holding the last changed old segment (a
    # segment added after the last one goes to the last part)
    first = min(bisect_right(ends, start), len(sizes) - 1)
    last = max(first, min(bisect_right(ends, max(start, end_old - 1)), len(sizes) - 1))
    lo = ends[first] - sizes[first]
    run = segments[lo : ends[last] + end_new - end_old]
    count = last - first + 1
    for offset in range(count):  # the new segments shared evenly by the same parts
        piece = run[len(run) * offset // count : len(run) * (offset + 1) // count]
        SegmentsPart.objects.filter(job_id=kept.job_id, position=first + offset).update(segments=piece)
        sizes[first + offset] = len(piece)
    kept.parts = sizes
