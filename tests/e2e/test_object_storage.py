"""Jobs through an S3 bucket, no disk shared between roles (issue 53, item 2's start): a real
S3-compatible server (SeaweedFS, harness.object_store), and the web (bin/web) and one worker per
queue (bin/worker: media, asr, burn) as separate processes, each with a MEDIA_ROOT and a WORK_DIR of
its own, so that whatever one role hands another can only go through the bucket. A REST transcript
and a burn finish, the video is served through its signed /v1/files link, and the roles' own
folders hold nothing afterwards. Then the bucket goes down: a job fails saying so, its minutes
refunded; the link answers a 503 with Retry-After, never a 500; and the bucket back, it serves again.

In a module of its own: its workers must be the only ones taking these queues' jobs."""

from __future__ import annotations

import contextlib
import re
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.media_files import SPEECH_TEXT
from harness.object_store import ObjectStore
from harness.processes import request, running_web, running_worker
from tests.support import wait_until, wer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ROLES = ("web", "media", "asr", "burn")


def role_env(tmp_path: Path, store: ObjectStore, role: str) -> dict[str, str]:
    folder = tmp_path / role
    return {
        **store.settings(),
        "MEDIA_ROOT": str(folder / "media"),
        "WORK_DIR": str(folder / "work"),
        "UPLOAD_INCOMING_DIR": str(folder / "incoming"),
        "DATA_DIR": str(folder / "data"),
        "ALLOW_PRIVATE_URLS": "true",
    }


def store_counts() -> dict[str, float]:
    """The store's counters as every role adds to them in Redis (transcription.storage.files)."""
    from config import shared_cache
    from transcription.storage import files

    keys = [f"bytes:{d}" for d in files.DIRECTIONS] + [f"errors:{w}" for w in files.ERROR_PLACES]
    return {key: float(n) for key, n in zip(keys, shared_cache.read_counts([f"store:{k}" for k in keys]).values())}


def files_under(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def wait_done(base: str, token: str, job_id: str, timeout: float = 420) -> dict:
    def ended():
        status, _, body = request("GET", f"{base}/v1/api/transcription/{job_id}", token)
        assert status == 200, body
        return body if body["state"] in ("done", "failed") else None

    return wait_until(ended, f"end of job {job_id}", timeout, interval=0.5)


def fetch(url: str):
    """(status, headers, body) of a GET; the headers read case-insensitively."""
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_a_transcript_and_a_burn_through_the_bucket_and_the_bucket_down(tmp_path, account, token, media_server):
    from billing.selectors import account_balance
    from transcription.models import Job

    store = ObjectStore(tmp_path / "s3").start()
    counted_before = store_counts()
    logs = tmp_path / "logs"
    logs.mkdir()
    with contextlib.ExitStack() as roles:
        roles.callback(store.stop)
        base = roles.enter_context(running_web(logs / "web.log", **role_env(tmp_path, store, "web")))
        for queue in ("media", "asr", "burn"):
            env = role_env(tmp_path, store, queue)
            roles.enter_context(running_worker(logs / f"{queue}.log", queues=queue, hostname=f"{queue}-s3@%h", **env))

        def submit(path: str, url: str) -> str:
            status, _, body = request("POST", f"{base}{path}", token, {"url": media_server.url(url)})
            assert status == 200, body
            return body["id"]

        transcript = submit("/v1/api/transcribe", "/files/speech.wav")
        burn = submit("/v1/api/burn-subtitles", "/files/speech.mp4")
        ended = {job_id: wait_done(base, token, job_id) for job_id in (transcript, burn)}
        for body in ended.values():
            assert body["state"] == "done", body["error"]
            # the words, not one exact reading: the model hears "brown" as "round" on some CPUs
            text = re.sub(r"\[[\d:]+\] Speaker \d+:", " ", body["txt"])
            assert wer(SPEECH_TEXT, text) < 0.25, (body["txt"], SPEECH_TEXT)
        link = urllib.parse.urlsplit(ended[burn]["burned_video_url"])
        video_url = f"{base}{link.path}"
        status, headers, video = fetch(video_url)
        assert status == 200 and video[4:8] == b"ftyp", (status, video[:200])
        stored = {item["Key"] for item in store.client().list_objects_v2(Bucket=store.bucket).get("Contents", [])}
        assert {f"burned/{burn}/video.mp4", f"playback/{transcript}.wav", f"playback/{burn}.wav"} <= stored, stored
        assert f"sources/{burn}.video" in stored, "a done burned job keeps its source, to burn again"
        assert not any(name.startswith("audio/") for name in stored), "the audio handed over is gone once recognised"
        for role in ROLES:  # nothing went through a role's own disk that outlived its stage
            assert files_under(tmp_path / role / "media") == [], role
            assert files_under(tmp_path / role / "work") == [], role

        # the bucket goes down
        balance = account_balance(account.pk)
        store.stop()
        status, headers, body = fetch(video_url)
        assert status == 503 and headers.get("Retry-After") == "30", (status, body)
        assert b"file store is unreachable" in body
        import requests

        speech = media_server.folder / "speech.wav"
        with speech.open("rb") as handle:  # an upload needs the store: refused for now, not a 500
            upload = requests.post(
                f"{base}/v1/api/uploads",
                headers={"Authorization": f"Bearer {token}"},
                files={"file": handle},
                timeout=60,
            )
        assert upload.status_code == 503 and upload.headers["Retry-After"] == "30", upload.text
        failing = submit("/v1/api/transcribe", "/files/speech.wav")  # a job needs no store to be accepted
        failed = wait_done(base, token, failing, timeout=300)
        assert failed["state"] == "failed" and "file store could not be reached" in failed["error"], failed
        assert "minutes have been refunded" in failed["error"]
        assert Job.objects.get(pk=failing).failure_reason == "storage"
        assert account_balance(account.pk) == balance, "its minutes came back"

        # and comes back: the video is served again, nothing was lost
        store.start()
        status, _, again = fetch(video_url)
        assert status == 200 and again == video

        # what /metrics says of it all: the bytes every role moved, and the failures where they were met
        status, _, scraped = fetch(f"{base}/metrics")
        assert status == 200
        figures = {
            (sample.name, *sample.labels.values()): sample.value
            for family in text_string_to_metric_families(scraped.decode())
            for sample in family.samples
        }
        moved = {}
        for key, before in counted_before.items():
            kind, label = key.split(":")  # bytes:read -> transcription_store_bytes_total{direction="read"}
            moved[key] = figures[(f"transcription_store_{kind}_total", label)] - before
        assert moved["bytes:read"] >= 2 * len(video), moved  # the video served twice, the audio fetched
        assert moved["bytes:written"] > len(video), moved  # the audio, the source, the burned video
        assert moved["errors:stage"] >= 1 and moved["errors:door"] >= 1 and moved["errors:link"] >= 1, moved
