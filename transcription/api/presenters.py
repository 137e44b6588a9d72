"""Jobs and batches as the contract's response bodies: every field, nulls included, nothing more."""

from __future__ import annotations

from django.db.models import Prefetch

from transcription.artifacts import absolute_url
from transcription.models import Translation


def translations_in_order():
    """A job's translations in order. Translation's default ordering is ("job", "position"), and
    "job" expands to Job's own ordering (-created_at): the prefetch would join transcription_job
    and sort on it for nothing, since the prefetched rows are grouped per job anyway."""
    return Prefetch("translations", queryset=Translation.objects.order_by("position"))


def _translation_document(translation, *, with_text: bool) -> dict:
    return {
        "language": translation.language,
        "state": translation.state,
        "srt": translation.srt if with_text else None,
        "webvtt": translation.webvtt if with_text else None,
        "burned_video_url": translation.burned_video,
        "error": translation.error,
    }


def job_document(job, *, with_text: bool = True) -> dict:
    """A Job (TranscriptionApiResponse) with storage names where the links go: it does not depend
    on the request, so the poll view can cache it. Batch items leave the text out."""
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
        "txt": job.txt if with_text else None,
        "srt": job.srt if with_text else None,
        "webvtt": job.webvtt if with_text else None,
        "burned_video_url": job.burned_video,
        "video_url": job.url,
        "duration": job.duration,
        "error": job.error,
        "is_preview": job.is_preview,
        "preview_minutes": job.preview_minutes,
        "translations": [_translation_document(t, with_text=with_text) for t in job.translations.all()],
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
