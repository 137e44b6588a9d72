"""A file uploaded with tus (tuspy) and transcribed through the native API, on bin/web and a real
worker: the job reads the upload, leans on the client's prompt, and is charged like any other."""

import pytest
import requests
from tusclient import client as tus

from billing.selectors import account_balance
from tests.support import job_ended, wer
from transcription.models import JobSegments

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def poll(web, token, job_id, timeout=300):
    return job_ended(web, token, job_id, timeout)


def test_an_uploaded_video_becomes_subtitles_spelled_as_the_prompt_asks(web, token, account, recordings):
    headers = {"Authorization": f"Bearer {token}"}
    uploader = tus.TusClient(f"{web}/v1/api/uploads", headers=headers).uploader(
        str(recordings["mp4"]), chunk_size=256 * 1024, metadata={"filename": "reading.mp4"}
    )
    uploader.upload()
    upload_id = uploader.url.rsplit("/", 1)[1]

    answer = requests.post(
        f"{web}/v1/api/subtitles",
        headers=headers,
        json={"upload_id": upload_id, "prompt": "Mr. John Dashwod, Norland Park, Mrs. Dashwod."},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    body = poll(web, token, answer.json()["id"])

    assert body["state"] == "done", body["error"]
    assert body["video_url"] == f"upload:{upload_id}"
    assert 24 <= body["duration"] <= 27
    assert "Dashwod" in body["srt"], "the prompt's spelling"
    spoken = " ".join(line.split(": ", 1)[1] for line in body["txt"].split("\n\n"))
    assert wer(recordings["reference"], spoken.replace("Dashwod", "Dashwood")) <= 0.15
    assert account_balance(account.pk) == 600 - body["duration"]
    segments = JobSegments.objects.get(job_id=body["id"])
    assert segments.segments and all(segment["words"] for segment in segments.segments)
