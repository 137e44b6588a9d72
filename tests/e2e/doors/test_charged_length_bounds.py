"""Issue 56, item 1: no stage works on more of a customer's file than was charged. Small real files
(made here with ffmpeg) whose picture, sound and container header disagree on their length, each
longer than the others in turn, sent as burned jobs by link (the REST door, the test's server on
127.0.0.1) and by upload, run by the package's real worker and bin/web. Whatever the file claims:
the audio recognised (the WAV the speech stage read, kept for the player) and the burned video's
picture and sound, first and burned again, are no longer than the job's charged length; and the
charge covers the picture when that runs longest, which the burned video keeps whole
(docs/decisions/jobs-and-billing.md)."""

import json
import math
import subprocess
import uuid
from pathlib import Path

import pytest
import requests
from django.core.files.storage import default_storage
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from billing.models import LedgerEntry
from billing.pricing import BURN_MULTIPLIER
from harness.media_files import claim_matroska_duration, make_speech_wav
from tests.support import wait_until
from transcription.pipeline.media.ffmpeg_commands import ffmpeg
from transcription.pipeline.media.wav import decoded_seconds
from transcription.storage import files

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# A container's timestamps are rounded (Matroska's to the millisecond, MP4's to its timescale): a
# burn cut at 2 s reads back as 2.000 s, never more than this past it.
ROUNDING = 0.01


def make_file(folder: Path, speech: Path, *, picture: float, sound: float, header: float | None) -> Path:
    """Picture and sound of the given seconds, H.264 and AAC in Matroska; the header's Segment
    Duration overwritten to claim `header` seconds (None: left as ffmpeg wrote it, the longer
    stream's)."""
    path = folder / f"{uuid.uuid4().hex}.mkv"
    picture_input = ("-f", "lavfi", "-i", f"testsrc=size=96x64:rate=10:duration={picture}")
    sound_filter = ("-af", f"apad,atrim=0:{sound}")  # the speech, cut or padded with silence to `sound`
    encode = ("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "48k")
    subprocess.run(
        ffmpeg(*picture_input, "-i", str(speech), *sound_filter, *encode, str(path)),
        check=True,
        capture_output=True,
        timeout=60,
    )
    if header is not None:
        claim_matroska_duration(path, header * 1000)
    return path


def durations(path: str) -> dict[str, float]:
    """Each stream's length in the burned MP4, by ffprobe (its own reading, not the service's)."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,duration", "-of", "json", path],
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    return {s["codec_type"]: float(s["duration"]) for s in json.loads(out)["streams"]}


def poll(web, headers, job_id, until, timeout=240) -> dict:
    def reached():
        body = requests.get(f"{web}/v1/api/transcription/{job_id}", headers=headers, timeout=30).json()
        return body if until(body) else None

    return wait_until(reached, f"the awaited state of job {job_id}", timeout, interval=0.5)


def send(web, headers, media_server, door: str, path: Path) -> str:
    """A burned job of `path` through `door`; its id."""
    if door == "upload":
        answer = requests.post(
            f"{web}/v1/api/uploads?filename=clip.mkv",
            headers={**headers, "Content-Type": "application/octet-stream"},
            data=path.read_bytes(),
            timeout=60,
        )
        assert answer.status_code == 201, answer.text
        body = {"upload_id": answer.json()["id"]}
    else:
        (media_server.folder / path.name).write_bytes(path.read_bytes())
        body = {"url": media_server.url(f"/files/{path.name}")}
    answer = requests.post(f"{web}/v1/api/burn-subtitles", headers=headers, json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


def assert_within(charged: int, name: str) -> dict[str, float]:
    made = durations(default_storage.path(name))
    assert set(made) == {"video", "audio"}, made
    assert all(seconds <= charged + ROUNDING for seconds in made.values()), (made, charged)
    return made


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Path:
    return make_speech_wav(tmp_path_factory.mktemp("speech") / "speech.wav")


SHORT, LONG = st.sampled_from([1.5, 2.0]), st.sampled_from([4.0, 6.0])


@settings(
    max_examples=1,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example is a job through the worker
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    door=st.sampled_from(["rest", "upload"]),
    longest=st.sampled_from(["picture", "sound", "header"]),
    short=SHORT,
    long=LONG,
    lie=st.booleans(),
)
# the attack, each way in; then the sound and the header longest, each at one door
@example(door="upload", longest="picture", short=1.5, long=6.0, lie=True)
@example(door="rest", longest="picture", short=2.0, long=6.0, lie=False)
@example(door="rest", longest="sound", short=2.0, long=6.0, lie=True)
@example(door="upload", longest="header", short=2.0, long=6.0, lie=True)
def test_no_stage_works_on_more_than_was_charged(
    web, token, account, media_server, speech, tmp_path_factory, door, longest, short, long, lie
):
    picture = long if longest == "picture" else short
    sound = long if longest == "sound" else short
    # the header claims the long length when it runs longest, else a second when it lies, else the truth
    header = long if longest == "header" else (1.0 if lie else None)
    path = make_file(tmp_path_factory.mktemp("clip"), speech, picture=picture, sound=sound, header=header)
    headers = {"Authorization": f"Bearer {token}"}

    job_id = send(web, headers, media_server, door, path)
    job = poll(web, headers, job_id, lambda body: body["state"] in ("done", "failed"))
    assert job["state"] == "done", job["error"]
    charged = job["duration"]
    paid = -sum(LedgerEntry.objects.filter(job_id=job_id).values_list("seconds", flat=True))
    assert paid == BURN_MULTIPLIER["default"] * charged, "the job's ledger holds exactly its length's burn"
    # the charge covers the longest stream the burn encodes, within a frame (the picture's last
    # frame's time is read) and the codecs' padding (under a second, not settled)
    assert charged >= math.ceil(max(picture, sound)) - 1, (charged, picture, sound)

    recognised = decoded_seconds(default_storage.path(files.playback_name(job_id)))
    assert recognised <= charged, (recognised, charged)
    made = assert_within(charged, f"burned/{job_id}/video.mp4")
    assert made["video"] >= picture - 0.2, "the customer's whole picture is kept, as it was charged for"

    answer = requests.post(f"{web}/v1/api/transcription/{job_id}/burn", headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    again = poll(web, headers, job_id, lambda body: body["state"] == "done")
    assert again["state"] == "done" and again["error"] is None, again
    assert_within(charged, files.burned_name(job_id, None))
