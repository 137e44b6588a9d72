"""Translations brought up to date with an edited transcript (issue 46), on the asr worker (where
the translation backends are: CTranslate2 models never load in a web process). Only the cues the
edit changed are translated (retranslation_services planned and charged them); each translation
is stored if no later edit planned it again meanwhile, or fails alone and is refunded.

English made by the speech model from the audio (no text translator for the pair) cannot be made
again for a few cues: the audio is gone once the job is done. Such a translation fails with the
reason, and its retranslation is refunded.
"""

from __future__ import annotations

import logging

from transcription import states
from transcription.pipeline import translate
from transcription.pipeline.transcripts import captions, retranslation
from transcription.writes import retranslation_services

from ..models import Job
from .pipeline_options import stage_options
from .translation import TRANSLATION_ERRORS, TRANSLATION_INTERNAL_ERROR, subtitles

logger = logging.getLogger(__name__)


def run_retranslation(job_id) -> None:
    job = Job.objects.filter(pk=job_id, state=states.DONE).first()
    if job is None:
        return  # gone, or being burned again: an edit waits for the job to be done
    for translation in retranslation_services.waiting_translations(job.id):
        redo = translation.redo or {}
        try:
            cues = retranslation.complete(redo["plan"], _translator(job, translation.language_code))
        except TRANSLATION_ERRORS as error:
            retranslation_services.retranslation_fail(translation.id, redo, str(error))
        except Exception:
            logger.exception("job %s: retranslation to %s failed unexpectedly", job.id, translation.language_code)
            retranslation_services.retranslation_fail(translation.id, redo, TRANSLATION_INTERNAL_ERROR)
        else:
            retranslation_services.retranslation_store(translation.id, redo, **subtitles(cues))


def _translator(job: Job, target: str):
    source = job.detected_language or job.language_code or "en"
    translator = translate.find_translator(source, target, stage_options().translation)
    if translator is None:
        raise translate.TranslationUnavailable(
            translate.unavailable_message(source, target)
            + " The cues an edit changed cannot be translated again (the speech model made this translation "
            "from the audio, which is not kept)."
        )

    def run(cues: list[captions.Cue]) -> list[captions.Cue]:
        return translate.translate_cues(cues, translator, language=target)

    return run
