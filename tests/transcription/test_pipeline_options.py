"""The pipeline's options are built from the settings once and handed down whole (issue 55): each
object says what the settings say, a changed setting is seen at once (override_settings, the
`settings` fixture), and a job's recognition options are the same for every stage that recognises."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from django.conf import settings
from django.test import override_settings

from transcription.models import Job
from transcription.pipeline.recognition.asr import RecognitionOptions
from transcription.stages.pipeline_options import recognition_of, stage_options


def test_each_object_says_what_the_settings_say():
    options = stage_options()
    fetch = options.fetch
    assert fetch.allow_private == settings.ALLOW_PRIVATE_URLS
    assert fetch.max_duration == settings.MAX_VIDEO_SECONDS == options.max_video_seconds
    assert fetch.probe_timeout == settings.FETCH_TIMEOUT_SECONDS
    assert fetch.download_timeout == settings.DOWNLOAD_TIMEOUT_SECONDS
    assert fetch.max_bytes == settings.DOWNLOAD_MAX_BYTES
    assert fetch.stall_timeout == settings.DOWNLOAD_STALL_SECONDS
    assert (fetch.proxy, fetch.cookies_file) == (
        settings.YTDLP_OPTIONS["proxy"],
        settings.YTDLP_OPTIONS["cookies_file"],
    )
    assert options.ffmpeg_timeout == settings.FFMPEG_TIMEOUT_SECONDS
    assert options.recognition_chunk_seconds == settings.RECOGNITION_CHUNK_SECONDS
    assert options.spread_above_seconds == settings.SPREAD_ABOVE_SECONDS
    assert options.spread_chunk_seconds == settings.SPREAD_CHUNK_SECONDS
    assert options.speakers.weights == (settings.SPEAKER_ENCODER_WEIGHTS or None)
    assert options.speakers.threads == (settings.SPEAKER_THREADS or None)
    assert options.speakers.graphs == settings.MODEL_CACHE_DIR / "speakers"
    assert options.burn.timeout == settings.BURN_TIMEOUT_SECONDS
    assert dict(options.translation.models) == settings.TRANSLATION_MODELS
    assert options.translation.packages_dir == settings.TRANSLATION_PACKAGES_DIR
    assert options.translation.timeout == settings.TRANSLATION_TIMEOUT_SECONDS


def test_built_once_and_kept():
    assert stage_options() is stage_options()


def test_a_changed_setting_is_seen_at_once(tmp_path: Path):
    before = stage_options()
    with override_settings(
        ALLOW_PRIVATE_URLS=not settings.ALLOW_PRIVATE_URLS,
        MAX_VIDEO_SECONDS=5,
        YTDLP_OPTIONS={"proxy": "http://proxy.test:3128", "cookies_file": None},
        SPEAKER_ENCODER_WEIGHTS=str(tmp_path / "weights.pt"),
        SPEAKER_THREADS=0,
        BURN_TIMEOUT_SECONDS=7,
        SPREAD_ABOVE_SECONDS=0,
        TRANSLATION_MODELS={"en-de": str(tmp_path / "de")},
    ):
        changed = stage_options()
        assert changed.fetch.allow_private is not before.fetch.allow_private
        assert changed.fetch.max_duration == changed.max_video_seconds == 5
        assert changed.fetch.proxy == "http://proxy.test:3128"
        assert changed.speakers.weights == str(tmp_path / "weights.pt")
        assert changed.speakers.threads is None  # 0: the CPU count, as the pipeline reads None
        assert changed.burn.timeout == 7
        assert changed.spread_above_seconds == 0
        assert changed.translation.ct2_models()["en-de"] == str(tmp_path / "de")
    assert stage_options() == before  # and the settings as they were once the override ends


def test_the_settings_fixture_is_seen_too(settings):
    settings.FFMPEG_TIMEOUT_SECONDS = 11
    assert stage_options().ffmpeg_timeout == 11


def test_installed_translation_packages_are_looked_at_on_each_call(settings, tmp_path: Path):
    """Built once, but a package installed later (manage.py translation_models install) is found:
    the folder is read when the translators are chosen, not when the options are built."""
    settings.TRANSLATION_PACKAGES_DIR = tmp_path
    settings.TRANSLATION_MODELS = {}
    translation = stage_options().translation
    assert translation.ct2_models() == {}
    package = tmp_path / "translate-en_it"
    (package / "model").mkdir(parents=True)
    for name in ("model/model.bin", "sentencepiece.model"):  # what translation_packages counts as sound
        (package / name).write_text("")
    (package / "metadata.json").write_text('{"from_code": "en", "to_code": "it"}')
    assert stage_options().translation is translation
    assert translation.ct2_models() == {"en-it": str(package)}


def test_a_job_is_recognised_with_its_own_options_in_every_stage():
    job = Job(language_code="nl", verbatim=True, prompt="Dashwood, Norland", key_terms=["Zorvex", "Quillberry"])
    assert recognition_of(job) == RecognitionOptions(
        language="nl", verbatim=True, prompt="Dashwood, Norland", key_terms=("Zorvex", "Quillberry")
    )
    # English from the speech model (translation.py): the same, its task translate, without the
    # prompt and key terms
    english = dataclasses.replace(recognition_of(job), language="nl", prompt="", key_terms=(), task="translate")
    assert english == RecognitionOptions(language="nl", verbatim=True, prompt="", task="translate")
    assert recognition_of(Job()) == RecognitionOptions()
