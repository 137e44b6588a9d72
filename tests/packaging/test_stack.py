"""The image and the stack, for real (issue 43): bin/build-image builds the Containerfile with podman
on this machine (its base image made by debootstrap where no registry answers), podman-compose
starts compose.yaml (PostgreSQL and Redis from deploy/, migrate once, the web, a worker per queue
family, one beat), and one operator's life with it is played through, on one set of volumes:

1. an image of an earlier release (EARLIER_RELEASE) writes them: an account, a burned video;
2. this release is started on them: migrated once, every row and file kept; a reading streamed
   through the published port's /v1/realtime gets words while it plays (the web holds the socket,
   the live worker the model), and its recording is kept as a job;
3. a long transcript and a burned video from a URL served by the test, the asr worker's container
   killed mid-recognition and started again: both finish, the transcript with its two speakers;
4. the whole stack stopped and started: everything kept;
5. backed up and restored into new volumes with docs/operating.md's commands: everything back.

podman runs here with the settings of deploy/sandbox/ (docs/operating.md says why). The image's
layers stay in podman's storage between runs, and pip's downloads in a cache mount, so a run after
a code change rebuilds the project's layer only."""

from __future__ import annotations

import asyncio
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

from harness.processes import ROOT, free_port
from tests.api.test_realtime_speech import reading_pcm24k, stream
from tests.support import wait_until

pytestmark = pytest.mark.stack

IMAGE = "video-transcription:test"
# The first commit whose image this stack runs, before the transcript editor's migration
# (transcription 0007): the upgrade test starts it on empty volumes, then this release on them.
EARLIER_RELEASE = "5a33492"
EARLIER_IMAGE = f"video-transcription:release-{EARLIER_RELEASE}"
# the earlier release's services: it has no live worker role
EARLIER_SERVICES = ("web", "worker-media", "worker-asr", "worker-burn", "worker-hooks", "beat")
PROJECT = f"transcription-test-{os.getpid()}"
# what the resolver says when podman's DNS server (aardvark-dns 1.4, Debian bookworm's) dropped a
# query: it stops answering while it reloads for a container started or stopped
# (containers/aardvark-dns#389), so a command run in a container right then may not find `postgres`
DNS_DROPPED = b"Temporary failure in name resolution"
REALTIME = "/v1/realtime?intent=transcription"
LINE = re.compile(r"^\[[\d:]+\] Speaker (\d+): ", re.M)  # [00:00:03] Speaker 2: ...


def podman_env() -> dict[str, str]:
    """podman with the settings this machine's sandbox needs (deploy/sandbox/)."""
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
    def __init__(self, env_file: Path, port: int, files: tuple[str, ...] = ("compose.yaml",), project: str = PROJECT):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.project = project
        compose = shutil.which("podman-compose") or str(Path(sys.executable).parent / "podman-compose")
        self.command = [compose, "--project-name", project]
        for name in files:
            self.command += ["--file", str(ROOT / name)]
        self.env = {**podman_env(), "IMAGE": IMAGE, "PORT": str(port), "ENV_FILE": str(env_file)}

    def use(self, image: str) -> None:
        self.env["IMAGE"] = image

    def compose_bytes(self, *args: str, timeout: float = 600, stdin: bytes | None = None) -> bytes:
        for _attempt in range(3):
            done = subprocess.run(
                [*self.command, *args], cwd=ROOT, env=self.env, capture_output=True, timeout=timeout, input=stdin
            )
            # a command in a container asked again when the sandbox's DNS dropped its query (above)
            if done.returncode == 0 or args[0] != "exec" or DNS_DROPPED not in done.stderr:
                break
            time.sleep(3)
        assert done.returncode == 0, (
            f"podman-compose {' '.join(args)}:\n{done.stdout[-3000:]!r}\n{done.stderr.decode(errors='replace')[-3000:]}"
            f"\n{self.states()}"
        )
        return done.stdout

    def states(self) -> str:
        """Each container's state and restarts, for a failure's message."""
        listed = subprocess.run(
            [
                "podman",
                "ps",
                "--all",
                "--filter",
                f"label=io.podman.compose.project={self.project}",
                "--format",
                "{{.Names}} {{.Status}} restarts={{.Restarts}}",
            ],
            env=self.env,
            capture_output=True,
            text=True,
        )
        return listed.stdout + listed.stderr

    def compose(self, *args: str, timeout: float = 600) -> str:
        return self.compose_bytes(*args, timeout=timeout).decode()

    def wait_for_database(self, timeout: float = 120) -> None:
        """docs/operating.md's wait: `until podman-compose exec -T postgres pg_isready ...`."""
        ready = ["exec", "-T", "postgres", "pg_isready", "-h", "127.0.0.1", "-U", "transcription", "-q"]
        wait_until(
            lambda: not subprocess.run([*self.command, *ready], cwd=ROOT, env=self.env, capture_output=True).returncode,
            "answer of the database",
            timeout,
            interval=2,
        )

    def up(self, *services: str) -> None:
        """The stack started (only `services` and what they depend on, when named) and its web healthy."""
        self.compose("up", "-d", *services)

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=5) as answer:
                    return answer.status == 200
            except OSError:
                return False

        def unhealthy() -> str:
            return f"answer of the web on /health:\n{self.compose('logs', '--tail', '50')[-5000:]}"

        wait_until(healthy, unhealthy, 300, interval=2)

    def manage(self, *args: str) -> str:
        """A management command in the running web container; its output's last line."""
        return self.compose("exec", "-T", "web", "entrypoint", "manage", *args).strip().splitlines()[-1].strip()

    def shell(self, code: str) -> str:
        return self.manage("shell", "-c", code)

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


def build_image(source: Path, tag: str) -> None:
    started = time.monotonic()
    built = subprocess.run(
        [str(source / "bin/build-image"), "--tag", tag],
        cwd=source,
        env={**podman_env(), "IMAGE": tag},
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    print(f"{tag} built in {time.monotonic() - started:.0f} s")


@pytest.fixture(scope="module")
def earlier_image(tmp_path_factory):
    """The earlier release's image, built once from its commit (git archive) and kept by its tag."""
    exists = subprocess.run(["podman", "image", "exists", EARLIER_IMAGE], env=podman_env())
    if exists.returncode != 0:
        source = tmp_path_factory.mktemp("earlier-release")
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", EARLIER_RELEASE], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
        shutil.copy(ROOT / "bin/build-image", source / "bin/build-image")  # this release's way to build
        build_image(source, EARLIER_IMAGE)
    return EARLIER_IMAGE


def settings_file(folder: Path, port: int) -> Path:
    """bin/compose-env's transcription.env for a stack on `port`. The test's media server is on
    this machine's private address; a lost worker's claim lapses in 40 s (4 heartbeats), not 2 minutes."""
    env_file = folder / "transcription.env"
    made = subprocess.run(
        [str(ROOT / "bin/compose-env")],
        env={**os.environ, "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"},
        capture_output=True,
        text=True,
        check=True,
    )
    env_file.write_text(made.stdout + "ALLOW_PRIVATE_URLS=true\nWORKER_HEARTBEAT_SECONDS=10\n")
    return env_file


@pytest.fixture(scope="module")
def stack(image, tmp_path_factory):
    port = free_port()
    stack = Stack(settings_file(tmp_path_factory.mktemp("stack"), port), port)
    try:
        yield stack
    finally:
        subprocess.run([*stack.command, "down", "--volumes"], cwd=ROOT, env=stack.env, capture_output=True, timeout=600)


def wait_for(
    stack: Stack, token: str, job_id: str, states: tuple[str, ...], timeout: float = 900, every: float = 3
) -> dict:
    def reached():
        status, body = stack.api("GET", f"/v1/api/transcription/{job_id}", token)
        assert status == 200, body
        assert isinstance(body, dict)
        return body if body["state"] in states else None

    def where() -> str:
        return f"job {job_id} in {states}:\n{stack.compose('logs', '--tail', '80')[-6000:]}"

    return wait_until(reached, where, timeout, interval=every)


def wait_done(stack: Stack, token: str, job_id: str) -> dict:
    body = wait_for(stack, token, job_id, ("done", "failed"))
    assert body["state"] == "done", body.get("error")
    return body


def submit(stack: Stack, token: str, path: str, url: str) -> str:
    status, queued = stack.api("POST", path, token, {"url": url, "language_code": "nl"})
    assert status in (200, 202) and isinstance(queued, dict), queued
    return str(queued["id"])


def download(link: str) -> bytes:
    with urllib.request.urlopen(link, timeout=60) as answer:
        return answer.read()


def speakers_of(body: dict) -> set[str]:
    return {m.group(1) for m in LINE.finditer(body["txt"])}


class Kept:
    """What the stack must keep: jobs' answers and files, and the ledger's length."""

    def __init__(self, stack: Stack, token: str):
        self.stack, self.token = stack, token
        self.answers: dict[str, dict] = {}
        self.files: dict[str, bytes] = {}

    def add(self, job_id: str, body: dict) -> None:
        self.answers[job_id] = body
        if body.get("burned_video_url"):
            assert body["burned_video_url"].startswith(f"{self.stack.base}/"), body  # PUBLIC_BASE_URL
            self.files[body["burned_video_url"]] = download(body["burned_video_url"])
            assert self.files[body["burned_video_url"]][4:8] == b"ftyp"  # an MP4

    def ledger_length(self) -> int:
        return int(self.stack.shell("from billing.models import LedgerEntry; print(LedgerEntry.objects.count())"))

    def check(self, ledger_length: int) -> None:
        for job_id, before in self.answers.items():  # the account and its token kept
            status, now = self.stack.api("GET", f"/v1/api/transcription/{job_id}", self.token)
            assert status == 200 and isinstance(now, dict), now
            assert (now["state"], now["txt"]) == (before["state"], before["txt"])
        for link, content in self.files.items():  # the files, and the key that signs their links
            assert download(link) == content
        assert self.ledger_length() == ledger_length


def test_an_upgrade_a_lost_worker_a_restart_and_a_restore(stack, image, earlier_image, videos, tmp_path):
    # 1. the earlier release writes the volumes
    stack.use(earlier_image)
    stack.up(*EARLIER_SERVICES)
    token = stack.manage("create_account", "stack@example.com")
    kept = Kept(stack, token)
    first = submit(stack, token, "/v1/api/burn-subtitles", videos["short"])
    kept.add(first, wait_done(stack, token, first))
    stack.compose("down")  # the containers go; the named volumes stay

    # 2. this release on the same volumes: migrated once (the one-shot migrate service), all kept
    stack.use(image)
    started = time.monotonic()
    stack.up()
    up_seconds = time.monotonic() - started
    applied = stack.shell(
        "from django.db.migrations.recorder import MigrationRecorder as R; "
        "print(R.Migration.objects.filter(app='transcription', name='0007_transcript_edits').count())"
    )
    assert applied == "1"
    ledger_length = kept.ledger_length()
    assert ledger_length >= 2  # the grant and the burn's charge
    kept.check(ledger_length)

    # a reading streamed at real speed through the published port: words while it plays
    events = [
        event
        for _, event in asyncio.run(stream(stack.base.replace("http", "ws", 1) + REALTIME, token, reading_pcm24k()))
    ]
    kinds = [event["type"] for event in events]
    assert any(kind.endswith(".delta") for kind in kinds), kinds
    heard = " ".join(event["transcript"] for event in events if event["type"].endswith(".completed")).lower()
    assert "dashwood" in heard or "sussex" in heard or "family" in heard, kinds
    streamed = next(event["job"]["id"] for event in events if event["type"] == "transcription_session.job")

    # 3. a long transcript and a burn; the asr worker's container killed mid-recognition
    transcript = submit(stack, token, "/v1/api/transcribe", videos["long"])
    burned = submit(stack, token, "/v1/api/burn-subtitles", videos["short"])
    wait_for(stack, token, transcript, ("processing",), timeout=600, every=0.5)
    stack.compose("kill", "worker-asr")
    stack.compose("start", "worker-asr")
    body = wait_done(stack, token, transcript)
    print(
        f"compose up to healthy: {up_seconds:.0f} s; to the first finished transcript: {time.monotonic() - started:.0f} s"
    )
    assert speakers_of(body) == {"1", "2"}, body["txt"]  # the speaker models are in the image
    attempts = stack.shell(f"from transcription.models import Job; print(Job.objects.get(pk='{transcript}').attempts)")
    assert int(attempts) >= 1  # its claim lapsed with the killed worker and the sweeper queued it again
    kept.add(transcript, body)
    kept.add(burned, wait_done(stack, token, burned))
    kept.add(streamed, wait_done(stack, token, streamed))  # the stream's recording, kept as a job
    ledger_length = kept.ledger_length()

    # 4. the whole stack stopped and started
    stack.compose("down")
    stack.up()
    kept.check(ledger_length)

    # 5. backed up (docs/operating.md's commands), the volumes dropped, restored into new ones
    backup = tmp_path / "backup.pgdump"
    media = tmp_path / "media.tar.gz"
    backup.write_bytes(
        stack.compose_bytes(
            "exec", "-T", "postgres", "pg_dump", "-U", "transcription", "--format=custom", "transcription"
        )
    )
    media.write_bytes(stack.compose_bytes("exec", "-T", "web", "tar", "-C", "/data", "-czf", "-", "media"))
    stack.compose("down", "--volumes")
    stack.compose("up", "-d", "postgres")
    stack.wait_for_database()
    stack.compose_bytes(
        "exec",
        "-T",
        "postgres",
        "pg_restore",
        "-U",
        "transcription",
        "-d",
        "transcription",
        "--clean",
        "--if-exists",
        "--no-owner",
        stdin=backup.read_bytes(),
    )
    stack.compose_bytes(
        "run", "--rm", "-T", "--entrypoint", "tar", "web", "-C", "/data", "-xzf", "-", stdin=media.read_bytes()
    )
    stack.up()
    kept.check(ledger_length)
