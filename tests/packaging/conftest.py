"""What the stack tests share (tests/packaging/test_stack.py, test_stack_s3.py): the image, built
once a run, and the test's videos, served once a run on an address the containers reach."""

from __future__ import annotations

import pytest

from harness.media_server import MediaServer
from harness.processes import ROOT
from harness.speaker_audio import clips, conversation
from tests.e2e.conftest import _mux
from tests.packaging.test_stack import IMAGE, build_image, host_address


@pytest.fixture(scope="session")
def image():
    build_image(ROOT, IMAGE)
    return IMAGE


@pytest.fixture(scope="session")
def videos(tmp_path_factory):
    """Two videos of two Dutch voice actors taking turns, a short one and a long one, served on an
    address the containers reach."""
    work = tmp_path_factory.mktemp("stack-media")
    cache = work / "cache"
    cache.mkdir()
    folder = work / "served"
    folder.mkdir()
    voices = {"m": clips("nl", "m"), "v": clips("nl", "v")}
    for name, n_clips in (("short", 16), ("long", 48)):
        dialogue = conversation(work / f"{name}.wav", voices, n_clips=n_clips, cache=cache)
        _mux(dialogue.path, folder / f"{name}.mp4")
    with MediaServer(folder, host="0.0.0.0") as server:
        base = f"http://{host_address()}:{server.port}/files"
        yield {"short": f"{base}/short.mp4", "long": f"{base}/long.mp4"}
