"""One real worker and one bin/web for the end-to-end tests of the doors that take files (uploads,
the OpenAI-compatible endpoints): started once for this package, stopped when its last test ends
(so they never run beside the other e2e modules' own workers)."""

import re
import subprocess
from pathlib import Path

import pytest

from harness.processes import running_web, running_worker

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


@pytest.fixture(scope="package")
def web(django_db_setup, django_db_blocker, tmp_path_factory):
    """The base URL of bin/web, with a worker on every queue behind it."""
    logs = tmp_path_factory.mktemp("doors")
    with (
        running_worker(logs / "worker.log", ALLOW_PRIVATE_URLS="true"),
        running_web(logs / "web.log", ALLOW_PRIVATE_URLS="true") as base,
    ):
        yield base


@pytest.fixture(scope="package")
def recordings(tmp_path_factory) -> dict:
    """The five LibriVox clips read one after the other (25 s) as a WAV, and as an MP4 with a
    picture; with the text read."""
    work = tmp_path_factory.mktemp("recordings")
    names = sorted(path.stem for path in LIBRIVOX.glob("*.wav"))
    listing = work / "list.txt"
    listing.write_text("".join(f"file '{LIBRIVOX / name}.wav'\n" for name in names))
    wav = work / "reading.wav"
    ffmpeg = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
    subprocess.run(
        [*ffmpeg, "-f", "concat", "-safe", "0", "-i", str(listing), "-ar", "16000", "-ac", "1", str(wav)],
        check=True,
        timeout=60,
    )
    mp4 = work / "reading.mp4"
    subprocess.run(
        [*ffmpeg, "-f", "lavfi", "-i", "color=c=navy:s=320x180:r=10", "-i", str(wav), "-shortest"]
        + ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-b:a", "96k", str(mp4)],
        check=True,
        timeout=120,
    )
    lines = {
        m.group(2): m.group(1)
        for m in re.finditer(r"<s> (.*?) </s> \((.*?)\)", (LIBRIVOX / "transcription").read_text())
    }
    return {"wav": wav, "mp4": mp4, "reference": " ".join(lines[name] for name in names)}
