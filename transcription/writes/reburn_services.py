"""The writes of a done burned job's videos drawn again from its (edited) subtitles, on request
(issue 46: `POST /v1/api/transcription/{id}/burn`).

A re-burn is reported as the first burn was: the job goes back from `done` to `burning` (a way
back from `done` of states.JOB_REWORK, taken only here, through services.job_move), its bar moves through `burning` and it ends `done` again,
so a client's poll loop reads it as it read the job. Its translations with a video go `burning` too.
While it runs the old videos stay served; each new one replaces its old one when it is stored.

It is charged when asked, as the contract charges a burned video (3, 4 or 5 x the billed length
per video: the job's own and each translation's), with the account row locked; a balance that does
not cover it is answered as the contract answers an empty balance: no HTTP error, nothing charged
or queued, and the job (still `done`, its videos as they were) says why in `error`.

A re-burn never fails the job: the transcript and the videos already made were delivered. A video
that cannot be drawn again keeps the old one; its share of the charge is refunded and the reason is
in `error` (the job's, or its translation's). The job's timeline tells a re-burn from a first burn
(it has been `done` before), so a burn worker lost mid-way is handled by the same burn task, and a
sweeper giving up ends the re-burn (reburn_end), never the job.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor, audit_record
from billing import pricing
from billing.models import LedgerEntry
from billing.rework_services import rework_charge, rework_refund
from billing.services import billed_seconds
from transcription import states
from transcription.models import Job, Translation
from transcription.scheduling import dispatch
from transcription.writes import services
from transcription.writes.services import RowId

SOURCE = LedgerEntry.Source.REBURN


def _locked(job_id: RowId) -> Job:
    return Job.objects.select_for_update().get(pk=job_id)


def is_reburn(job: Job) -> bool:
    """Whether the job's burn is a re-burn: the job was `done` before it."""
    return job.state == states.BURNING and any(entry[0] == states.DONE for entry in job.timeline)


class ReburnRefused(Exception):
    """The job cannot be burned again now; str() says why, for the client (a 409)."""


def _videos(job: Job) -> list[Translation]:
    return [t for t in job.translations.all() if t.state == states.TRANSLATION_DONE and t.burned_video]


@transaction.atomic
def reburn_start(job_id: RowId) -> Job:
    """Charge and queue a re-burn of a done burned job; the job answered. Raises ReburnRefused
    when it cannot be (not done, not burned, a retranslation still running). A balance that does
    not cover it leaves the job done with the figures in `error`. Raises dispatch.QueueUnavailable,
    charging nothing, when the broker is down."""
    dispatch.check_broker()
    job = _locked(job_id)
    if job.state != states.DONE:
        raise ReburnRefused(f"This job is {job.state}: its videos can be burned again once it is done.")
    if job.type != "burned":
        raise ReburnRefused("Only a burned job (burn-subtitles) has a video to burn again.")
    if job.translations.filter(state=states.TRANSLATION_TRANSLATING).exists():
        raise ReburnRefused("A translation of the last edit is still being made: burn again once it is done.")
    translations = _videos(job)
    seconds = billed_seconds(job)
    videos = 1 + len(translations)
    cost = pricing.reburn_cost(seconds, job.quality, videos)
    what = f"burning {videos} video{'s' if videos != 1 else ''} of {seconds} s again"
    charge = rework_charge(job.account_id, job.id, cost, source=SOURCE, reason=f"Re-burn: {what}", what=what)
    if not charge.ok:
        job.error = charge.error
        job.save(update_fields=["error", "updated_at"])
        return job
    services.job_move(job, states.BURNING, 0.0, rework=True, error=None, attempts=0)
    for translation in translations:
        services.translation_move(translation, states.TRANSLATION_BURNING, rework=True, error=None)
    transaction.on_commit(functools.partial(dispatch.job_send, job.id))
    return job


def _share(job: Job) -> int:
    return pricing.reburn_cost(billed_seconds(job), job.quality, 1)


def _unrefunded(job: Job) -> int:
    """What the running re-burn was charged and not yet given back."""
    entries = LedgerEntry.objects.filter(job_id=job.id, source=SOURCE).order_by("created_at", "id")
    owed = 0
    for entry in entries:
        owed = -entry.seconds if entry.kind == LedgerEntry.Kind.CHARGE else owed - entry.seconds
    return max(owed, 0)


@transaction.atomic
def reburn_video_failed(translation_id: int, error: str) -> None:
    """A translation's video could not be drawn again: it keeps its old one, and its share comes back."""
    translation = Translation.objects.select_for_update().select_related("job").get(pk=translation_id)
    if translation.state != states.TRANSLATION_BURNING:
        return
    error = f"Not burned again ({error}); the video is the one made before."
    services.translation_move(translation, states.TRANSLATION_DONE, error=error)
    job = translation.job
    rework_refund(
        job.account_id, job.id, _share(job), source=SOURCE, reason=f"Re-burn in {translation.language} failed"
    )


@transaction.atomic
def reburn_end(job_id: RowId, error: str | None = None, **fields: Any) -> Job | None:
    """The re-burn is over: the job `done` again with `fields` (its new video). With `error`, the
    job's own video could not be drawn: the old one stays, what is left of the charge comes back,
    and `error` says so. None when the job is not being burned again."""
    job = _locked(job_id)
    if not is_reburn(job):
        return None
    for translation in job.translations.select_for_update().filter(state=states.TRANSLATION_BURNING):
        services.translation_move(translation, states.TRANSLATION_DONE)
    if error is not None:
        rework_refund(job.account_id, job.id, _unrefunded(job), source=SOURCE, reason=f"Re-burn failed: {error}")
        job.error = f"The subtitles could not be burned again ({error}); its minutes have been refunded and the "
        job.error += "videos are the ones made before."
    else:  # new videos, paid for: kept ARTIFACT_RETENTION_DAYS from now, with the source they came from
        fields["ended_at"] = timezone.now()
    services.job_move(job, states.DONE, 1.0, **fields)
    return job


def reburn_cancel(job_id: RowId, by: Actor = None) -> Job | None:
    """Support's cancel of a running re-burn: the re-burn ends (the videos made before stay, its
    minutes come back), never the job, which was delivered. Audited as a job cancelled. None when
    the job is not being burned again (services.job_cancel is for the rest)."""
    with transaction.atomic():
        job = reburn_end(job_id, error="cancelled by support")
        if job is not None:
            audit_record(
                job.account, AuditEvent.Action.JOB_CANCELLED, by=by, detail=f"Re-burn of job {job.id} cancelled"
            )
    return job
