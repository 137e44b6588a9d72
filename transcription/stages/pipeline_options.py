"""The pipeline's options, typed, built once from the settings (config/settings.py) and handed to the
pipeline whole (issue 55): the stages read no pipeline option from the settings themselves.

Each options object sits beside the pipeline code that takes it (fetch.FetchLimits,
speakers.SpeakerOptions, burn.BurnOptions, translate.TranslationOptions, asr.RecognitionOptions);
this module is where they are made. `stage_options()` is built on first use and kept; a changed
setting (the tests' `settings` fixture, override_settings) forgets it, so the next use sees the
new value. A job's own options (recognition) come from the job: `recognition_of(job)`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from transcription.pipeline.burn import BurnOptions
from transcription.pipeline.fetch import FetchLimits
from transcription.pipeline.recognition.asr import RecognitionOptions
from transcription.pipeline.speakers.options import SpeakerOptions
from transcription.pipeline.translate import TranslationOptions

if TYPE_CHECKING:  # pragma: no cover
    from ..models import Job


@dataclass(frozen=True)
class StageOptions:
    """Every option the stages hand to the pipeline, as the settings name them."""

    fetch: FetchLimits  # probing and downloading a link (its max_duration: MAX_VIDEO_SECONDS)
    max_video_seconds: int  # the longest media a job may be, also once decoded (MAX_VIDEO_SECONDS)
    ffmpeg_timeout: float  # each ffmpeg or ffprobe run on a job's media (FFMPEG_TIMEOUT_SECONDS)
    recognition_chunk_seconds: float  # the longest chunk one worker recognises (RECOGNITION_CHUNK_SECONDS)
    spread_above_seconds: float  # audio longer is recognised across the fleet; 0: never (SPREAD_ABOVE_SECONDS)
    spread_chunk_seconds: float  # the longest chunk of a job spread (SPREAD_CHUNK_SECONDS)
    speakers: SpeakerOptions
    burn: BurnOptions
    translation: TranslationOptions


@functools.cache
def stage_options() -> StageOptions:
    return StageOptions(
        fetch=FetchLimits(
            allow_private=settings.ALLOW_PRIVATE_URLS,
            max_duration=settings.MAX_VIDEO_SECONDS,
            probe_timeout=settings.FETCH_TIMEOUT_SECONDS,
            download_timeout=settings.DOWNLOAD_TIMEOUT_SECONDS,
            max_bytes=settings.DOWNLOAD_MAX_BYTES,
            stall_timeout=settings.DOWNLOAD_STALL_SECONDS,
            proxy=settings.YTDLP_OPTIONS["proxy"],
            cookies_file=settings.YTDLP_OPTIONS["cookies_file"],
        ),
        max_video_seconds=settings.MAX_VIDEO_SECONDS,
        ffmpeg_timeout=settings.FFMPEG_TIMEOUT_SECONDS,
        recognition_chunk_seconds=settings.RECOGNITION_CHUNK_SECONDS,
        spread_above_seconds=settings.SPREAD_ABOVE_SECONDS,
        spread_chunk_seconds=settings.SPREAD_CHUNK_SECONDS,
        speakers=SpeakerOptions(
            weights=settings.SPEAKER_ENCODER_WEIGHTS or None,
            threads=settings.SPEAKER_THREADS or None,
            graphs=settings.MODEL_CACHE_DIR / "speakers",  # the diarization child's ONNX graphs, built by the first
        ),
        burn=BurnOptions(timeout=settings.BURN_TIMEOUT_SECONDS),
        translation=TranslationOptions(
            models=dict(settings.TRANSLATION_MODELS),
            packages_dir=settings.TRANSLATION_PACKAGES_DIR,
            timeout=settings.TRANSLATION_TIMEOUT_SECONDS,
        ),
    )


@receiver(setting_changed)
def _forget_options(**kwargs: Any) -> None:
    stage_options.cache_clear()


def recognition_of(job: Job) -> RecognitionOptions:
    """What the job asks of recognition: the same for its own chunks, a spread chunk recognised by
    another worker, and (with task="translate", without the prompt and key terms) English from the speech model."""
    return RecognitionOptions(
        language=job.language_code, verbatim=job.verbatim, prompt=job.prompt, key_terms=tuple(job.key_terms or ())
    )
