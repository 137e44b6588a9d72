"""A done burned job's videos drawn again from its subtitles as they are now (issue 46), by the
burn task (burning.py hands a re-burn here). The job's own video first, then each translation's
that was made before; each new video replaces its old one once stored. Nothing here fails the job:
the job's own video that cannot be drawn ends the re-burn with the old videos and a refund
(reburn_services.reburn_end); a translation's keeps its old video and gets its share back.
"""

from __future__ import annotations

import logging
from pathlib import Path

from transcription import states
from transcription.pipeline import burn
from transcription.pipeline.transcripts import captions
from transcription.storage import files
from transcription.writes import reburn_services, services

from ..models import Job, Translation
from .pipeline_options import stage_options
from .runner import Throttled
from .translation import job_cues

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "an internal error"


def draw_video(
    job: Job, source: Path, cues: list[captions.Cue], output: Path, language: str | None, on_progress
) -> None:
    """One of the job's videos drawn with `cues` in the job's style: the first burn's and a
    re-burn's alike (burning.py), no longer than the job was charged for (issue 56)."""
    burn.burn(
        source,
        cues,
        output,
        quality=job.quality,
        font_size=job.font_size,
        background=job.background,
        language=language,
        on_progress=on_progress,
        options=stage_options().burn,
        max_seconds=charged_seconds(job),
    )


def charged_seconds(job: Job) -> int | None:
    """The seconds of the job's media it was charged for: its settled `duration` (issue 41: the
    longest stream the pipeline processes, issue 56), or its preview's when shorter. None only for a
    job never charged, which no stage reaches."""
    preview = job.preview_minutes * 60 if job.is_preview and job.preview_minutes is not None else None
    if job.duration is None:
        return preview
    return min(job.duration, preview) if preview is not None else job.duration


def reburn_stage(job: Job, directory: Path) -> bool:
    try:
        _draw(job, directory)
    except burn.BurnError as error:
        reburn_services.reburn_end(job.id, error=str(error))
    except FileNotFoundError:  # the source video was deleted meanwhile (retention)
        reburn_services.reburn_end(job.id, error="the source video is no longer kept")
    except Exception:
        logger.exception("job %s: burning again failed unexpectedly", job.id)
        reburn_services.reburn_end(job.id, error=INTERNAL_ERROR)
    return False


def _draw(job: Job, directory: Path) -> None:
    source = files.local_copy(files.source_name(job.id), directory / "source.video")
    translations = [t for t in job.translations.all() if t.state == states.TRANSLATION_BURNING]
    # the job's cues from its kept segments, each translation's as kept with it: no SRT read back
    videos: list[tuple[Translation | None, str | None, list[captions.Cue]]] = [
        (None, job.detected_language, job_cues(job))
    ]
    videos += [(t, t.language_code, captions.from_records(t.cues)) for t in translations]
    made = None
    for index, (translation, language, cues) in enumerate(videos):

        def report(fraction: float, index: int = index) -> None:
            services.job_progress(job.id, (index + fraction) / len(videos))

        output = directory / "burned.mp4"
        try:
            draw_video(job, source, cues, output, language, Throttled(report))
            name = files.store(output, files.burned_name(job.id, language if translation else None))
        except Exception as error:
            if translation is None:
                raise  # the job's own video: the re-burn ends with the old videos
            logger.warning("job %s: the %s video was not burned again: %s", job.id, language, error)
            message = str(error) if isinstance(error, burn.BurnError) else INTERNAL_ERROR
            reburn_services.reburn_video_failed(translation.id, message)
            continue
        finally:
            output.unlink(missing_ok=True)
        if translation is None:
            made = name
        else:
            services.translation_advance(translation.id, states.TRANSLATION_DONE, burned_video=name)
    reburn_services.reburn_end(job.id, burned_video=made)
