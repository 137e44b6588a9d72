"""Translated subtitles and burned-in videos through the real API, a real Celery worker (media,
asr and burn queues), yt-dlp, ffmpeg with libass, Apertium and the real speech model."""

import json
import subprocess

import numpy as np
import pysubs2
import pytest

from billing.models import LedgerEntry
from billing.selectors import account_balance
from harness.processes import running_worker
from tests.pipeline.tiny_marian import build_argos_package, build_tiny_marian, package_index
from tests.support import poll_until_done, submit
from transcription.pipeline.transcripts.captions import from_srt, to_srt
from transcription.pipeline.translate import CT2Translator, translate_cues, translation_packages

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def tiny_german(tmp_path_factory):
    """A CTranslate2 model folder (the tests' tiny copy model) that the worker serves English to German with."""
    return build_tiny_marian(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def installed_packages(tmp_path_factory, tiny_german):
    """English to Italian installed as an operator would (`translation_models install en-it`), from
    a package of the tiny copy model served on 127.0.0.1."""
    root = tmp_path_factory.mktemp("index")
    package = build_argos_package(tiny_german, root / "en_it.argosmodel", "en", "it")
    folder = tmp_path_factory.mktemp("packages")
    with package_index(root, {("en", "it"): package}) as index:
        translation_packages.install("en", "it", index, folder)
    return folder


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory, tiny_german, installed_packages):
    with running_worker(
        tmp_path_factory.mktemp("worker") / "worker.log",
        ALLOW_PRIVATE_URLS="true",
        TRANSLATION_MODELS=f"en-de={tiny_german}",
        TRANSLATION_PACKAGES_DIR=str(installed_packages),
    ) as process:
        yield process


def cues(srt: str) -> list[tuple[int, int, str]]:
    return [(event.start, event.end, event.plaintext) for event in pysubs2.SSAFile.from_string(srt, format_="srt")]


def fetch(client, url: str, dest):
    """Download a result link without the bearer token, as a browser would."""
    response = client.get("/" + url.split("://", 1)[1].split("/", 1)[1])
    assert response.status_code == 200, response.content[:200]
    dest.write_bytes(b"".join(response.streaming_content))
    return dest


def probe(path) -> dict:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    return json.loads(out)


def frame(path, seconds: float, width: int, height: int) -> np.ndarray:
    raw = subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-ss",
            f"{seconds:.2f}",
            "-i",
            str(path),
            "-frames:v",
            "1",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "gray",
            "-",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    return np.frombuffer(raw, np.uint8).reshape(height, width).astype(int)


def test_subtitles_translated_to_spanish_and_catalan_keep_every_cue(worker, api, account, videos):
    job_id = submit(api, "/v1/api/subtitles", {"url": videos["librivox"], "target_languages": ["es", "Catalan", "jpn"]})
    body, seen = poll_until_done(api, job_id)
    assert body["state"] == "done", body["error"]
    assert "translating" in {state for state, _ in seen} or body["translations"]
    source = cues(body["srt"])
    assert len(source) >= 5
    by_language = {t["language"]: t for t in body["translations"]}
    assert list(by_language) == ["es", "Catalan", "jpn"], "in the order sent, as sent"

    spanish, catalan = by_language["es"], by_language["Catalan"]
    for translation in (spanish, catalan):
        assert translation["state"] == "done", translation["error"]
        assert translation["error"] is None and translation["burned_video_url"] is None
        translated = cues(translation["srt"])
        assert [(s, e) for s, e, _ in translated] == [(s, e) for s, e, _ in source], "same cues, same times"
        assert all(text.strip() for _, _, text in translated)
        assert translation["webvtt"].startswith("WEBVTT")
        assert not any(mark in translation["srt"] for mark in ("*", "#", "@"))
        parsed = from_srt(translation["srt"])
        for before, cue in zip(parsed, parsed[1:]):
            assert 1 <= len(cue.lines) <= 2 and all(len(line) <= 42 for line in cue.lines), cue.lines
            if not before.lines[-1].endswith((".", "?", "!")):
                assert not cue.lines[0][0].isupper() or cue.lines[0].split()[0] in {"John", "Dashwood"}, cue.lines
    spanish_text = " ".join(text for _, _, text in cues(spanish["srt"])).lower()
    catalan_text = " ".join(text for _, _, text in cues(catalan["srt"])).lower()
    english_text = " ".join(text for _, _, text in source).lower()
    assert {" el ", " de ", " que "} & set(f" {w} " for w in spanish_text.split()) and spanish_text != english_text
    assert {" els ", " i ", " amb ", " va "} & set(f" {w} " for w in catalan_text.split())

    japanese = by_language["jpn"]
    assert japanese["state"] == "failed"
    assert japanese["srt"] is None
    assert japanese["error"].startswith("Translation from English to Japanese is not available on this server")
    assert "translation_models install en-ja" in japanese["error"]
    duration = body["duration"]
    refund = LedgerEntry.objects.get(account=account, kind="refund", source="translation")
    assert refund.seconds == duration, "the failed language's share comes back"
    assert account_balance(account.pk) == 600 - duration * 4 + duration


def test_ctranslate2_models_named_in_the_settings_or_installed_translate_their_pairs(
    worker, api, videos, tiny_german, installed_packages
):
    """TRANSLATION_MODELS=en-de=<folder> in the worker's environment, and an en-it package installed
    under TRANSLATION_PACKAGES_DIR with no setting naming it: German and Italian come from those
    models (the tiny copy model, so their output can be computed here), cue for cue."""
    job_id = submit(api, "/v1/api/subtitles", {"url": videos["librivox"], "target_languages": ["German", "it"]})
    body, _ = poll_until_done(api, job_id)
    assert body["state"] == "done", body["error"]
    german, italian = body["translations"]
    for translation, folder, code in ((german, tiny_german, "de"), (italian, installed_packages / "en-it", "it")):
        assert translation["state"] == "done", translation["error"]
        expected = translate_cues(from_srt(body["srt"]), CT2Translator(folder, source="en", target=code), language=code)
        assert translation["srt"] == to_srt(expected)
        assert [(s, e) for s, e, _ in cues(translation["srt"])] == [(s, e) for s, e, _ in cues(body["srt"])]


def test_english_subtitles_from_dutch_speech_come_from_the_speech_model(worker, api, videos):
    job_id = submit(api, "/v1/api/subtitles", {"url": videos["monologue"], "target_languages": ["English"]})
    body, _ = poll_until_done(api, job_id)
    assert body["state"] == "done", body["error"]
    [english] = body["translations"]
    assert english["state"] == "done", english["error"]
    source, translated = cues(body["srt"]), cues(english["srt"])
    assert [(s, e) for s, e, _ in translated] == [(s, e) for s, e, _ in source]
    words = " ".join(text for _, _, text in translated).lower().split()
    assert {"the", "i", "you", "is", "a", "to", "and", "it"} & set(words), words
    assert " ".join(text for _, _, text in source).lower() != " ".join(words)


def test_burned_videos_in_the_spoken_and_each_translated_language(worker, api, client, account, videos, tmp_path):
    job_id = submit(
        api,
        "/v1/api/burn-subtitles",
        {"url": videos["librivox"], "target_languages": ["Spanish", "ca", "Japanese"], "background": True},
    )
    body, seen = poll_until_done(api, job_id, timeout=900)
    assert body["state"] == "done", body["error"]
    burning = [progress for state, progress in seen if state == "burning"]
    assert len(set(burning)) >= 3, f"progress moves while burning: {seen}"
    from transcription.models import Job

    timeline = [state for state, _ in Job.objects.get(pk=job_id).timeline]
    assert timeline[-4:] == ["aligning", "translating", "burning", "done"]
    spanish, catalan, japanese = body["translations"]
    assert (spanish["language"], catalan["language"], japanese["language"]) == ("Spanish", "ca", "Japanese")
    for translation in (spanish, catalan):
        assert translation["state"] == "done", translation["error"]
    assert japanese["state"] == "failed" and japanese["burned_video_url"] is None
    assert japanese["error"].startswith("Translation from English to Japanese is not available on this server")
    assert "translation_models install en-ja" in japanese["error"]
    links = [body["burned_video_url"], spanish["burned_video_url"], catalan["burned_video_url"]]
    assert len(set(links)) == 3, "one video per language"

    paths = [fetch(client, link, tmp_path / f"{i}.mp4") for i, link in enumerate(links)]
    for path in paths:
        info = probe(path)
        video = next(s for s in info["streams"] if s["codec_type"] == "video")
        audio = next(s for s in info["streams"] if s["codec_type"] == "audio")
        assert (video["width"], video["height"]) == (1280, 720), "720p keeps the 16:9 source's shape"
        assert video["codec_name"] == "h264" and audio["codec_name"] == "aac"
        assert abs(float(info["format"]["duration"]) - body["duration"]) <= 1.0

    # At a cue's middle each language's video shows other text in the lower part, the same picture above.
    start, end, _ = cues(body["srt"])[1]
    moment = (start + end) / 2000
    original, *translated = (frame(path, moment, 1280, 720) for path in paths)
    for other in translated:
        assert np.abs(original[480:] - other[480:]).mean() > 1.0
        assert np.abs(original[:300] - other[:300]).mean() < 1.0

    duration = body["duration"]
    refund = LedgerEntry.objects.get(account=account, kind="refund", source="translation")
    assert refund.seconds == duration * (1 + 3), "the failed language's translation and video come back"
    assert account_balance(account.pk) == 600 - duration * 3 - 3 * duration * (1 + 3) + duration * (1 + 3)
