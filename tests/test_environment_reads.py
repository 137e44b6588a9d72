"""Every setting is read from the environment in config/settings.py, once (issue 55): no other
module of the project touches os.environ or os.getenv, but for the few listed here, each with why
(an entry point naming the settings module before there are settings, a process handing its own
environment to a child, scripts that run without Django). A new one fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = ("tests", "node_modules", "build", "var")  # build/: a wheel's copy (tests/packaging)
ENVIRONMENT = {"environ", "getenv", "putenv", "unsetenv", "environb", "getenvb"}

ENTRY_POINT = "a Django entry point: names the settings module (DJANGO_SETTINGS_MODULE) before settings exist"
BENCH = "a benchmark script: sets the environment it runs the service under, before Django, and reads its own knobs"
# module -> why it may touch the environment
ALLOWED = {
    "config/settings.py": "the one reader of every setting (django-environ's Env)",
    "config/asgi.py": ENTRY_POINT,
    "config/wsgi.py": ENTRY_POINT,
    "config/celery.py": ENTRY_POINT,
    "config/cli.py": ENTRY_POINT,
    "config/pytest_env.py": "the suite's plugin: a random SECRET_KEY, and each xdist process's Redis database and DATA_DIR",
    "config/models_cli.py": (
        "the console script transcription-models, run without Django (the image's build, before any setting "
        "exists): WHISPER_MODEL and SPEAKER_WEIGHTS_DIR, read as config/settings.py reads them"
    ),
    "transcription/pipeline/speakers/apart.py": (
        "hands its own environment on to the diarization child (PYTHONPATH joined): reads no setting"
    ),
    "harness/processes.py": (
        "the tests' harness: starts the service's processes with this process's environment (and reads "
        "DATABASE_URL by django-environ's own parser)"
    ),
    "bench/asr/pipeline.py": BENCH,
    "bench/asr/spread.py": BENCH,
    "bench/asr/side_by_side.py": BENCH,
    "bench/live/stream.py": BENCH,
    "bench/live/file_path.py": BENCH,
    "bench/live/memory.py": BENCH,
    "bench/events/run.py": BENCH,
    "bench/edits/patch.py": BENCH,
    "bench/polls/asgi_constant.py": BENCH,
    "bench/polls/environment.py": BENCH,
    "bench/polls/fixture.py": BENCH,
    "bench/polls/run.py": BENCH,
    "bench/uploads/run.py": BENCH,
}


def environment_reads(tree: ast.AST) -> list[int]:
    """The lines of `tree` that touch the environment: os.environ, os.getenv (and the like), those
    names imported from os, or django-environ (the settings' reader) imported."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT:
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            if {alias.name for alias in node.names} & ENVIRONMENT:
                lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and node.module == "environ":
            lines.append(node.lineno)
        if isinstance(node, ast.Import) and "environ" in {alias.name for alias in node.names}:
            lines.append(node.lineno)
    return sorted(lines)


def modules_reading_the_environment() -> dict[str, list[int]]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in SKIPPED or relative.parts[0].startswith(".") or "migrations" in relative.parts:
            continue
        lines = environment_reads(ast.parse(path.read_text()))
        if lines:
            found[relative.as_posix()] = lines
    return found


def test_only_the_settings_read_the_environment():
    stray = {module: lines for module, lines in modules_reading_the_environment().items() if module not in ALLOWED}
    assert not stray, "read the setting in config/settings.py and hand it down (or list why here): " + str(stray)


def test_every_listed_reader_still_reads_it():
    assert set(ALLOWED) <= set(modules_reading_the_environment()), set(ALLOWED) - set(modules_reading_the_environment())


def test_the_walk_finds_each_way_of_reading_it():
    tree = ast.parse(
        "import os\nfrom os import environ\nos.environ.get('A')\nos.getenv('B')\nx = os.environ['C']\n"
        "environ.get('D')\nsettings.environ\nimport environ\n"
    )
    assert environment_reads(tree) == [2, 3, 4, 5, 8]
