"""Artifact retention (hourly, from beat): burned videos, the source video they are burned again
from (issue 46) and the audio the job page plays are kept ARTIFACT_RETENTION_DAYS after their job
ended (Job.ended_at: its end, or a re-burn's new videos; an edit or a rename does not move it, issue
56); the audio and source copies handed between workers only while their job runs; uploads
UPLOAD_RETENTION_HOURS after they were last written or named by a job, and never while a job that
reads them runs. Each job whose files are deleted is measured again (services.job_files_measured):
the storage quota counts what is still kept."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from transcription import states
from transcription.models import Job, Upload
from transcription.storage import files
from transcription.writes import services


def _ended():
    """Jobs with the moment their files are kept from: their end (a row written before ended_at
    existed, and not migrated, by its last write)."""
    return Job.objects.annotate(kept_from=Coalesce("ended_at", "updated_at"))


def delete_expired_artifacts(now=None) -> dict:
    """Delete burned videos of jobs that ended more than ARTIFACT_RETENTION_DAYS ago (their links
    then answer 410), and any audio or source video left behind by a job that has ended."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.ARTIFACT_RETENTION_DAYS)
    expired = (
        _ended()
        .filter(state__in=states.FINAL_STATES, kept_from__lt=cutoff)
        .filter(Q(burned_video__isnull=False) | Q(translations__burned_video__isnull=False))
        .distinct()
    )
    videos = 0
    for job in expired.prefetch_related("translations"):
        names = [job.burned_video] + [t.burned_video for t in job.translations.all()]
        for name in filter(None, names):
            default_storage.delete(name)
            videos += 1
        default_storage.delete(files.source_name(job.id))  # kept to burn again (issue 46), as long as they
        services.job_forget_artifacts(job.id)
        services.job_files_measured(job.id)
    leftovers = 0
    for folder in files.SHARED_FOLDERS:
        try:
            _, file_names = default_storage.listdir(folder)
        except FileNotFoundError:
            continue
        for file_name in file_names:
            job_id = file_name.split(".", 1)[0]
            try:
                live = Job.objects.filter(pk=job_id).exclude(state__in=states.FINAL_STATES)
                if folder == "sources":  # a done burned job's source, kept with its videos (issue 46)
                    live = live | Job.objects.filter(pk=job_id, state=states.DONE, burned_video__isnull=False)
                running = live.exists()
            except ValidationError:  # not a job id: nothing of ours
                continue
            if not running:
                default_storage.delete(f"{folder}/{file_name}")
                services.job_files_measured(job_id)
                leftovers += 1
    return {
        "videos": videos,
        "leftovers": leftovers,
        "playback": delete_expired_playback(cutoff),
        "uploads": delete_expired_uploads(now),
    }


def delete_expired_playback(cutoff) -> int:
    """Delete the kept audio (files.playback_name) of jobs that ended before `cutoff` (however
    recently corrected), and of jobs that no longer exist."""
    try:
        _, file_names = default_storage.listdir("playback")
    except FileNotFoundError:
        return 0
    deleted = 0
    for file_name in file_names:
        job_id = file_name.split(".", 1)[0]
        try:
            kept = _ended().filter(pk=job_id).exclude(state__in=states.FINAL_STATES, kept_from__lt=cutoff).exists()
        except ValidationError:  # not a job id: nothing of ours
            continue
        if not kept:
            default_storage.delete(f"playback/{file_name}")
            services.job_files_measured(job_id)
            deleted += 1
    return deleted


def delete_expired_uploads(now=None) -> int:
    """Delete the uploads (whole or not) untouched for UPLOAD_RETENTION_HOURS that no running job
    reads, and the received or stored files no upload owns any more."""
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.UPLOAD_RETENTION_HOURS)
    in_use = Job.objects.filter(upload__isnull=False).exclude(state__in=states.FINAL_STATES).values("upload_id")
    expired = list(Upload.objects.filter(updated_at__lt=cutoff).exclude(pk__in=in_use).values_list("pk", flat=True))
    for upload_id in expired:
        services.upload_delete(upload_id)
    orphans = 0
    known = {str(pk) for pk in Upload.objects.values_list("pk", flat=True)}
    incoming = Path(settings.UPLOAD_INCOMING_DIR)
    for path in incoming.glob("*.part") if incoming.is_dir() else []:
        # a file whose row is gone (deleted while its PATCH ran); young ones may be a creation in flight
        if path.name.removesuffix(".part") not in known and path.stat().st_mtime < cutoff.timestamp():
            path.unlink(missing_ok=True)
            orphans += 1
    try:
        _, stored = default_storage.listdir("uploads")
    except FileNotFoundError:
        stored = []
    for name in stored:
        if name not in known:
            default_storage.delete(files.upload_name(name))
            orphans += 1
    return len(expired) + orphans
