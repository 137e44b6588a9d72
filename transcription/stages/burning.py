"""The burn stage (burn queue): burning -> done. The job's own video first (if it cannot be drawn
the job fails and is refunded), then one per translation (one that cannot be drawn fails alone).
A video made before a lost worker is not drawn again.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.core.files.storage import default_storage

from transcription import states
from transcription.pipeline.transcripts import captions
from transcription.storage import files
from transcription.writes import reburn_services, services

from ..models import Job, Translation
from .reburning import draw_video, reburn_stage
from .runner import Throttled, run_stage
from .translation import TRANSLATION_ERRORS, TRANSLATION_INTERNAL_ERROR, job_cues

logger = logging.getLogger(__name__)


def run_burn_stage(job_id) -> bool:
    return run_stage(job_id, _burn_stage)


def _burn_stage(job: Job, directory: Path) -> bool:
    if reburn_services.is_reburn(job):  # a done job's videos drawn again on request (issue 46)
        return reburn_stage(job, directory)
    services.job_advance(job.id, states.BURNING)
    source = files.fetch(files.source_name(job.id), directory / "source.video")
    # the job's cues from its kept segments, each translation's as kept with it: no SRT read back
    videos: list[tuple[Translation | None, str | None, list[captions.Cue]]] = [
        (None, job.detected_language, job_cues(job))
    ]
    videos += [
        (t, t.language_code, captions.from_records(t.cues))
        for t in job.translations.all()
        if t.state in (states.TRANSLATION_TRANSLATING, states.TRANSLATION_BURNING) and t.srt
    ]
    for index, (translation, language, cues) in enumerate(videos):
        if translation is None and job.burned_video and default_storage.exists(job.burned_video):
            continue  # made before the worker was lost

        def report(fraction: float, index: int = index) -> None:
            services.job_progress(job.id, (index + fraction) / len(videos))

        progress = Throttled(report)
        output = directory / "burned.mp4"
        if translation is not None:
            services.translation_advance(translation.id, states.TRANSLATION_BURNING)
        try:
            draw_video(job, source, cues, output, language, progress)
            name = files.store(output, files.burned_name(job.id, language if translation else None))
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
    return False
