"""Jobs and batches as the contract's response bodies: every field, nulls included, nothing more."""

from __future__ import annotations

from django.db.models import Prefetch

from transcription.models import Translation
from transcription.pipeline.transcripts.speaker_names import name_txt, name_webvtt
from transcription.pipeline.voice_print_model import VOICE_PRINT_MODEL
from transcription.storage.artifacts import absolute_url


def translations_in_order():
    """A job's translations in order. Translation's default ordering is ("job", "position"), and
    "job" expands to Job's own ordering (-created_at): the prefetch would join transcription_job
    and sort on it for nothing, since the prefetched rows are grouped per job anyway."""
    return Prefetch("translations", queryset=Translation.objects.order_by("position"))


def _translation_document(translation, names: dict, *, with_text: bool) -> dict:
    return {
        "language": translation.language,
        "state": translation.state,
        "srt": translation.srt if with_text else None,
        "webvtt": name_webvtt(translation.webvtt, names) if with_text else None,
        "burned_video_url": translation.burned_video,
        "error": translation.error,
    }


def job_document(job, *, with_text: bool = True) -> dict:
    """A Job (TranscriptionApiResponse) with storage names where the links go: it does not depend
    on the request, so the poll view can cache it. Batch items leave the text out. Speakers the
    account holder named are called by their names in `txt` and the WebVTT voice spans."""
    names = job.speaker_names or {}
    return {
        "id": str(job.id),
        "state": job.state,
        "progress": job.progress,
        "type": job.type,
        "verbatim": job.verbatim,
        "quality": job.quality,
        "font_size": job.font_size,
        "background": job.background,
        "created_at": job.created_at.isoformat().replace("+00:00", "Z"),
        "updated_at": job.updated_at.isoformat().replace("+00:00", "Z"),
        "txt": name_txt(job.txt, names) if with_text else None,
        "srt": job.srt if with_text else None,
        "webvtt": name_webvtt(job.webvtt, names) if with_text else None,
        "burned_video_url": job.burned_video,
        "video_url": job.url,
        "duration": job.duration,
        "error": job.error,
        "is_preview": job.is_preview,
        "preview_minutes": job.preview_minutes,
        "translations": [_translation_document(t, names, with_text=with_text) for t in job.translations.all()],
    }


def with_links(document: dict, request) -> dict:
    """The document as served: storage names turned into signed, absolute, expiring links."""
    return {
        **document,
        "burned_video_url": absolute_url(document["burned_video_url"], request),
        "translations": [
            {**t, "burned_video_url": absolute_url(t["burned_video_url"], request)} for t in document["translations"]
        ],
    }


def job_payload(job, request, *, with_text: bool = True) -> dict:
    return with_links(job_document(job, with_text=with_text), request)


def batch_payload(batch, request) -> dict:
    """A Batch (BatchStatus): its jobs in queue order, without their text."""
    jobs = batch.jobs.order_by("position").prefetch_related(translations_in_order()).defer("txt", "srt", "webvtt")
    return {
        "batch_id": str(batch.id),
        "title": batch.title,
        "items": [job_payload(job, request, with_text=False) for job in jobs],
    }


def voice_state(voice) -> tuple[str, str | None]:
    """(state, error) of a Voice: `ready` once its embedding is stored, `failed` with its sample's
    job's error, else `processing`. A voice enrolled with an earlier speaker encoder is `failed`:
    its print cannot be compared with today's, so it names no speaker until enrolled again."""
    if voice.embedding is not None and voice.encoder != VOICE_PRINT_MODEL:
        return "failed", (
            "This voice was enrolled with an earlier speaker model and names no speaker now: "
            "delete it and enrol the sample again."
        )
    if voice.embedding is not None:
        return "ready", None
    job = voice.job
    if job is None or job.state == "failed":
        return "failed", (job.error if job is not None else None) or "The sample could not be read."
    return "processing", None


def voice_document(voice) -> dict:
    state, error = voice_state(voice)
    return {
        "id": str(voice.id),
        "name": voice.name,
        "state": state,
        "error": error,
        "seconds": voice.seconds if voice.seconds is not None else (voice.job.duration if voice.job else None),
        "created_at": voice.created_at.isoformat().replace("+00:00", "Z"),
    }
