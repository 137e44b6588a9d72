"""Issue 41, the attack: a file whose header claims about a second while it holds about 55 s of
speech, sent by upload (bin/web) and by link (the test's server on 127.0.0.1), run by a real
worker. The job is charged for the audio it decoded, never for what the header says."""

import pytest
import requests

from billing.models import LedgerEntry
from billing.selectors import account_balance
from harness.media_files import (
    make_long_speech_wav,
    make_lying_matroska,
    make_lying_mp4,
    make_lying_wav,
    media_duration,
)
from tests.support import job_ended

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def lying(tmp_path_factory) -> dict:
    """The speech (its true length) and the lying files made from it."""
    work = tmp_path_factory.mktemp("lying")
    speech = make_long_speech_wav(work / "speech.wav")
    return {
        "seconds": media_duration(speech),
        "speech.mka": make_lying_matroska(work / "speech.mka", speech),
        "speech.mp4": make_lying_mp4(work / "speech.mp4", speech),
        "speech.wav": make_lying_wav(work / "lying.wav", speech),
    }


def upload(web, token, path, name) -> str:
    answer = requests.post(
        f"{web}/v1/api/uploads?filename={name}",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/octet-stream"},
        data=path.read_bytes(),
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def transcribe(web, token, body, timeout=300) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    answer = requests.post(f"{web}/v1/api/transcribe", headers=headers, json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    return job_ended(web, token, answer.json()["id"], timeout)


def assert_charged_for_the_audio(account, job, seconds):
    assert job["state"] == "done", job["error"]
    assert seconds - 1 <= job["duration"] <= seconds + 1, "the length decoded, not the header's second"
    assert account_balance(account.pk) == 600 - job["duration"]
    settled = LedgerEntry.objects.get(job_id=job["id"], source="length")
    assert settled.kind == "charge" and settled.seconds == -(job["duration"] - 1)
    assert "1 s" in settled.reason and f"{job['duration']} s" in settled.reason


@pytest.mark.parametrize("name", ["speech.mka", "speech.mp4"])
def test_an_upload_whose_header_claims_a_second_is_charged_for_its_audio(web, token, account, lying, name):
    upload_id = upload(web, token, lying[name], name)
    job = transcribe(web, token, {"upload_id": upload_id})
    assert_charged_for_the_audio(account, job, lying["seconds"])


def test_a_link_to_a_matroska_that_claims_a_second_is_charged_for_its_audio(web, token, account, lying, media_server):
    (media_server.folder / "lying-speech.mka").write_bytes(lying["speech.mka"].read_bytes())
    job = transcribe(web, token, {"url": media_server.url("/files/lying-speech.mka")})
    assert_charged_for_the_audio(account, job, lying["seconds"])


def test_a_wav_whose_sizes_claim_a_second_is_charged_for_the_second_it_is_read_as(web, token, account, lying):
    """ffmpeg reads a WAV's `data` chunk as long as its size says, when probing and when decoding
    alike: one second is what is processed, and what is charged."""
    upload_id = upload(web, token, lying["speech.wav"], "speech.wav")
    job = transcribe(web, token, {"upload_id": upload_id})
    assert job["state"] == "done", job["error"]
    assert job["duration"] == 1 and account_balance(account.pk) == 600 - 1
    assert not LedgerEntry.objects.filter(job_id=job["id"], source="length").exists()
