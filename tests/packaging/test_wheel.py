"""The wheel (issue 43): what `pip install` of the project gets must be the whole service, so every
file the service reads that is not Python (templates, static files) and every migration is in it,
and so are its console scripts. Built as `python -m build` builds it (setuptools' PEP 517 backend),
by pip, from the checkout as git has it."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from harness.processes import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("video_transcription-*.whl")
    with zipfile.ZipFile(built) as archive:
        yield archive


def tracked(*patterns: str) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *patterns],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [path for path in listed if (ROOT / path).is_file()]


def test_the_wheel_holds_every_template_static_file_and_migration(wheel):
    names = set(wheel.namelist())
    templates = tracked("templates")
    static = tracked("*/static/*")
    migrations = tracked("*/migrations/*.py")
    ranges = tracked("transcription/pipeline/speakers/*.json")  # CAM++'s 8-bit ranges
    assert templates and static and migrations and ranges
    # the project's templates travel inside the config package (config/templates links to them)
    missing = [path for path in templates if f"config/{path}" not in names]
    missing += [path for path in static + migrations + ranges if path not in names]
    assert not missing, f"not in the wheel: {missing}"


def test_the_wheel_holds_no_tests_benchmarks_or_checkout_files(wheel):
    tops = {name.split("/")[0] for name in wheel.namelist()}
    assert not tops & {"tests", "bench", "harness", "docs", "templates", "var", "manage.py"}


def test_the_wheel_declares_the_console_scripts(wheel):
    (entry_points,) = [name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "transcription-service = config.cli:manage" in text
    assert "transcription-models = config.cli:models" in text
