"""Uploads at /v1/api/uploads, against the production server (bin/web): tus 1.0 with the tuspy client
(in chunks, and resumed after a dropped connection), the whole file in one POST (multipart or raw),
the ffprobe check, the size cap, ownership and the tus protocol's errors."""

import hashlib
import http.client
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from django.core.files.storage import default_storage
from tusclient import client as tus
from tusclient.exceptions import TusCommunicationError

from harness.processes import running_web
from tests.support import wait_until
from transcription.models import Upload
from transcription.storage import files

pytestmark = pytest.mark.django_db(transaction=True)

WAV = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
MAX_BYTES = 16 * 1024 * 1024


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_web(tmp_path_factory.mktemp("web") / "web.log", UPLOAD_MAX_BYTES=str(MAX_BYTES)) as base:
        yield base


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    """Eight seconds of read speech with a picture, as a phone would record it (about 300 kB)."""
    path = tmp_path_factory.mktemp("video") / "interview.mp4"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=navy:s=320x180:r=10"]
        + ["-i", str(WAV), "-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", str(path)],
        check=True,
        timeout=60,
    )
    return path


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory) -> Path:
    """Five minutes of the reading, looped: a 9.6 MB WAV, more than the server gathers before a write."""
    path = tmp_path_factory.mktemp("long") / "meeting.wav"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-stream_loop", "-1", "-i", str(WAV), "-t", "300", str(path)],
        check=True,
        timeout=60,
    )
    return path


def auth(token) -> dict:
    return {"Authorization": f"Bearer {token}"}


def stored_digest(upload_id) -> str:
    with default_storage.open(files.upload_name(upload_id), "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_it_takes_a_file_from_tuspy_in_chunks(web, token):
    uploader = tus.TusClient(f"{web}/v1/api/uploads", headers=auth(token)).uploader(
        str(WAV), chunk_size=64 * 1024, metadata={"filename": "interview.wav"}
    )
    uploader.upload()

    assert uploader.offset == WAV.stat().st_size
    answer = requests.get(uploader.url, headers=auth(token), timeout=10)
    assert answer.status_code == 200
    body = answer.json()
    assert body["state"] == "ready" and body["filename"] == "interview.wav"
    assert body["size"] == body["received"] == WAV.stat().st_size
    assert body["duration"] == 8 and body["has_video"] is False
    assert stored_digest(body["id"]) == digest(WAV), "the bytes stored are the bytes sent"
    assert not files.incoming_path(body["id"]).exists(), "a whole upload leaves nothing behind"


def test_a_dropped_connection_is_resumed_where_it_stopped(web, token, long_recording):
    client = tus.TusClient(f"{web}/v1/api/uploads", headers=auth(token))
    location = client.uploader(str(long_recording), metadata={"filename": long_recording.name}).create_url()
    data = long_recording.read_bytes()

    # a PATCH announcing the whole file, whose connection dies after half of it
    parts = urlsplit(location)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.putrequest("PATCH", parts.path)
    for name, value in {
        **auth(token),
        "Tus-Resumable": "1.0.0",
        "Upload-Offset": "0",
        "Content-Type": "application/offset+octet-stream",
        "Content-Length": str(len(data)),
    }.items():
        connection.putheader(name, value)
    connection.endheaders()
    connection.send(data[: len(data) * 2 // 3])

    def offset():
        answer = requests.head(location, headers={**auth(token), "Tus-Resumable": "1.0.0"}, timeout=10)
        return int(answer.headers["Upload-Offset"])

    wait_until(offset, "the first bytes written while the PATCH runs")
    connection.sock.close()
    stored = wait_until(lambda: requests.get(location, headers=auth(token), timeout=10).json()["received"], "the drop")
    assert 0 < stored < len(data)
    assert offset() == stored

    resumed = client.uploader(str(long_recording), url=location)
    assert resumed.offset == stored, "tuspy asks the server where to go on"
    resumed.upload()

    body = requests.get(location, headers=auth(token), timeout=10).json()
    assert body["state"] == "ready" and body["duration"] == 300
    assert stored_digest(body["id"]) == digest(long_recording)


def test_the_whole_file_in_one_post_multipart_or_raw(web, token, video):
    with video.open("rb") as handle:
        answer = requests.post(f"{web}/v1/api/uploads", headers=auth(token), files={"file": handle}, timeout=30)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["filename"] == "interview.mp4" and body["state"] == "ready" and body["has_video"] is True
    assert answer.headers["Location"].endswith(f"/v1/api/uploads/{body['id']}")
    assert answer.headers["X-RateLimit-Limit"] == "60", "creating an upload counts as a job request"

    raw = requests.post(
        f"{web}/v1/api/uploads?filename=reading.wav",
        headers={**auth(token), "Content-Type": "audio/wav"},
        data=WAV.read_bytes(),
        timeout=30,
    )
    assert raw.status_code == 201, raw.text
    assert raw.json()["filename"] == "reading.wav" and raw.json()["duration"] == 8
    assert stored_digest(raw.json()["id"]) == digest(WAV)


def incoming() -> set[Path]:
    return set(files.incoming_path("x").parent.glob("*.part"))


def test_a_file_that_is_not_media_is_a_422_and_is_not_kept(web, token, tmp_path, account):
    before = incoming()
    notes = tmp_path / "notes.mp3"
    notes.write_text("Meeting notes, not a recording.\n" * 200)
    with notes.open("rb") as handle:
        answer = requests.post(f"{web}/v1/api/uploads", headers=auth(token), files={"file": handle}, timeout=30)
    assert answer.status_code == 422
    assert answer.json() == {
        "detail": [
            {
                "loc": ["body", "file"],
                "msg": "The file is not audio or video that ffprobe can read.",
                "type": "value_error",
            }
        ]
    }
    missing = requests.post(f"{web}/v1/api/uploads", headers=auth(token), files={"video": b"x"}, timeout=30)
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["body", "file"]

    # by tus: the last PATCH is checked the same way
    uploader = tus.TusClient(f"{web}/v1/api/uploads", headers=auth(token)).uploader(str(notes))
    with pytest.raises(TusCommunicationError) as raised:
        uploader.upload()
    assert raised.value.status_code == 422
    assert not Upload.objects.filter(account=account).exists()
    assert incoming() <= before, "nothing of the refused files is left"


def test_a_file_over_the_cap_is_a_json_413(web, token, account):
    too_big = MAX_BYTES + 1
    creation = requests.post(
        f"{web}/v1/api/uploads",
        headers={**auth(token), "Tus-Resumable": "1.0.0", "Upload-Length": str(too_big)},
        timeout=10,
    )
    assert creation.status_code == 413
    assert creation.json() == {"detail": "The file is larger than 16.0 MB, the most one upload may carry."}

    announced = requests.post(
        f"{web}/v1/api/uploads", headers={**auth(token), "Content-Type": "audio/wav"}, data=b"\0" * too_big, timeout=30
    )
    assert announced.status_code == 413

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(too_big // 65536 + 1):
            yield b"\0" * 65536

    chunked = requests.post(
        f"{web}/v1/api/uploads", headers={**auth(token), "Content-Type": "audio/wav"}, data=chunks(), timeout=30
    )
    assert chunked.status_code == 413 and "detail" in chunked.json()
    assert not Upload.objects.filter(account=account).exists()


def test_an_upload_is_its_accounts_alone(web, token, other_account):
    from accounts.services import token_issue

    uploader = tus.TusClient(f"{web}/v1/api/uploads", headers=auth(token)).uploader(str(WAV))
    uploader.upload()
    stranger = auth(token_issue(other_account))
    tus_headers = {"Tus-Resumable": "1.0.0"}
    assert requests.get(uploader.url, headers=stranger, timeout=10).status_code == 404
    assert requests.head(uploader.url, headers={**stranger, **tus_headers}, timeout=10).status_code == 404
    assert requests.delete(uploader.url, headers={**stranger, **tus_headers}, timeout=10).status_code == 404
    assert requests.get(uploader.url, timeout=10).status_code == 401
    assert requests.get(uploader.url, timeout=10).headers["WWW-Authenticate"] == "Bearer"
    assert requests.get(uploader.url, headers=auth(token), timeout=10).status_code == 200


def test_the_tus_protocol_errors(web, token):
    location = tus.TusClient(f"{web}/v1/api/uploads", headers=auth(token)).uploader(str(WAV)).create_url()
    patch = {**auth(token), "Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream"}

    wrong_offset = requests.patch(location, headers={**patch, "Upload-Offset": "10"}, data=b"abc", timeout=10)
    assert wrong_offset.status_code == 409 and wrong_offset.headers["Upload-Offset"] == "0"
    no_version = requests.patch(
        location, headers={**patch, "Tus-Resumable": "0.2.2", "Upload-Offset": "0"}, data=b"a", timeout=10
    )
    assert no_version.status_code == 412 and no_version.headers["Tus-Version"] == "1.0.0"
    wrong_type = requests.patch(
        location, headers={**patch, "Content-Type": "audio/wav", "Upload-Offset": "0"}, data=b"a", timeout=10
    )
    assert wrong_type.status_code == 415
    past_the_end = requests.patch(
        location, headers={**patch, "Upload-Offset": "0"}, data=b"\0" * (WAV.stat().st_size + 1), timeout=10
    )
    assert past_the_end.status_code == 413

    options = requests.options(f"{web}/v1/api/uploads", timeout=10)
    assert options.status_code == 204
    assert options.headers["Tus-Version"] == "1.0.0"
    assert options.headers["Tus-Max-Size"] == str(MAX_BYTES)
    assert set(options.headers["Tus-Extension"].split(",")) == {"creation", "creation-with-upload", "termination"}

    deleted = requests.delete(location, headers={**auth(token), "Tus-Resumable": "1.0.0"}, timeout=10)
    assert deleted.status_code == 204
    plain = requests.post(f"{web}/v1/api/uploads", headers=auth(token), files={"file": WAV.open("rb")}, timeout=30)
    plain_url = f"{web}/v1/api/uploads/{plain.json()['id']}"
    assert requests.delete(plain_url, headers=auth(token), timeout=10).status_code == 204, "no tus header needed"
    assert requests.get(plain_url, headers=auth(token), timeout=10).status_code == 404
    assert requests.get(location, headers=auth(token), timeout=10).status_code == 404
    upload_id = location.rsplit("/", 1)[1]
    assert not files.incoming_path(upload_id).exists()
