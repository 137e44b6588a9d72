"""OpenAI's speech API as the official `openai` SDK speaks it (sync and async clients), against bin/web
and a real worker: a WAV and an MP4 through every response_format, word timestamps, a prompt,
translation to English, a bad file, an empty balance, the rate limit, the wait's time limit, a client
that goes away, and `curl -F` as the README shows it."""

import asyncio
import re
import subprocess

import openai
import pytest
import requests

from accounts.services import account_create, token_issue
from harness.processes import running_web
from tests.support import job_ended, normalize, wait_for_job, wait_until, wer
from transcription.api.front import ratelimit
from transcription.models import Job

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FORMATS = ["json", "text", "srt", "vtt", "verbose_json", "diarized_json"]
FILLETS = "/usr/share/games/fillets-ng/sound/airplane/nl/"
# "Wat is dit voor raar schip?" "Dit is geen glazen oog, maar een gyroscoop."
DUTCH_LINES = [FILLETS + "let-m-divna.ogg", FILLETS + "let-m-oko.ogg"]
DUTCH_WORDS = {"wat", "dit", "geen", "een", "maar", "voor", "schip", "oog", "glazen"}


def sdk(web, token, **options):
    return openai.OpenAI(base_url=f"{web}/v1", api_key=token, max_retries=0, **options)


def check_answer(answer, response_format: str, reference: str):
    """Each format as OpenAI answers it, and the words read in it."""
    if response_format in ("text", "srt", "vtt"):
        assert isinstance(answer, str)
        if response_format == "srt":
            assert answer.startswith("1\n00:00:0") and " --> " in answer
        if response_format == "vtt":
            assert answer.startswith("WEBVTT")
        text = answer
    else:
        text = answer.text
        assert answer.usage.type == "duration" and 24 <= answer.usage.seconds <= 27
    if response_format == "verbose_json":
        assert answer.language == "english" and 24 <= answer.duration <= 27
        assert [segment.id for segment in answer.segments] == list(range(len(answer.segments)))
        assert all(0 <= s.start < s.end <= answer.duration + 1 for s in answer.segments)
    if response_format == "diarized_json":
        assert answer.task == "transcribe"
        assert {segment.speaker for segment in answer.segments} == {"A"}, "one reader"
        assert all(segment.type == "transcript.text.segment" for segment in answer.segments)
    if response_format in ("srt", "vtt"):
        lines = [line for line in text.splitlines() if line and " --> " not in line and not line.isdigit()]
        text = re.sub(r"</?v[^>]*>", " ", " ".join(line for line in lines if line != "WEBVTT"))  # voice spans
    assert wer(reference, text) <= 0.2, (response_format, text)


def test_a_wav_through_every_format_with_the_sync_client(web, token, recordings):
    client = sdk(web, token)
    for response_format in FORMATS:
        with recordings["wav"].open("rb") as handle:
            answer = client.audio.transcriptions.create(model="whisper-1", file=handle, response_format=response_format)
        check_answer(answer, response_format, recordings["reference"])


def test_an_mp4_through_every_format_with_the_async_client(web, token, recordings):
    async def all_formats():
        async with openai.AsyncOpenAI(base_url=f"{web}/v1", api_key=token, max_retries=0) as client:
            data = recordings["mp4"].read_bytes()
            return await asyncio.gather(
                *(
                    client.audio.transcriptions.create(
                        model="base", file=("interview.mp4", data), response_format=response_format
                    )
                    for response_format in FORMATS
                )
            )

    for response_format, answer in zip(FORMATS, asyncio.run(all_formats()), strict=True):
        check_answer(answer, response_format, recordings["reference"])


def test_word_timestamps_a_prompt_and_the_job_behind_the_answer(web, token, account, recordings):
    client = sdk(web, token)
    with recordings["wav"].open("rb") as handle:
        raw = client.audio.transcriptions.with_raw_response.create(
            model="whisper-1",
            file=handle,
            response_format="verbose_json",
            timestamp_granularities=["word", "segment"],
            prompt="Mr. John Dashwod, Norland Park, Mrs. Dashwod.",
            language="en",
        )
    answer = raw.parse()
    words = answer.words
    assert len(words) >= 60 and all(w.start <= w.end for w in words)
    assert [w.start for w in words] == sorted(w.start for w in words)
    # each word with the model's probability (our addition to OpenAI's shape, read as an extra field)
    sure = [w.model_extra["probability"] for w in words]
    assert all(0 < p <= 1 for p in sure) and len(set(sure)) > 10, sure
    assert "Dashwod" in answer.text, "the prompt's spelling"
    assert normalize(" ".join(w.word for w in words)) == normalize(answer.text)
    assert answer.segments

    job = Job.objects.get(pk=raw.headers["X-Job-Id"])
    assert job.account == account and job.state == "done" and job.prompt.startswith("Mr. John")
    assert raw.headers["X-RateLimit-Limit"] == "60", "a job request, counted like any other"
    poll = requests.get(f"{web}/v1/api/transcription/{job.id}", headers={"Authorization": f"Bearer {token}"})
    assert poll.json()["state"] == "done" and poll.json()["video_url"].startswith("upload:")


def test_dutch_speech_is_put_into_english(web, token, tmp_path):
    dutch = tmp_path / "dutch.ogg"
    listing = tmp_path / "lines.txt"
    listing.write_text("".join(f"file '{line}'\n" for line in DUTCH_LINES))
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-f",
            "concat",
            "-safe",
            "0",
            "-i",
            str(listing),
            "-c",
            "copy",
            str(dutch),
        ],
        check=True,
        timeout=60,
    )
    client = sdk(web, token)
    heard = client.audio.transcriptions.create(model="whisper-1", file=dutch.open("rb"), language="nl")
    assert len(set(normalize(heard.text)) & DUTCH_WORDS) >= 3, heard.text
    english = client.audio.translations.create(model="whisper-1", file=dutch.open("rb"), response_format="verbose_json")
    assert english.language == "english" and english.task == "translate"
    words = set(normalize(english.text))
    assert not words & DUTCH_WORDS and words & {"this", "is", "the", "a", "not"}, english.text


def test_the_models_and_the_refusals_in_openai_s_shape(web, token, tmp_path):
    client = sdk(web, token)
    assert {model.id for model in client.models.list()} >= {"whisper-1"}
    assert client.models.retrieve("whisper-1").id == "whisper-1"

    notes = tmp_path / "notes.wav"
    notes.write_text("not a recording\n" * 100)
    with pytest.raises(openai.BadRequestError) as bad_file:
        client.audio.transcriptions.create(model="whisper-1", file=notes.open("rb"))
    assert bad_file.value.body["param"] == "file" and "ffprobe" in bad_file.value.body["message"]

    with pytest.raises(openai.BadRequestError) as bad_fields:
        client.audio.transcriptions.create(
            model="whisper-9", file=notes.open("rb"), response_format="mp3", language="xx"
        )
    message = bad_fields.value.body["message"]
    assert all(field in message for field in ("model", "response_format", "language")), message
    assert bad_fields.value.body["type"] == "invalid_request_error"

    with pytest.raises(openai.AuthenticationError):
        sdk(web, "vts_not-a-real-token-at-all-000000000000000000").models.list()


def test_an_empty_balance_is_insufficient_quota(web, recordings):
    broke = account_create("broke@example.com", minutes=0)
    with pytest.raises(openai.RateLimitError) as refused:
        sdk(web, token_issue(broke)).audio.transcriptions.create(model="whisper-1", file=recordings["wav"].open("rb"))
    assert refused.value.code == "insufficient_quota" and refused.value.type == "insufficient_quota"
    assert refused.value.response.headers["x-should-retry"] == "false"
    job = Job.objects.get(pk=refused.value.response.headers["X-Job-Id"])
    assert job.state == "failed" and job.failure_reason == "balance"


def test_the_rate_limit_is_a_429_with_the_headers_of_every_door(web, token, account, recordings):
    for _ in range(60):
        ratelimit.hit(account.pk, ratelimit.JOBS)
    with pytest.raises(openai.RateLimitError) as limited:
        sdk(web, token).audio.transcriptions.create(model="whisper-1", file=recordings["wav"].open("rb"))
    headers = limited.value.response.headers
    assert limited.value.code == "rate_limit_exceeded"
    assert headers["X-RateLimit-Limit"] == "60" and headers["X-RateLimit-Remaining"] == "0"
    assert int(headers["Retry-After"]) >= 1
    assert not Job.objects.filter(account=account).exists()


def test_curl_as_the_readme_shows_it(web, token, recordings):
    command = [
        "curl",
        "-sS",
        f"{web}/v1/audio/transcriptions",
        "-H",
        f"Authorization: Bearer {token}",
        "-F",
        f"file=@{recordings['wav']}",
        "-F",
        "model=whisper-1",
        "-F",
        "response_format=srt",
    ]
    srt = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    assert srt.startswith("1\n00:00:0") and "Dashwood" in srt


def test_a_client_that_goes_away_leaves_a_job_that_finishes(web, token, account, recordings):
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(
            f"{web}/v1/audio/transcriptions",
            headers={"Authorization": f"Bearer {token}"},
            files={"file": ("reading.wav", recordings["wav"].read_bytes())},
            data={"model": "whisper-1"},
            timeout=(30, 1.0),
        )
    job = wait_until(lambda: Job.objects.filter(account=account).first(), "the job of the request")
    assert job_ended(web, token, job.id)["state"] == "done"


def test_a_wait_past_the_setting_names_the_job_to_poll(django_db_setup, token, web, recordings, tmp_path):
    with running_web(tmp_path / "web.log", OPENAI_WAIT_TIMEOUT_SECONDS="0.5") as impatient:
        with pytest.raises(openai.APIStatusError) as waited:
            sdk(impatient, token).audio.transcriptions.create(model="whisper-1", file=recordings["wav"].open("rb"))
    job_id = waited.value.response.headers["X-Job-Id"]
    assert waited.value.status_code == 504 and waited.value.code == "job_still_running"
    assert f"/v1/api/transcription/{job_id}" in waited.value.message
    ended = wait_for_job(job_id, timeout=300)
    assert ended.state == "done", "the job went on without its client"
