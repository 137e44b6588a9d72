"""The writes of a long job's recognition chunks (issue 44: one long video across the fleet; the
stage is stages/spreading.py).

A chunk is claimed like a job (claims.py): its `lease_until` is the claim's expiry and its token,
renewed by a heartbeat, so a worker whose claim lapsed and was taken over neither stores a result
over the new holder's nor releases its claim. A chunk is free when it is not done and nobody's
claim on it is live; a claim is only taken while the job is in `processing` (a failed or cancelled
job's chunks are left alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from transcription import states
from transcription.models import RecognitionChunk
from transcription.writes.services import RowId


@transaction.atomic
def chunks_plan(
    job_id: RowId, spans: Sequence[tuple[float, float]], speech: Sequence[Sequence[tuple[float, float]]], by: str
) -> int:
    """The job's chunks, one row per span (with the speech found in it), planned by the worker `by`.
    A coordinator run again (its worker died, the job was retried) finds the same plan, since the
    plan is a function of the audio: the chunks already recognised are kept. Another plan replaces
    the rows. Returns how many chunks are done already."""
    rows = list(RecognitionChunk.objects.select_for_update().filter(job_id=job_id).order_by("index"))
    if [(row.start, row.end) for row in rows] == [(float(s), float(e)) for s, e in spans]:
        RecognitionChunk.objects.filter(job_id=job_id).update(planned_by=by)
        # merged once already (a run that failed after the merge): their results were dropped
        RecognitionChunk.objects.filter(job_id=job_id, done=True, result__isnull=True).update(done=False)
        return RecognitionChunk.objects.filter(job_id=job_id, done=True).count()
    RecognitionChunk.objects.filter(job_id=job_id).delete()
    RecognitionChunk.objects.bulk_create(
        RecognitionChunk(
            job_id=job_id,
            index=index,
            start=start,
            end=end,
            speech=[list(region) for region in regions],
            planned_by=by,
        )
        for index, ((start, end), regions) in enumerate(zip(spans, speech, strict=True))
    )
    return 0


def _free(now: datetime) -> Q:
    return Q(done=False, job__state=states.PROCESSING) & (Q(lease_until__isnull=True) | Q(lease_until__lt=now))


def chunk_claim(job_id: RowId, index: int, by: str, seconds: float) -> datetime | None:
    """Claim chunk `index` of the job for `seconds`: the claim's expiry (its token), or None when it
    is done, another worker's claim on it is live, or the job is not recognising any more."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds)
    # the job's state is a join, which an UPDATE cannot filter on: the candidate is found first,
    # then claimed on its own row's condition (compare and set on lease_until)
    row = (
        RecognitionChunk.objects.filter(_free(now), job_id=job_id, index=index).values_list("pk", "lease_until").first()
    )
    if row is None:
        return None
    pk, lapsed = row
    claimed = RecognitionChunk.objects.filter(pk=pk, done=False, lease_until=lapsed).update(
        lease_until=until, claimed_by=by
    )
    return until if claimed else None


def chunk_claim_any(job_id: RowId, by: str, seconds: float, *, last_first: bool = False) -> tuple[int, datetime] | None:
    """Claim the job's first free chunk (the last one with `last_first`): (its index, the claim's
    expiry), or None when none is free."""
    order = "-index" if last_first else "index"
    for index in (
        RecognitionChunk.objects.filter(_free(timezone.now()), job_id=job_id)
        .order_by(order)
        .values_list("index", flat=True)
    ):
        until = chunk_claim(job_id, index, by, seconds)
        if until is not None:
            return index, until
    return None


def chunk_renew_claim(job_id: RowId, index: int, held: datetime, seconds: float) -> datetime | None:
    """The chunk's heartbeat: the new expiry, or None when the claim is no longer this worker's."""
    until = timezone.now() + timedelta(seconds=seconds)
    renewed = RecognitionChunk.objects.filter(job_id=job_id, index=index, done=False, lease_until=held).update(
        lease_until=until
    )
    return until if renewed else None


def chunk_store(job_id: RowId, index: int, held: datetime, result: dict[str, Any]) -> bool:
    """The chunk's transcript, kept by the worker whose claim expires at `held`; the chunk is done.
    False when the claim lapsed and another worker took it (that one's result counts)."""
    return bool(
        RecognitionChunk.objects.filter(job_id=job_id, index=index, done=False, lease_until=held).update(
            done=True, result=result, lease_until=None
        )
    )


def chunk_release(job_id: RowId, index: int, held: datetime) -> None:
    """Drop an unfinished chunk's claim (its worker stopped or failed), for another worker to take."""
    RecognitionChunk.objects.filter(job_id=job_id, index=index, done=False, lease_until=held).update(lease_until=None)


def chunks_merged(job_id: RowId) -> None:
    """The chunks' transcripts are merged into the job's: their copies here are dropped (the rows
    stay, saying who recognised what)."""
    RecognitionChunk.objects.filter(job_id=job_id).update(result=None)
