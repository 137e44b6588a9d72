"""Only what the customer sent is read, and no job ends "internal" for a library's bookkeeping
(issue 41), on bin/web and a real worker: a playlist, a concat list or a DASH manifest naming a file
of this machine is refused at the upload door and fails its job when it comes as a download, and
nothing it names is opened; a sentence whose speech reaches its last sample is transcribed."""

import subprocess

import pytest
import requests

from billing.selectors import account_balance
from tests.support import REFERENCING_FILES, canary_pipes, job_ended
from transcription.pipeline.media import ffmpeg_commands
from transcription.storage import files

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SENTENCE = "Thank you. I think the budget is too small, and we need more people for the project."
NAMES = {"hls": "talk.m3u8", "concat": "talk.txt", "ffconcat": "talk.ffconcat", "dash": "talk.mpd"}
REFUSED = {
    "hls": "The file is an HLS playlist (.m3u8), which names other files",
    "concat": "The file is not audio or video that ffprobe can read.",  # no demuxer takes a bare list
    "ffconcat": "The file is a concat list (ffconcat), which names other files",
    "dash": "The file is a DASH manifest (.mpd), which names other files",
}


def auth(token) -> dict:
    return {"Authorization": f"Bearer {token}"}


def poll(web, token, job_id, timeout=300):
    return job_ended(web, token, job_id, timeout)


@pytest.mark.parametrize("kind", REFERENCING_FILES)
def test_an_upload_that_names_a_local_file_is_a_422_and_reads_nothing(web, token, account, kind):
    # beside the upload's own bytes, where a concat list's relative names lead
    canary = files.incoming_path("x").parent / f"canary-{kind}"
    canary.parent.mkdir(parents=True, exist_ok=True)
    with canary_pipes(canary) as opened:
        answer = requests.post(
            f"{web}/v1/api/uploads",
            headers=auth(token),
            files={"file": (NAMES[kind], REFERENCING_FILES[kind](canary).encode())},
            timeout=60,
        )
        assert not opened.is_set(), "ffprobe opened the local file the upload named"
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["detail"]
    assert problem["loc"] == ["body", "file"] and problem["msg"].startswith(REFUSED[kind]), problem


@pytest.mark.parametrize("kind", ["hls", "dash"])
def test_a_downloaded_playlist_fails_its_job_and_reads_nothing(web, token, account, media_server, tmp_path, kind):
    canary = tmp_path / "canary"
    playlist = REFERENCING_FILES[kind](canary).encode()
    # served as a video, so the downloader keeps it as a file instead of reading it as a playlist
    media_server.routes[f"/refs/{kind}.mp4"] = lambda request: request.send_bytes(playlist, "video/mp4")
    balance = account_balance(account.pk)
    with canary_pipes(canary) as opened:
        answer = requests.post(
            f"{web}/v1/api/transcribe", headers=auth(token), json={"url": media_server.url(f"/refs/{kind}.mp4")}
        )
        assert answer.status_code == 200, answer.text
        body = poll(web, token, answer.json()["id"], timeout=120)
        assert not opened.is_set(), "a worker opened the local file the download named"
    assert body["state"] == "failed" and body["error"].startswith(REFUSED[kind]), body
    assert account_balance(account.pk) == balance


def test_the_sentence_whose_speech_reaches_its_end_is_transcribed(web, token, tmp_path):
    """4.86 s of espeak-ng's en+f3 that ended "An internal error stopped this job" every time."""
    raw, wav = tmp_path / "raw.wav", tmp_path / "sentence.wav"
    subprocess.run(["espeak-ng", "-v", "en+f3", "-w", str(raw), SENTENCE], check=True, timeout=30)
    subprocess.run(ffmpeg_commands.ffmpeg("-i", str(raw), "-ar", "16000", "-ac", "1", str(wav)), check=True)
    upload = requests.post(f"{web}/v1/api/uploads", headers=auth(token), files={"file": wav.open("rb")}, timeout=60)
    assert upload.status_code == 201, upload.text
    answer = requests.post(
        f"{web}/v1/api/transcribe", headers=auth(token), json={"upload_id": upload.json()["id"]}, timeout=30
    )
    assert answer.status_code == 200, answer.text
    body = poll(web, token, answer.json()["id"])
    assert body["state"] == "done", body["error"]
    assert "thank you" in body["txt"].lower() and "people" in body["txt"].lower(), body["txt"]
