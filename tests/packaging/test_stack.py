"""The image and the stack, for real (issue 43): bin/build-image builds the Containerfile with podman
on this machine (its base image made by debootstrap where no registry answers), podman-compose
starts compose.yaml (PostgreSQL and Redis from deploy/, migrate once, the web, a worker per queue
family, one beat), and a job goes through it end to end: a two-voice video served by the test
becomes a transcript with two speakers, its file link downloads. Then the whole stack is stopped and
started again, and the account, the job, the ledger and the file are still there.

podman runs here with the settings of deploy/sandbox/ (docs/operating.md says why). The image's
layers stay in podman's storage between runs, and pip's downloads in a cache mount, so a run after
a code change rebuilds the project's layer only."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from harness.media_server import MediaServer
from harness.processes import ROOT, free_port
from harness.speaker_audio import clips, conversation
from tests.e2e.conftest import _mux

pytestmark = pytest.mark.stack

IMAGE = "video-transcription:test"
PROJECT = f"transcription-test-{os.getpid()}"
LINE = re.compile(r"^\[[\d:]+\] Speaker (\d+): ", re.M)  # [00:00:03] Speaker 2: ...


def podman_env() -> dict[str, str]:
    return {
        **os.environ,
        "CONTAINERS_CONF": str(ROOT / "deploy/sandbox/containers.conf"),
        "CONTAINERS_STORAGE_CONF": str(ROOT / "deploy/sandbox/storage.conf"),
    }


def host_address() -> str:
    """This machine's address as the containers reach it (their network's route out)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: only the route is looked up
        return probe.getsockname()[0]


class Stack:
    def __init__(self, env_file: Path, port: int):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        compose = shutil.which("podman-compose") or str(Path(sys.executable).parent / "podman-compose")
        self.command = [compose, "--project-name", PROJECT, "--file", str(ROOT / "compose.yaml")]
        self.env = {**podman_env(), "IMAGE": IMAGE, "PORT": str(port), "ENV_FILE": str(env_file)}

    def compose(self, *args: str, timeout: float = 600, input: str | None = None) -> str:
        done = subprocess.run(
            [*self.command, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )
        assert done.returncode == 0, f"podman-compose {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def up(self) -> None:
        self.compose("up", "-d")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=5) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(2)
        raise AssertionError(f"the web never answered /health:\n{self.compose('logs', '--tail', '50')[-5000:]}")

    def api(self, method: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict | bytes]:
        request = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw


@pytest.fixture(scope="module")
def image():
    started = time.monotonic()
    built = subprocess.run(
        [str(ROOT / "bin/build-image"), "--tag", IMAGE],
        cwd=ROOT,
        env={**podman_env(), "IMAGE": IMAGE},
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    print(f"image built in {time.monotonic() - started:.0f} s")
    return IMAGE


@pytest.fixture(scope="module")
def two_voices(tmp_path_factory):
    """A video of two Dutch voice actors taking turns, served on an address the containers reach."""
    work = tmp_path_factory.mktemp("stack-media")
    cache = work / "cache"
    cache.mkdir()
    dialogue = conversation(
        work / "dialogue.wav", {"m": clips("nl", "m"), "v": clips("nl", "v")}, n_clips=16, cache=cache
    )
    folder = work / "served"
    folder.mkdir()
    _mux(dialogue.path, folder / "dialogue.mp4")
    with MediaServer(folder, host="0.0.0.0") as server:
        yield f"http://{host_address()}:{server.port}/files/dialogue.mp4"


@pytest.fixture(scope="module")
def stack(image, tmp_path_factory):
    env_file = tmp_path_factory.mktemp("stack") / "transcription.env"
    port = free_port()
    made = subprocess.run(
        [str(ROOT / "bin/compose-env")],
        env={**os.environ, "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"},
        capture_output=True,
        text=True,
        check=True,
    )
    # the test's media server is on this machine's private address
    env_file.write_text(made.stdout + "ALLOW_PRIVATE_URLS=true\n")
    stack = Stack(env_file, port)
    try:
        yield stack
    finally:
        subprocess.run([*stack.command, "down", "--volumes"], cwd=ROOT, env=stack.env, capture_output=True, timeout=600)


def wait_done(stack: Stack, token: str, job_id: str, timeout: float = 900) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = stack.api("GET", f"/v1/api/transcription/{job_id}", token)
        assert status == 200, body
        assert isinstance(body, dict)
        if body["state"] in ("done", "failed"):
            return body
        time.sleep(3)
    raise AssertionError(f"job {job_id} not done in {timeout} s:\n{stack.compose('logs', '--tail', '80')[-6000:]}")


def test_a_transcript_through_the_stack_and_every_row_and_file_kept_across_a_restart(stack, two_voices):
    started = time.monotonic()
    stack.up()
    up_seconds = time.monotonic() - started
    out = stack.compose("exec", "-T", "web", "entrypoint", "manage", "create_account", "stack@example.com")
    token = out.strip().splitlines()[-1].strip()

    status, queued = stack.api("POST", "/v1/api/transcribe", token, {"url": two_voices, "language_code": "nl"})
    assert status in (200, 202) and isinstance(queued, dict), queued
    status, burning = stack.api("POST", "/v1/api/burn-subtitles", token, {"url": two_voices, "language_code": "nl"})
    assert status in (200, 202) and isinstance(burning, dict), burning
    job_id, burned_id = str(queued["id"]), str(burning["id"])
    body = wait_done(stack, token, job_id)
    assert body["state"] == "done", body.get("error")
    print(
        f"compose up to healthy: {up_seconds:.0f} s; up to the first finished transcript: {time.monotonic() - started:.0f} s"
    )
    speakers = {m.group(1) for m in LINE.finditer(body["txt"])}
    assert speakers == {"1", "2"}, body["txt"]  # the speaker models are in the image
    burned = wait_done(stack, token, burned_id)
    assert burned["state"] == "done", burned.get("error")
    link = burned["burned_video_url"]
    assert link.startswith(f"{stack.base}/"), link  # PUBLIC_BASE_URL
    with urllib.request.urlopen(link, timeout=60) as answer:
        first_download = answer.read()
    assert first_download[4:8] == b"ftyp"  # an MP4

    stack.compose("down")  # the containers go; the named volumes stay
    stack.up()
    status, again = stack.api("GET", f"/v1/api/transcription/{job_id}", token)  # the account and its token kept
    assert status == 200 and isinstance(again, dict)
    assert again["state"] == "done" and again["txt"] == body["txt"]
    with urllib.request.urlopen(link, timeout=30) as answer:  # the file, and the key that signs its link
        assert answer.read() == first_download
    ledger = stack.compose(
        "exec",
        "-T",
        "web",
        "entrypoint",
        "manage",
        "shell",
        "-c",
        "from billing.models import LedgerEntry; print(LedgerEntry.objects.count())",
    )
    assert int(ledger.strip().splitlines()[-1]) >= 2  # the grant and the job's charge
