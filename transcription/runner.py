"""Runs a job's stages: the glue between Celery tasks, the services that write jobs, and the
pipeline stages (plain functions that know nothing of Django).

Everything a job writes to local disk lives in WORK_DIR/<job id>/ and is removed when the stage
ends, whatever happens. The converted audio travels from the media worker to the speech worker
through Django's storage ("uploading"), and a burned job's source video from the media worker to
the burn worker, so the three may run on different machines. Burned videos are stored under
burned/<job id>/ and handed out by signed links (artifacts.py).

Queues: media (preparing .. uploading) -> asr (processing .. translating) -> burn (burning).
A stage re-delivered after a lost worker starts again from what the job already has: the speech
stage of a job in `translating` only makes the translations still missing, the burn stage only
the videos still missing.
"""
from __future__ import annotations

import logging
import math
import shutil
import threading
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from billing.services import job_charge

from . import poll_cache, services, states
from .models import Job, Translation
from .pipeline import asr, audio, burn, captions, fetch, speakers, translate, whisper_model
from .pipeline.types import Transcript

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "An internal error stopped this job; its minutes have been refunded. Please try again."
STALLED_ERROR = "The job stopped making progress (a worker was lost) and was given up; its minutes have been refunded."
TRANSLATION_INTERNAL_ERROR = "An internal error stopped this translation; its minutes have been refunded."

# Errors whose message is written for the client and becomes the job's `error` as is.
CLIENT_ERRORS = (fetch.FetchError, audio.AudioError, whisper_model.ModelUnavailable, burn.BurnError)
# The same for one translation: it fails alone, the job goes on.
TRANSLATION_ERRORS = (translate.TranslationUnavailable, translate.TranslationFailed, burn.BurnError)


def _work_dir(job_id) -> Path:
    directory = Path(settings.WORK_DIR) / str(job_id)
    shutil.rmtree(directory, ignore_errors=True)  # a retried stage starts clean
    directory.mkdir(parents=True)
    return directory


def _audio_name(job_id) -> str:
    return f"audio/{job_id}.wav"


def _source_name(job_id) -> str:
    """A burned job's downloaded video, kept in storage until the job ends."""
    return f"sources/{job_id}.video"


def _burned_name(job_id, language: str | None) -> str:
    """Storage name of a burned video; the last part is the file name a browser saves."""
    return f"burned/{job_id}/video.{language}.mp4" if language else f"burned/{job_id}/video.mp4"


def _store(local: Path, name: str) -> str:
    """Copy a local file into storage under exactly `name` (replacing an older copy)."""
    default_storage.delete(name)
    with local.open("rb") as handle:
        return default_storage.save(name, File(handle))


def _fetch(name: str, local: Path) -> Path:
    with default_storage.open(name, "rb") as source, local.open("wb") as target:
        shutil.copyfileobj(source, target, 1024 * 1024)
    return local


class _Throttled:
    """Calls `update(fraction)` at most once a second: progress is a database write."""

    def __init__(self, update):
        self.update, self.last = update, 0.0

    def __call__(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self.last >= 1.0 or fraction >= 1.0:
            self.last = now
            self.update(fraction)


class _Claim:
    """A worker's claim on the job whose stage it runs, renewed every WORKER_HEARTBEAT_SECONDS by a
    thread while the stage runs (`with claim:`).

    Progress alone cannot show that a worker is alive: a download, the speech model's translate
    task or a 4K encode of a long video can run for many minutes without the bar moving. The claim
    lapses after four missed beats, so a worker that dies frees its job for the sweeper. The
    claim's expiry is its token: a worker whose claim lapsed and was taken over neither renews
    nor releases the new holder's claim.
    """

    BEATS_PER_CLAIM = 4

    def __init__(self, job_id):
        self.job_id = job_id
        self.interval = float(settings.WORKER_HEARTBEAT_SECONDS)
        self.seconds = self.interval * self.BEATS_PER_CLAIM
        self.until = None  # the expiry this worker last wrote
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"heartbeat-{job_id}", daemon=True)

    def take(self) -> bool:
        self.until = services.job_claim(self.job_id, self.seconds)
        return self.until is not None

    def release(self) -> None:
        services.job_release(self.job_id, self.until)

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                try:
                    renewed = services.job_renew_claim(self.job_id, self.until, self.seconds)
                except Exception:  # a lost database connection: try again at the next beat
                    logger.exception("job %s: heartbeat failed", self.job_id)
                    connection.close()
                    continue
                if renewed is None:
                    logger.warning("job %s: this worker's claim lapsed and was taken over", self.job_id)
                    return
                self.until = renewed
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self) -> "_Claim":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()


def _run(job_id, stage) -> bool:
    """Run `stage(job)` for a job that has not ended and that no other worker is running; fail the
    job on any error. True on success."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.state in states.FINAL_STATES:
        return False
    claim = _Claim(job_id)
    if not claim.take():
        logger.warning("job %s: another worker is running it; this delivery of the task is dropped", job_id)
        return False
    directory = _work_dir(job_id)
    try:
        with claim:
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
        _delete_shared_copies(job_id)
        claim.release()
    return False


def _delete_shared_copies(job_id) -> None:
    """The audio is only needed until the speech stage is over, the source video until the job ends."""
    state = Job.objects.filter(pk=job_id).values_list("state", flat=True).first()
    if state is None or state in states.FINAL_STATES or state == states.BURNING:
        default_storage.delete(_audio_name(job_id))
    if state is None or state in states.FINAL_STATES:
        default_storage.delete(_source_name(job_id))


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
    burned = job.type == "burned"
    services.job_advance(job.id, states.PREPARING)
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
        max_duration=settings.MAX_VIDEO_SECONDS, video=burned,
    )

    services.job_advance(job.id, states.CONVERTING)
    if burned:
        burn.probe_video(source)  # no picture to draw on: fail now, not after recognition
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

    if burned and max_seconds is not None:
        source = audio.cut_media(source, directory / f"preview{source.suffix}", seconds=max_seconds,
                                 timeout=settings.FFMPEG_TIMEOUT_SECONDS)

    services.job_advance(job.id, states.UPLOADING)
    _store(wav, _audio_name(job.id))
    if burned:
        services.job_advance(job.id, states.UPLOADING, 0.5)
        _store(source, _source_name(job.id))
    services.job_advance(job.id, states.UPLOADING, 1.0)
    return True


def run_speech_stages(job_id) -> bool:
    """processing -> merging -> aligning -> translating, then done, or burning for a burned job.
    True when the job goes on to the burn worker."""
    return _run(job_id, _speech_stages)


def _speech_stages(job: Job, directory: Path) -> bool:
    if job.state == states.BURNING:  # a late re-delivery: the burn worker has it
        return False
    wav = _fetch(_audio_name(job.id), directory / "audio.wav")
    if job.state != states.TRANSLATING:  # a re-delivered job in `translating` already has its subtitles
        _recognise(job, wav)
        job.refresh_from_db()
    _translate_all(job, wav)
    if job.type == "burned":
        services.job_advance(job.id, states.BURNING)
        return True
    services.job_finish(job.id)
    return False


def _recognise(job: Job, wav: Path) -> None:
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


def _translate_all(job: Job, wav: Path) -> None:
    """Make each requested translation still missing; one that cannot be made fails alone (and is
    refunded by translation_fail). A burned job's translations stay `translating` with their
    subtitles until the burn worker draws them."""
    waiting = [t for t in job.translations.all() if t.state == states.TRANSLATION_PENDING
               or (t.state == states.TRANSLATION_TRANSLATING and not t.srt)]
    if not waiting:
        return
    services.job_advance(job.id, states.TRANSLATING)
    source_cues = captions.from_srt(job.srt or "")
    finished = states.TRANSLATION_TRANSLATING if job.type == "burned" else states.TRANSLATION_DONE
    for index, translation in enumerate(waiting):
        services.translation_advance(translation.id, states.TRANSLATION_TRANSLATING)
        try:
            cues = _translated_cues(job, translation.language_code, source_cues, wav)
        except TRANSLATION_ERRORS as error:
            services.translation_fail(translation.id, str(error))
        except Exception:
            logger.exception("job %s: translation to %s failed unexpectedly", job.id, translation.language_code)
            services.translation_fail(translation.id, TRANSLATION_INTERNAL_ERROR)
        else:
            services.translation_advance(translation.id, finished, srt=captions.to_srt(cues),
                                         webvtt=captions.to_webvtt(cues))
        services.job_progress(job.id, (index + 1) / len(waiting))


def _translated_cues(job: Job, target: str, source_cues: list[captions.Cue], wav: Path) -> list[captions.Cue]:
    """The job's cues in `target`: same count, same times. Text translators first (CTranslate2
    models named by TRANSLATION_MODELS, then Apertium); English from any language also comes
    from the speech model's own translate task."""
    source = job.detected_language or job.language_code or "en"
    if target == source:
        return source_cues
    translator = translate.find_translator(source, target, ct2_models=settings.TRANSLATION_MODELS,
                                           timeout=settings.TRANSLATION_TIMEOUT_SECONDS)
    if translator is not None:
        return translate.translate_cues(source_cues, translator, language=target)
    model = whisper_model.load_model(settings.WHISPER_MODEL, settings.MODEL_CACHE_DIR) if target == "en" else None
    if model is not None and model.model.is_multilingual:  # an English-only model cannot translate
        words = []
        for start, end in audio.plan_chunks(wav):
            part = asr.transcribe(model, wav, start=start, end=end, language=source, verbatim=job.verbatim,
                                  task="translate")
            words += [word for segment in part.segments for word in segment.words]
        return translate.align_translated_words(source_cues, words)
    raise translate.TranslationUnavailable(translate.unavailable_message(source, target))


def run_burn_stage(job_id) -> bool:
    """burning -> done: one video in the spoken language, then one per translation."""
    return _run(job_id, _burn_stage)


def _burn_stage(job: Job, directory: Path) -> bool:
    services.job_advance(job.id, states.BURNING)
    source = _fetch(_source_name(job.id), directory / "source.video")
    translations = [t for t in job.translations.all()
                    if t.state in (states.TRANSLATION_TRANSLATING, states.TRANSLATION_BURNING) and t.srt]
    videos: list[tuple[Translation | None, str | None, str]] = [(None, job.detected_language, job.srt or "")]
    videos += [(t, t.language_code, t.srt) for t in translations]
    for index, (translation, language, srt) in enumerate(videos):
        if translation is None and job.burned_video and default_storage.exists(job.burned_video):
            continue  # made before the worker was lost
        progress = _Throttled(lambda f, index=index: services.job_progress(job.id, (index + f) / len(videos)))
        output = directory / "burned.mp4"
        if translation is not None:
            services.translation_advance(translation.id, states.TRANSLATION_BURNING)
        try:
            burn.burn(
                source, captions.from_srt(srt), output, quality=job.quality, font_size=job.font_size,
                background=job.background, language=language, on_progress=progress,
                timeout=settings.BURN_TIMEOUT_SECONDS,
            )
            name = _store(output, _burned_name(job.id, language if translation else None))
        except Exception as error:
            if translation is None:
                raise  # the job's own video: the job fails (and is refunded)
            if isinstance(error, TRANSLATION_ERRORS):
                services.translation_fail(translation.id, str(error))
            else:
                logger.exception("job %s: burning the %s video failed unexpectedly", job.id, language)
                services.translation_fail(translation.id, TRANSLATION_INTERNAL_ERROR)
            continue
        finally:
            output.unlink(missing_ok=True)
        if translation is None:
            services.job_advance(job.id, states.BURNING, burned_video=name)
        else:
            services.translation_advance(translation.id, states.TRANSLATION_DONE, burned_video=name)
    services.job_finish(job.id)
    return True


def delete_expired_artifacts(now=None) -> dict:
    """Delete burned videos of jobs that ended more than ARTIFACT_RETENTION_DAYS ago (their links
    then answer 410), and any audio or source video left behind by a job that has ended."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.ARTIFACT_RETENTION_DAYS)
    expired = (
        Job.objects.filter(state__in=states.FINAL_STATES, updated_at__lt=cutoff)
        .filter(Q(burned_video__isnull=False) | Q(translations__burned_video__isnull=False))
        .distinct()
    )
    videos = 0
    for job in expired.prefetch_related("translations"):
        names = [job.burned_video] + [t.burned_video for t in job.translations.all()]
        for name in filter(None, names):
            default_storage.delete(name)
            videos += 1
        services.job_forget_artifacts(job.id)
    leftovers = 0
    for folder in ("audio", "sources"):
        try:
            _, files = default_storage.listdir(folder)
        except FileNotFoundError:
            continue
        for file_name in files:
            job_id = file_name.split(".", 1)[0]
            try:
                running = Job.objects.filter(pk=job_id).exclude(state__in=states.FINAL_STATES).exists()
            except ValidationError:  # not a job id: nothing of ours
                continue
            if not running:
                default_storage.delete(f"{folder}/{file_name}")
                leftovers += 1
    return {"videos": videos, "leftovers": leftovers}


def _uploaded(job: Job) -> bool:
    """Whether the media stage handed over everything the speech and burn stages read."""
    needed = [_audio_name(job.id)] + ([_source_name(job.id)] if job.type == "burned" else [])
    return all(default_storage.exists(name) for name in needed)


def _send_again(job: Job) -> None:
    """Queue the task of the stage a job is in (its worker died, or its message was lost)."""
    from .tasks import burn_job, start_job, transcribe_job

    poll_cache.forget(job.id)
    speech_states = {states.PROCESSING, states.MERGING, states.ALIGNING, states.TRANSLATING}
    if job.state == states.BURNING:
        burn_job.delay(str(job.id))
    elif job.state == states.UPLOADING and _uploaded(job) or job.state in speech_states:
        transcribe_job.delay(str(job.id))
    else:
        start_job.delay(str(job.id))


def sweep_stalled_jobs(now=None) -> dict:
    """Send again the task of every job that no worker is running and that nothing would run.

    - `requeued`: the worker's claim on the job has lapsed (its heartbeat stopped: the worker died
      mid-stage). The stage is queued again at once; after STALLED_MAX_ATTEMPTS such re-queues
      the job is `failed` with STALLED_ERROR and refunded, so a video that kills its worker every
      time cannot go on killing workers.
    - `resent`: nobody has claimed the job and it has not changed for STALLED_AFTER_SECONDS. It is
      waiting in a queue behind other work, or its message was lost (a broker restarted without
      persistence). Its task is sent again, at most once per STALLED_AFTER_SECONDS, and that costs
      no attempt: a backlog never fails jobs. A duplicate delivery is harmless; it finds the job
      claimed, moved on or ended, and does nothing.

    A job whose worker still renews its claim is working, however long its bar stands still.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.STALLED_AFTER_SECONDS)
    requeued, resent, failed = [], [], []
    running = Job.objects.exclude(state__in=states.FINAL_STATES).only("id", "state", "attempts", "type", "lease_until")
    for job in running.filter(lease_until__lt=now):
        if job.attempts >= settings.STALLED_MAX_ATTEMPTS:
            if services.job_fail(job.id, STALLED_ERROR):
                failed.append(job.id)
            continue
        # Take the lapsed claim (compare and set) so two sweepers never both re-queue the job.
        if Job.objects.filter(pk=job.id, attempts=job.attempts, lease_until=job.lease_until).update(
                attempts=job.attempts + 1, lease_until=None, updated_at=now):
            _send_again(job)
            requeued.append(job.id)
    for job in running.filter(lease_until__isnull=True, updated_at__lt=cutoff):
        if Job.objects.filter(pk=job.id, lease_until__isnull=True, updated_at__lt=cutoff).update(updated_at=now):
            _send_again(job)
            resent.append(job.id)
    return {"requeued": requeued, "resent": resent, "failed": failed}
