"""The asr worker's one Whisper model, as the settings name it: loaded once per process and shared by
every stage that recognises (a job's speech stage, a spread chunk, English from the translate task),
with room for ASR_JOBS_AT_ONCE jobs at once."""

from django.conf import settings

from transcription.pipeline.recognition import whisper_model


def speech_model():
    return whisper_model.load_model(
        settings.WHISPER_MODEL, settings.MODEL_CACHE_DIR, jobs_at_once=settings.ASR_JOBS_AT_ONCE
    )
