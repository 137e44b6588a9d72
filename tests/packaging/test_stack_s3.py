"""The stack without a shared volume (issue 53, item 3): compose.yaml with compose.s3.yaml, from the
same image, with SeaweedFS (deploy/seaweedfs) as the bucket. podman shows no named volume mounted
by two services: each role has a scratch volume of its own (the beat and the migrations none), the
store its data. A transcript and a burn go through the published port, the burned video comes back
through its link (the web streams it from the bucket), the store holds the results, and no role's
own disk holds any file afterwards: whatever went from one role to another went through the bucket.

The image and the videos are test_stack.py's (tests/packaging/conftest.py): one build for both."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import defaultdict

import pytest

from harness.processes import ROOT, free_port
from tests.packaging.test_stack import Stack, download, podman_env, settings_file, speakers_of, submit, wait_done

pytestmark = pytest.mark.stack

PROJECT = f"transcription-s3-test-{os.getpid()}"
ROLES = {"migrate", "web", "worker-media", "worker-asr", "worker-burn", "worker-hooks", "worker-live", "beat"}


@pytest.fixture(scope="module")
def stack(image, tmp_path_factory):
    port = free_port()
    env_file = settings_file(tmp_path_factory.mktemp("stack-s3"), port)
    stack = Stack(env_file, port, files=("compose.yaml", "compose.s3.yaml"), project=PROJECT)
    try:
        stack.compose("build", "seaweedfs")  # this deploy/seaweedfs, its layers cached from the last run
        yield stack
    finally:
        down = [*stack.command, "down", "--volumes", "--timeout", "5"]
        subprocess.run(down, cwd=ROOT, env=stack.env, capture_output=True, timeout=600)


def containers(stack: Stack) -> list[dict]:
    """`podman inspect` of every container of the stack, the exited migrations' too."""
    podman = ["podman", "ps", "--all", "--quiet", "--filter", f"label=io.podman.compose.project={stack.project}"]
    ids = subprocess.run(podman, env=podman_env(), capture_output=True, text=True, check=True).stdout.split()
    inspected = subprocess.run(["podman", "inspect", *ids], env=podman_env(), capture_output=True, check=True)
    return json.loads(inspected.stdout)


def store_listing(stack: Stack, folder: str) -> str:
    """The bucket's folder as the store itself lists it (weed shell in its container)."""
    return stack.compose("exec", "-T", "seaweedfs", "sh", "-c", f"echo 'fs.ls -l /buckets/media/{folder}' | weed shell")


def test_a_transcript_and_a_burn_with_no_volume_shared_between_roles(stack, videos):
    started = time.monotonic()
    stack.up()
    up_seconds = time.monotonic() - started
    mounted_by: dict[str, set[str]] = defaultdict(set)
    services = {}
    for container in containers(stack):
        service = container["Config"]["Labels"]["com.docker.compose.service"]
        services[service] = container["Id"]
        for mount in container["Mounts"]:
            if mount["Type"] == "volume":
                mounted_by[mount["Name"]].add(service)
    assert ROLES | {"postgres", "redis", "seaweedfs"} <= set(services), services
    shared = {volume: names for volume, names in mounted_by.items() if len(names) > 1}
    assert shared == {}, shared
    assert f"{PROJECT}_media" not in mounted_by, mounted_by
    assert not any(mounted_by[volume] & {"migrate", "worker-live", "beat"} for volume in mounted_by), mounted_by

    token = stack.manage("create_account", "s3-stack@example.com")
    transcript = submit(stack, token, "/v1/api/transcribe", videos["short"])
    burned = submit(stack, token, "/v1/api/burn-subtitles", videos["short"])
    body = wait_done(stack, token, transcript)
    assert speakers_of(body), body["txt"]
    burn = wait_done(stack, token, burned)
    print(
        f"compose up to healthy: {up_seconds:.0f} s; both jobs done {time.monotonic() - started:.0f} s from its start"
    )
    link = burn["burned_video_url"]
    assert link.startswith(f"{stack.base}/v1/files/"), burn  # through the web, never the bucket's address
    video = download(link)
    assert video[4:8] == b"ftyp", video[:100]  # an MP4

    assert f"{len(video)} " in store_listing(stack, f"burned/{burned}"), "the burned video is in the bucket"
    playback = store_listing(stack, "playback")
    assert f"{transcript}.wav" in playback and f"{burned}.wav" in playback, playback
    for role in ROLES - {"migrate"}:  # nothing passed through a role's own disk and stayed there
        found = subprocess.run(
            ["podman", "exec", services[role], "find", "/data", "-type", "f"],
            env=podman_env(),
            capture_output=True,
            text=True,
            check=True,
        )
        assert found.stdout == "", (role, found.stdout)
