"""Enrolled voices end to end: samples read by a real worker (fetch, ffmpeg, diarization), then a
later job whose speaker sounds like one is called by its name; real voices of Fish Fillets NG's
actors served from 127.0.0.1."""

import json
import subprocess

import pytest
from django.test import Client

from billing.selectors import account_balance
from harness.processes import running_worker
from harness.speaker_audio import clips, conversation
from tests.support import poll_until_done, submit, wait_for_job, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_worker(tmp_path_factory.mktemp("worker") / "worker.log", ALLOW_PRIVATE_URLS="true") as process:
        yield process


def _mux(audio, dest):
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=navy:s=160x90:r=5", "-i", str(audio)]
        + ["-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-b:a", "96k", str(dest)],
        check=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def recordings(media_server, tmp_path_factory):
    """Alice's sample (one Dutch actor), a sample of two voices, and a talk between Alice (other
    lines than her sample's) and a Czech actor; {name: (url, seconds of audio)}."""
    work = tmp_path_factory.mktemp("voices")
    cache = work / "cache"
    alice, small, czech = clips("nl", "v"), clips("nl", "m"), clips("cs", "v")
    made = {
        "alice": conversation(work / "alice.wav", {"v": alice[0::2]}, n_clips=10, cache=cache, seed=4),
        "duo": conversation(work / "duo.wav", {"v": alice[0::2], "m": small}, n_clips=10, cache=cache, seed=5),
        "talk": conversation(work / "talk.wav", {"v": alice[1::2], "c": czech}, n_clips=12, cache=cache, seed=6),
    }
    out = {}
    for name, fixture in made.items():
        _mux(fixture.path, media_server.folder / f"voice-{name}.mp4")
        out[name] = (media_server.url(f"/files/voice-{name}.mp4"), fixture.turns[-1][1])
    return out


def _voices(api) -> dict:
    return {voice["name"]: voice for voice in api.get("/v1/api/voices").json()}


def _speaker_labels(txt: str) -> set[str]:
    return {paragraph.split("] ", 1)[1].split(":", 1)[0] for paragraph in txt.strip().split("\n\n")}


def test_an_enrolled_voice_names_its_speaker_in_a_later_job_of_its_account_only(
    worker, api, account, other_account, recordings
):
    from accounts.services import token_issue
    from transcription.models import Voice

    balance = account_balance(account.pk)
    for name in ("Alice", "Duo"):
        response = api.post(
            "/v1/api/voices",
            data=json.dumps({"name": name, "url": recordings[name.lower()][0]}),
            content_type="application/json",
        )
        assert response.status_code == 200 and response.json()["state"] == "processing", response.json()
    for voice in Voice.objects.filter(account=account):
        wait_for_job(voice.job_id, timeout=300)
    voices = _voices(api)
    assert voices["Alice"]["state"] == "ready", voices["Alice"]
    assert 10 <= voices["Alice"]["seconds"] <= 120 and voices["Alice"]["error"] is None
    assert voices["Duo"]["state"] == "failed"
    assert voices["Duo"]["error"].startswith("The sample holds 2 voices"), voices["Duo"]["error"]
    alice = Voice.objects.get(account=account, name="Alice")
    assert len(bytes(alice.embedding)) >= 4 * 128, "only the embedding is kept"
    assert account_balance(account.pk) == balance - alice.seconds, "the sample is charged, the failed one refunded"
    from django.core.files.storage import default_storage

    assert not default_storage.exists(f"audio/{alice.job_id}.wav"), "nothing of the sample's audio is kept"

    job_id = submit(api, "/v1/api/transcribe", {"url": recordings["talk"][0]})
    body, _ = poll_until_done(api, job_id)
    assert body["state"] == "done", body["error"]
    labels = _speaker_labels(body["txt"])
    assert "Alice" in labels and len(labels) == 2, body["txt"]
    assert (labels - {"Alice"}).pop().startswith("Speaker "), "the voice nobody enrolled keeps its number"

    other = Client()
    other.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token_issue(other_account)}"
    other_id = submit(other, "/v1/api/transcribe", {"url": recordings["talk"][0]})
    other_body, _ = poll_until_done(other, other_id)
    assert other_body["state"] == "done", other_body["error"]
    assert "Alice" not in other_body["txt"], "another account's voices never name its speakers"

    assert api.delete(f"/v1/api/voices/{alice.id}").status_code == 204
    wait_until(lambda: not Voice.objects.filter(pk=alice.id).exists(), "the voice is forgotten")
    assert "Alice" not in _voices(api)
