"""The only place that writes jobs, batches and translations.

Every change of a job's or a translation's state is written here, by job_move and
translation_move (job_advance / job_finish / job_fail / translation_advance / translation_fail
lock the row and call them), under the transitions of `states`; progress never goes down, but
for work made again on request (the rework services pass rework=True: states.JOB_REWORK,
states.TRANSLATION_REWORK). tests/test_service_writes.py fails on a state written anywhere else.
"""

from __future__ import annotations

import functools
import logging
import math
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account
from audit.models import AuditEvent
from audit.services import Actor, audit_record
from billing.services import ChargeResult, job_refund, ledger_charge, ledger_settle, translation_refund
from transcription import states
from transcription.events import job_endings, poll_cache, signals
from transcription.job_options import retried_options
from transcription.models import Batch, FailureReason, Job, JobSegments, Translation, Upload, UploadState
from transcription.pipeline.recognition.languages import normalize_language
from transcription.scheduling import dispatch
from transcription.storage import files, quota

logger = logging.getLogger(__name__)

# A job's or an upload's id as a task or a URL gives it (a string), or as the row has it.
RowId = UUID | str


def _add_translations(job: Job, languages: list[str]) -> None:
    for position, language in enumerate(languages):
        Translation.objects.create(
            job=job, position=position, language=language, language_code=normalize_language(language)
        )


@transaction.atomic
def job_create(
    account: Account,
    *,
    type: str,
    url: str = "",
    upload: Upload | None = None,
    target_languages: list[str] | None = None,
    queued: bool = True,
    **options: Any,
) -> Job:
    """Store a job and queue it once the row is committed: of a video's `url`, or of an `upload`
    of the account (whose `url` is then upload:<id>, what the job's `video_url` shows). Raises
    dispatch.QueueUnavailable, and stores nothing, when the broker is down. With `queued` False the
    job waits unqueued for an upload still arriving (a live stream's recording: live_job_services
    queues it once whole; the sweeper leaves it alone until then)."""
    if queued:
        dispatch.check_broker()
    if upload is not None:
        url = upload_url(upload.id)
        # the file's name is the job's title from the start, as a link's is its video's once probed
        # (issue 56: the job page showed upload:<id> until a worker started it, and for good when
        # it failed first)
        options.setdefault("title", upload.filename[:500])
        # a job keeps its upload from the retention sweep for UPLOAD_RETENTION_HOURS from now
        Upload.objects.filter(pk=upload.pk).update(updated_at=timezone.now())
    job = Job.objects.create(
        account=account,
        url=url,
        upload=upload,
        type=type,
        target_languages=target_languages or [],
        timeline=[[states.WAITING, timezone.now().isoformat()]],
        **options,
    )
    _add_translations(job, target_languages or [])
    if queued:
        dispatch.job_send_on_commit(job.id, account.pk)
    return job


@transaction.atomic
def batch_create(
    account: Account,
    *,
    url: str,
    title: str,
    total: int,
    skipped: int,
    video_urls: list[str],
    type: str,
    target_languages: list[str] | None = None,
    **options: Any,
) -> Batch:
    """Store a batch and its jobs, queued once committed; nothing when the broker is down
    (dispatch.QueueUnavailable)."""
    dispatch.check_broker()
    batch = Batch.objects.create(
        account=account,
        url=url,
        title=title,
        total=total,
        skipped=skipped,
        type=type,
        target_languages=target_languages or [],
        **options,
    )
    now = timezone.now().isoformat()
    for position, video_url in enumerate(video_urls):
        job = Job.objects.create(
            account=account,
            batch=batch,
            position=position,
            url=video_url,
            type=type,
            target_languages=target_languages or [],
            timeline=[[states.WAITING, now]],
            **options,
        )
        _add_translations(job, target_languages or [])
        dispatch.job_send_on_commit(job.id, account.pk)
    return batch


def _locked(job_id: RowId) -> Job:
    return Job.objects.select_for_update().get(pk=job_id)


def job_move(job: Job, state: str, fraction: float = 0.0, *, rework: bool = False, **fields: Any) -> Job:
    """Move `job`, a row the caller holds locked (select_for_update), into `state` (or further
    through it) under states' rules, setting any result `fields` on the way; saved. With `rework`
    (a done job's work made again on request), states.JOB_REWORK's ways back are allowed and the
    bar is set to `fraction` of the state's range even where that is lower: a re-burn's bar runs
    through `burning` again, as the first burn's did."""
    states.check_job_transition(job.state, state, rework=rework)
    if job.state != state:
        job.timeline = [*job.timeline, [state, timezone.now().isoformat()]]
    if state != states.FAILED:  # a failed job's bar stays where it stopped
        progress = states.progress_in(state, fraction, job.type)
        job.progress = progress if rework else max(job.progress, progress)
    job.state = state
    for name, value in fields.items():
        setattr(job, name, value)
    job.save()
    return job


@transaction.atomic
def job_advance(job_id: RowId, state: str, fraction: float = 0.0, **fields: Any) -> Job:
    """Move a job into `state` (or further through it), setting any result `fields` on the way."""
    return job_move(_locked(job_id), state, fraction, **fields)


def job_progress(job_id: RowId, fraction: float) -> None:
    """Move the progress bar within the job's current state; never backwards, never across states."""
    job = Job.objects.only("state", "progress", "type").get(pk=job_id)
    if job.state in states.FINAL_STATES:
        return
    value = states.progress_in(job.state, fraction, job.type)
    if Job.objects.filter(pk=job_id, state=job.state, progress__lt=value).update(
        progress=value, updated_at=timezone.now()
    ):
        poll_cache.forget(job_id)


def job_charge(job: Job) -> ChargeResult:
    """Charge a job whose `duration` is known: in full, or, when the balance covers only part of
    it, as a preview of the whole minutes it covers (recorded on the job), or not at all
    (ChargeResult.ok is False, with the figures in its error). A job already charged gets its
    earlier result back."""
    with transaction.atomic():
        result = ledger_charge(job)
        if (
            result.ok
            and result.preview_minutes
            and (job.is_preview, job.preview_minutes) != (True, result.preview_minutes)
        ):
            job.is_preview, job.preview_minutes = True, result.preview_minutes
            job.save(update_fields=["is_preview", "preview_minutes", "updated_at"])
    return result


def job_settle(job: Job, seconds: int, stream: str = "audio") -> ChargeResult:
    """Settle the charge of a job whose whole audio was decoded against its length, `seconds`
    (billing.services.ledger_settle), and record that length as the job's `duration`, with the
    preview the balance then allows (or none: the whole audio is processed). Not ok when the
    balance cannot pay for a minute of it (the caller fails the job, which refunds it). `stream`
    says which was measured: "audio", or "video" for a burned job whose picture runs longer."""
    with transaction.atomic():
        job = _locked(job.id)
        result = ledger_settle(job, seconds, stream)
        if result.ok:
            job.duration = seconds
            job.is_preview, job.preview_minutes = bool(result.preview_minutes), result.preview_minutes
            job.save(update_fields=["duration", "is_preview", "preview_minutes", "updated_at"])
    return result


@transaction.atomic
def job_finish(job_id: RowId, **results: Any) -> Job:
    job = job_advance(job_id, states.DONE, 1.0, ended_at=timezone.now(), **results)
    _announce_end(job)
    return job


def _announce_end(job: Job) -> None:
    """Tell the listeners (webhooks' outbox, which writes in this transaction) that a job ended. A
    voice sample's job is not announced: the client knows it as the voice, never by a job id."""
    if not job.is_voice_sample:
        signals.job_ended.send(sender=Job, job=job)
    job_endings.announce_on_commit(job.id)  # whoever awaits the answer (the OpenAI-compatible door)


def job_fail(job_id: RowId, error: str, reason: str = FailureReason.OTHER) -> Job | None:
    """Fail a job that is not final yet, with a reason a person can read (`error`) and one an
    operator counts (`reason`, a FailureReason), and refund its charge.

    Returns None when the job had already ended (a late failure of a retried task).
    """
    with transaction.atomic():
        job = _locked(job_id)
        if job.state in states.FINAL_STATES:
            return None
        job_move(job, states.FAILED, error=error, failure_reason=reason, ended_at=timezone.now())
        for translation in job.translations.exclude(state__in=[states.TRANSLATION_DONE, states.TRANSLATION_FAILED]):
            translation_move(
                translation, states.TRANSLATION_FAILED, error="The job failed before this translation was made."
            )
        job_refund(job, reason=f"Job failed: {error}")
        _announce_end(job)
        # one cancelled or given up while it waited leaves the line (the depth counts what will run)
        transaction.on_commit(functools.partial(dispatch.job_leave_lines, job.id))
    logger.info("job %s failed: %s", job_id, error)
    return job


def translation_move(translation: Translation, state: str, *, rework: bool = False, **fields: Any) -> Translation:
    """Move `translation`, a row the caller holds locked, into `state` under states' rules (with
    `rework`, states.TRANSLATION_REWORK's ways back too), setting `fields`; saved."""
    states.check_translation_transition(translation.state, state, rework=rework)
    translation.state = state
    for name, value in fields.items():
        setattr(translation, name, value)
    translation.save(update_fields=["state", *fields, "updated_at"])
    return translation


@transaction.atomic
def translation_advance(translation_id: int, state: str, **fields: Any) -> Translation:
    translation = Translation.objects.select_for_update().get(pk=translation_id)
    return translation_move(translation, state, **fields)


def translation_fail(translation_id: int, error: str) -> Translation | None:
    """Fail one translation (the job goes on) and refund its share of the charge."""
    with transaction.atomic():
        translation = Translation.objects.select_for_update().select_related("job").get(pk=translation_id)
        if translation.state in (states.TRANSLATION_DONE, states.TRANSLATION_FAILED):
            return None
        translation_move(translation, states.TRANSLATION_FAILED, error=error)
        translation_refund(translation, reason=f"Translation to {translation.language} failed: {error}")
    return translation


def job_claim(job_id: RowId, seconds: float) -> datetime | None:
    """Claim a job for the stage a worker is about to run, for `seconds`. Returns the claim's
    expiry, which is also its token for job_renew_claim and job_release, or None when another
    worker's claim is still live (the broker delivered the task twice: Redis does so when a task
    runs longer than its visibility timeout). The claim does not touch `updated_at`."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds)
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    return until if Job.objects.filter(free, pk=job_id).update(lease_until=until) else None


def job_renew_claim(job_id: RowId, held: datetime, seconds: float) -> datetime | None:
    """The heartbeat: extend the claim that expires at `held`. Returns the new expiry, or None when
    the claim is no longer this worker's (it lapsed and the sweeper gave the job to another)."""
    until = timezone.now() + timedelta(seconds=seconds)
    return until if Job.objects.filter(pk=job_id, lease_until=held).update(lease_until=until) else None


def job_release(job_id: RowId, held: datetime) -> None:
    """Drop the claim that expires at `held`; a claim another worker has taken since is kept."""
    Job.objects.filter(pk=job_id, lease_until=held).update(lease_until=None)


def job_take_lapsed_claim(job_id: RowId, attempts: int, lapsed: datetime | None, now: datetime) -> bool:
    """The sweeper's hold on a job whose worker died (its claim expired at `lapsed`): one attempt
    used, the claim cleared for the next worker. Compare and set, so that of two sweepers only one
    re-queues the job. False when the job moved on meanwhile."""
    taken = Job.objects.filter(pk=job_id, attempts=attempts, lease_until=lapsed).update(
        attempts=attempts + 1, lease_until=None, updated_at=now
    )
    if taken:
        poll_cache.forget(job_id)
    return bool(taken)


def job_mark_resent(job_id: RowId, cutoff: datetime, now: datetime) -> bool:
    """Note that the task of a job nobody has claimed since `cutoff` is being sent again (so it is
    sent at most once per STALLED_AFTER_SECONDS). False when a worker claimed it meanwhile."""
    marked = Job.objects.filter(pk=job_id, lease_until__isnull=True, updated_at__lt=cutoff).update(updated_at=now)
    if marked:
        poll_cache.forget(job_id)
    return bool(marked)


@transaction.atomic
def job_forget_artifacts(job_id: RowId) -> None:
    """Clear the names of a job's burned videos once the files are deleted (retention)."""
    job = _locked(job_id)
    job.burned_video = None
    job.save(update_fields=["burned_video", "updated_at"])
    for translation in job.translations.exclude(burned_video=None):
        translation.burned_video = None
        translation.save(update_fields=["burned_video", "updated_at"])


CANCELLED_ERROR = "Cancelled by support."


def job_cancel(job_id: RowId, by: Actor = None) -> Job | None:
    """Stop a waiting or running job for support: it fails with CANCELLED_ERROR and is refunded.

    The refund is job_fail's: billing.services.job_refund returns everything the job was charged
    and not refunded yet. A job cancelled before it is done has delivered nothing, so that is
    exactly what it had not used (a translation that already failed was refunded on its own and
    is not returned twice). A worker busy with the job's current stage finishes that stage, then
    finds the job final and stops (stages.runner.run_stage ignores the InvalidTransition).

    Returns None, and changes nothing, when the job had already ended. Audited as job_cancelled.
    """
    with transaction.atomic():
        job = job_fail(job_id, CANCELLED_ERROR, FailureReason.CANCELLED)
        if job is None:
            return None
        audit_record(
            job.account,
            AuditEvent.Action.JOB_CANCELLED,
            by=by,
            detail=f"Job {job.id} cancelled in state {job.timeline[-2][0] if len(job.timeline) > 1 else 'unknown'}",
        )
    return job


def job_retry(job_id: RowId, by: Actor = None) -> Job:
    """Queue a fresh job with the failed job's URL and options (via job_create); the failed job stays failed.

    The new job is charged again when its duration is known (the failed one was refunded). It is
    not added to the failed job's batch: a batch lists the jobs its client queued. Audited as
    job_retried. Raises ValueError for a job that has not failed.
    """
    with transaction.atomic():
        failed = Job.objects.select_related("account").get(pk=job_id)
        if failed.state != states.FAILED:
            raise ValueError(f"Only a failed job can be retried; this one is {failed.state}.")
        if failed.is_voice_sample:
            # its voice was failed with it; the holder enrols the voice again (POST /v1/api/voices)
            raise ValueError("A voice sample's job is not retried: the account holder enrols the voice again.")
        job = job_create(
            failed.account, url=failed.url, upload=failed.upload, type=failed.type, **retried_options(failed)
        )
        audit_record(
            failed.account, AuditEvent.Action.JOB_RETRIED, by=by, detail=f"Job {failed.id} retried as {job.id}"
        )
    return job


def job_keep_segments(job_id: RowId, *, language: str, duration: float, segments: list[dict[str, Any]]) -> None:
    """Keep a job's recognised segments and words (JobSegments) for the answers built from them."""
    JobSegments.objects.update_or_create(
        job_id=job_id, defaults={"language": language, "duration": duration, "segments": segments}
    )


def job_files_measured(job_id: RowId) -> int:
    """Measure what the job's files take in storage now (files.job_names: its kept source, burned
    videos, player audio and the copies between workers) and record it as `kept_bytes`, which the
    account's storage quota counts (issue 56). Called after each stage (runner) and each deletion
    (retention), under the job's row lock so that two measures never record an older one last;
    `updated_at` is left alone (the stall sweeper reads it). 0 for a job that is gone."""
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).only("id", "burned_video").filter(pk=job_id).first()
        if job is None:
            return 0
        videos = [job.burned_video, *job.translations.values_list("burned_video", flat=True)]
        size = sum(files.stored_size(name) for name in files.job_names(job.id, videos))
        Job.objects.filter(pk=job.id).update(kept_bytes=size)
    return size


# --- Uploads ---------------------------------------------------------------------------------


def upload_url(upload_id: RowId) -> str:
    """What a job made from an upload has for its `url` (and shows as `video_url`)."""
    return f"upload:{upload_id}"


def upload_create(account: Account, *, size: int | None, filename: str = "") -> Upload:
    """A new upload of `size` bytes, receiving; of unknown size (None: a body sent chunked), it is
    given the room left, up to UPLOAD_MAX_BYTES, as its size until it is whole. Raises
    quota.StorageFull when the account's files (its live uploads, its jobs' kept files) would go
    past its storage quota."""
    with transaction.atomic():
        # one creation at a time per account, so that two at once cannot both take the last room
        holder = Account.objects.select_for_update(of=("self",)).select_related("plan").get(pk=account.pk)
        limit, (used, of_jobs) = quota.storage_quota(holder), quota.storage_used(holder.pk)
        room = limit - used
        if (size is None and room <= 0) or (size is not None and size > room):
            raise quota.StorageFull(used, limit, size, of_jobs)
        wanted = min(room, settings.UPLOAD_MAX_BYTES) if size is None else size
        return Upload.objects.create(account_id=holder.pk, size=wanted, filename=filename[:255])


def upload_name(upload_id: RowId, filename: str) -> None:
    """Give a receiving upload the file name its client sent (a multipart part's, once it is read)."""
    Upload.objects.filter(pk=upload_id, state=UploadState.RECEIVING).update(
        filename=filename[:255], updated_at=timezone.now()
    )


def upload_received(upload_id: RowId, received: int) -> None:
    """Note how many bytes of an upload are stored (its tus Upload-Offset); also what keeps an
    unfinished upload from the retention sweep."""
    Upload.objects.filter(pk=upload_id, state=UploadState.RECEIVING).update(
        received=received, updated_at=timezone.now()
    )


def upload_ready(upload_id: RowId, *, size: int, duration: float, has_video: bool) -> Upload:
    """The upload is whole, in storage, and ffprobe found audio in it: jobs may name it now."""
    with transaction.atomic():
        upload = Upload.objects.select_for_update().get(pk=upload_id)
        upload.state = UploadState.READY
        upload.size = upload.received = size
        upload.duration = math.ceil(duration)
        upload.has_video = has_video
        upload.save()
    return upload


def upload_delete(upload_id: RowId) -> None:
    """Forget an upload and delete its bytes, received or stored (a job that named it keeps its
    `url`; its `upload` becomes empty)."""
    files.incoming_path(upload_id).unlink(missing_ok=True)
    default_storage.delete(files.upload_name(upload_id))
    Upload.objects.filter(pk=upload_id).delete()


# --- Speaker names and enrolled voices --------------------------------------------------------


@transaction.atomic
def job_rename_speakers(job_id: RowId, names: dict[str, str | None]) -> Job:
    """Give speakers of a job names ({"2": "Bob"}), or take a name back (None: "Speaker 2" again).
    The numbers were checked against the job's text by the caller; the save drops the cached poll."""
    job = _locked(job_id)
    merged = {**(job.speaker_names or {}), **names}
    job.speaker_names = {number: name for number, name in sorted(merged.items(), key=lambda i: int(i[0])) if name}
    job.save(update_fields=["speaker_names", "updated_at"])
    return job
