"""Runs a job's stages: the glue between Celery tasks, the services that write jobs, and the
pipeline stages (plain functions that know nothing of Django).

Everything a job writes to local disk lives in WORK_DIR/<job id>/ and is removed when the stage
ends, whatever happens. The converted audio travels from the media worker to the speech worker
through Django's storage ("uploading"), so the two may run on different machines.
"""
from __future__ import annotations

import logging
import math
import shutil
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.utils import timezone

from billing.services import job_charge

from . import poll_cache, services, states
from .models import Job
from .pipeline import asr, audio, captions, fetch, speakers, whisper_model
from .pipeline.types import Transcript

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "An internal error stopped this job; its minutes have been refunded. Please try again."
STALLED_ERROR = "The job stopped making progress (a worker was lost) and was given up; its minutes have been refunded."

# Errors whose message is written for the client and becomes the job's `error` as is.
CLIENT_ERRORS = (fetch.FetchError, audio.AudioError, whisper_model.ModelUnavailable)


def _work_dir(job_id) -> Path:
    directory = Path(settings.WORK_DIR) / str(job_id)
    shutil.rmtree(directory, ignore_errors=True)  # a retried stage starts clean
    directory.mkdir(parents=True)
    return directory


def _audio_name(job_id) -> str:
    return f"audio/{job_id}.wav"


class _Throttled:
    """Calls `update(fraction)` at most once a second: progress is a database write."""

    def __init__(self, update):
        self.update, self.last = update, 0.0

    def __call__(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self.last >= 1.0 or fraction >= 1.0:
            self.last = now
            self.update(fraction)


def _run(job_id, stage) -> bool:
    """Run `stage(job)` for a job that has not ended; fail the job on any error. True on success."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.state in states.FINAL_STATES:
        return False
    directory = _work_dir(job_id)
    try:
        return stage(job, directory)
    except CLIENT_ERRORS as error:
        services.job_fail(job_id, str(error))
    except states.InvalidTransition as error:
        logger.warning("job %s: %s", job_id, error)
    except Exception:
        logger.exception("job %s failed unexpectedly", job_id)
        services.job_fail(job_id, INTERNAL_ERROR)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if Job.objects.filter(pk=job_id, state__in=states.FINAL_STATES).exists():
            default_storage.delete(_audio_name(job_id))  # the shared copy is only needed while it runs
    return False


def _charge(job_id, state: str, duration: int) -> bool:
    """Record the video's length and charge for it; fail the job when the account cannot pay."""
    job = services.job_advance(job_id, state, duration=duration)
    result = job_charge(job)
    if not result.ok:
        services.job_fail(job_id, result.error)
    return result.ok


def run_media_stages(job_id) -> bool:
    """preparing -> downloading -> converting -> uploading. True when the audio is ready for ASR."""
    return _run(job_id, _media_stages)


def _media_stages(job: Job, directory: Path) -> bool:
    allow_private = settings.ALLOW_PRIVATE_URLS
    services.job_advance(job.id, states.PREPARING)
    if job.type == "burned":
        services.job_fail(job.id, "Burned-in subtitles are not available on this server yet.")
        return False
    info = fetch.probe(job.url, allow_private=allow_private, max_duration=settings.MAX_VIDEO_SECONDS,
                       timeout=settings.FETCH_TIMEOUT_SECONDS)
    duration = math.ceil(info.duration) if info.duration else None
    services.job_advance(job.id, states.PREPARING, 0.5, title=info.title[:500])
    if duration is not None and not _charge(job.id, states.PREPARING, duration):
        return False

    services.job_advance(job.id, states.DOWNLOADING)
    source = fetch.download(
        job.url, directory, allow_private=allow_private, timeout=settings.DOWNLOAD_TIMEOUT_SECONDS,
        max_bytes=settings.DOWNLOAD_MAX_BYTES, stall_timeout=settings.DOWNLOAD_STALL_SECONDS,
        max_duration=settings.MAX_VIDEO_SECONDS,
    )

    services.job_advance(job.id, states.CONVERTING)
    seconds = audio.probe_audio(source)
    if duration is None:  # direct links often carry no length until the file is read
        duration = math.ceil(seconds)
        if duration > settings.MAX_VIDEO_SECONDS:
            raise fetch.FetchError(fetch.too_long_message(duration, settings.MAX_VIDEO_SECONDS))
        if not _charge(job.id, states.CONVERTING, duration):
            return False
    job.refresh_from_db(fields=["is_preview", "preview_minutes"])
    max_seconds = job.preview_minutes * 60 if job.is_preview else None
    wav = directory / "audio.wav"
    audio.to_wav(source, wav, timeout=settings.FFMPEG_TIMEOUT_SECONDS, max_seconds=max_seconds)

    services.job_advance(job.id, states.UPLOADING)
    name = _audio_name(job.id)
    default_storage.delete(name)
    with wav.open("rb") as handle:
        default_storage.save(name, File(handle))
    services.job_advance(job.id, states.UPLOADING, 1.0)
    return True


def run_speech_stages(job_id) -> bool:
    """processing -> merging -> aligning -> done (translating and burning come later)."""
    return _run(job_id, _speech_stages)


def _speech_stages(job: Job, directory: Path) -> bool:
    wav = directory / "audio.wav"
    with default_storage.open(_audio_name(job.id), "rb") as source, wav.open("wb") as target:
        shutil.copyfileobj(source, target, 1024 * 1024)

    services.job_advance(job.id, states.PROCESSING)
    model = whisper_model.load_model(settings.WHISPER_MODEL, settings.MODEL_CACHE_DIR)
    chunks = audio.plan_chunks(wav)
    total = sum(end - start for start, end in chunks) or 1.0
    parts: list[Transcript] = []
    done = 0.0
    for start, end in chunks:
        progress = _Throttled(lambda f, start=start, end=end: services.job_progress(job.id, (done + f * (end - start)) / total))
        parts.append(asr.transcribe(model, wav, start=start, end=end, language=job.language_code, verbatim=job.verbatim,
                                    on_progress=progress))
        done += end - start

    if len(parts) > 1:
        services.job_advance(job.id, states.MERGING)
    transcript = asr.merge(parts)

    services.job_advance(job.id, states.ALIGNING, detected_language=transcript.language)
    segments = speakers.assign_speakers(transcript.segments, speakers.diarize(wav))
    segments = captions.clean_words(
        segments, verbatim=job.verbatim, tag_audio_events=job.tag_audio_events, language=transcript.language
    )
    cues = captions.build_cues(segments, language=transcript.language)
    results = {
        "txt": captions.transcript_text(segments),
        "srt": captions.to_srt(cues),
        "webvtt": captions.to_webvtt(cues),
    }

    services.job_advance(job.id, states.ALIGNING, 1.0, **results)
    for translation in job.translations.all():
        services.translation_fail(
            translation.id, f"Translation to {translation.language} is not available on this server yet."
        )
    services.job_finish(job.id)
    return True


def sweep_stalled_jobs(now=None) -> dict:
    """Re-queue jobs that have not moved for STALLED_AFTER_SECONDS (their worker died), or fail
    them with a clear error after STALLED_MAX_ATTEMPTS re-queues."""
    from .tasks import start_job, transcribe_job

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.STALLED_AFTER_SECONDS)
    requeued, failed = [], []
    stalled = Job.objects.filter(updated_at__lt=cutoff).exclude(state__in=states.FINAL_STATES)
    for job in stalled.only("id", "state", "attempts"):
        if job.attempts >= settings.STALLED_MAX_ATTEMPTS:
            services.job_fail(job.id, STALLED_ERROR)
            failed.append(job.id)
            continue
        # Claim the job (attempts + updated_at) so two sweepers never both re-queue it.
        claimed = Job.objects.filter(pk=job.id, attempts=job.attempts, updated_at__lt=cutoff).update(
            attempts=job.attempts + 1, updated_at=now
        )
        if not claimed:
            continue
        poll_cache.forget(job.id)
        speech_states = {states.PROCESSING, states.MERGING, states.ALIGNING}
        if job.state == states.UPLOADING and default_storage.exists(_audio_name(job.id)) or job.state in speech_states:
            transcribe_job.delay(str(job.id))
        else:
            start_job.delay(str(job.id))
        requeued.append(job.id)
    return {"requeued": requeued, "failed": failed}
