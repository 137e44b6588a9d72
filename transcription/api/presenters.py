"""Jobs and batches as the contract's response bodies: every field, nulls included, nothing more."""
from __future__ import annotations

from transcription.artifacts import absolute_url


def translation_payload(translation, request, *, with_text: bool = True) -> dict:
    return {
        "language": translation.language,
        "state": translation.state,
        "srt": translation.srt if with_text else None,
        "webvtt": translation.webvtt if with_text else None,
        "burned_video_url": absolute_url(translation.burned_video, request),
        "error": translation.error,
    }


def job_payload(job, request, *, with_text: bool = True) -> dict:
    """A Job (TranscriptionApiResponse). Batch items leave the text out (`with_text=False`)."""
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
        "burned_video_url": absolute_url(job.burned_video, request),
        "video_url": job.url,
        "duration": job.duration,
        "error": job.error,
        "is_preview": job.is_preview,
        "preview_minutes": job.preview_minutes,
        "translations": [translation_payload(t, request, with_text=with_text) for t in job.translations.all()],
    }
