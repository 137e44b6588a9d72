"""Translations, on the asr worker right after `aligning` (they need the audio and the speech
model for speech -> English). One translation that cannot be made fails alone, refunded by
services.translation_fail; the job goes on.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from transcription import states
from transcription.pipeline import burn, translate
from transcription.pipeline.media import audio
from transcription.pipeline.recognition import asr
from transcription.pipeline.transcripts import captions, transcript_edits
from transcription.writes import services

from ..models import Job, JobSegments
from .pipeline_options import recognition_of, stage_options
from .speech_model import speech_model

logger = logging.getLogger(__name__)

TRANSLATION_INTERNAL_ERROR = "An internal error stopped this translation; its minutes have been refunded."

# Errors whose message is written for the client and becomes the translation's `error` as is.
TRANSLATION_ERRORS = (translate.TranslationUnavailable, translate.TranslationFailed, burn.BurnError)


def translation_models() -> dict[str, str]:
    """CTranslate2 folders by pair: the installed packages, then TRANSLATION_MODELS over them."""
    return stage_options().translation.ct2_models()


def translate_all(job: Job, wav: Path) -> None:
    """Make each requested translation still missing. A burned job's translations stay
    `translating` with their subtitles until the burn worker draws them."""
    waiting = [
        t
        for t in job.translations.all()
        if t.state == states.TRANSLATION_PENDING or (t.state == states.TRANSLATION_TRANSLATING and not t.srt)
    ]
    if not waiting:
        return
    services.job_advance(job.id, states.TRANSLATING)
    source_cues = job_cues(job)
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
            services.translation_advance(translation.id, finished, **subtitles(cues))
        services.job_progress(job.id, (index + 1) / len(waiting))


def job_cues(job: Job) -> list[captions.Cue]:
    """The job's cues (times, lines, voices) made from its kept segments, as its SRT and WebVTT
    were: what is translated and burned, never a reading of the SRT (segments as the one source)."""
    kept = JobSegments.objects.filter(job_id=job.id).first()
    return transcript_edits.cues(kept.document(), language=job.detected_language) if kept else []


def subtitles(cues: list[captions.Cue]) -> dict[str, Any]:
    """A translation's `srt`, `webvtt` and the `cues` they were written from, stored together."""
    return {"srt": captions.to_srt(cues), "webvtt": captions.to_webvtt(cues), "cues": captions.cue_records(cues)}


def _translated_cues(job: Job, target: str, source_cues: list[captions.Cue], wav: Path) -> list[captions.Cue]:
    """The job's cues in `target`: same count, same times. Text translators first (CTranslate2
    models installed or named by TRANSLATION_MODELS, then Apertium); English from any language also comes
    from the speech model's own translate task."""
    source = job.detected_language or job.language_code or "en"
    if target == source:
        return source_cues
    translator = translate.find_translator(source, target, stage_options().translation)
    if translator is not None:
        return translate.translate_cues(source_cues, translator, language=target)
    model = speech_model() if target == "en" else None
    if model is not None and model.model.is_multilingual:  # an English-only model cannot translate
        # the job's own options, in the language recognised, without its prompt (written in that language)
        options = dataclasses.replace(recognition_of(job), language=source, prompt="", key_terms=(), task="translate")
        words = []
        for start, end in audio.plan_chunks(wav):
            part = asr.transcribe(model, wav, start=start, end=end, options=options)
            words += [word for segment in part.segments for word in segment.words]
        return translate.align_translated_words(source_cues, words)
    raise translate.TranslationUnavailable(translate.unavailable_message(source, target))
