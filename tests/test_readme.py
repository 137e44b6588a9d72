"""The README works when typed as shown, and so do the guides it leads to (docs/using.md, then
docs/operating.md): every command line of their shell blocks, in their order, in one bash shell, after `make run` (here bin/run, what `make run` starts once it has installed, on an
embedded default of its own: SQLite and a filesystem broker under a temporary DATA_DIR, a free
PORT). The lines are read from whatever the README says now; only the kinds below are not run, each
for its reason, and a line of neither sort is run, so a new command in the README is tested."""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import urllib.request

from harness.processes import ROOT, embedded_env, free_port, start

# What a line starts with -> why the test does not run it.
NOT_RUN = {
    "make run": "the server this test starts itself (bin/run, after make's install step)",
    "make test": "the suite this test is part of",
    "make lint": "run by make test before the suite",
    "make install": "installs Debian and PyPI packages (root and the network); make test has installed them",
    "make bench-": "a benchmark: minutes of load",
    ".venv/bin/python bench/": "a benchmark: minutes to hours",
    ".venv/bin/pip install": "changes the installed environment (and needs the network)",
    "claude mcp add": "a third-party client, not installed here",
    "bin/web": "a server that runs until stopped (bin/run started one)",
    "BIND=": "a server that runs until stopped (bin/run started one)",
    "bin/worker": "a worker that runs until stopped (bin/run started one)",
    "bin/live": "a live worker that runs until stopped (tests/api/test_realtime_speech.py runs one)",
    "ffmpeg -v error -re": "streams into live.py, the Python block beside it: tests/api/test_realtime_speech.py",
    ".venv/bin/celery -A config beat": "a scheduler that runs until stopped (bin/run runs beat)",
    # the containers: tests/packaging/test_stack.py builds the image and runs the stack
    "bin/compose-env": "writes the stack's settings file (tests/packaging/test_stack.py writes its own)",
    "bin/build-image": "builds the image: tests/packaging/test_stack.py",
    "podman-compose": "the container stack: tests/packaging/test_stack.py, test_stack_s3.py (compose.s3.yaml)",
    "until podman-compose": "the container stack: tests/packaging/test_stack.py",
    "export CONTAINERS_CONF": "podman's settings on this machine: tests/packaging/test_stack.py sets them",
}


def command_lines(readme: str) -> list[str]:
    """The command lines of the README's sh/bash/shell blocks: continuations joined, comments
    and blank lines dropped."""
    lines = []
    for block in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", readme, re.S):
        pending = ""
        for raw in block.splitlines():
            line = pending + raw
            if line.rstrip().endswith("\\"):
                pending = line.rstrip()[:-1] + " "
                continue
            pending = ""
            stripped = strip_comment(line).strip()
            if stripped:
                lines.append(stripped)
    return lines


def strip_comment(line: str) -> str:
    """The line without a trailing `# comment` outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def documents() -> str:
    """The README, then the guides it sends a user on to, in the order they are read."""
    return "".join((ROOT / name).read_text() for name in ("README.md", "docs/using.md", "docs/operating.md"))


def not_run_reason(line: str) -> str | None:
    return next((reason for prefix, reason in NOT_RUN.items() if line.startswith(prefix)), None)


def test_the_readme_has_command_lines_and_says_make_run():
    lines = command_lines(documents())
    assert "make run" in lines and any(not not_run_reason(line) for line in lines)


def banner_try(log: str) -> str:
    """The command lines bin/run's banner shows under "Try:", continuations joined."""
    lines, taking = [], False
    for line in log.splitlines():
        if line.startswith("Try:"):
            taking, line = True, line[len("Try:") :]
        elif taking and not line.startswith(" "):
            break
        if taking:
            lines.append(line.strip())
    return "\n".join(lines).replace("\\\n", " ")


def test_every_readme_command_line_works_as_typed_after_make_run(tmp_path):
    lines = command_lines(documents())
    to_run = [line for line in lines if not not_run_reason(line)]
    env = embedded_env(tmp_path, PORT=str(free_port()))
    server = start(
        [str(ROOT / "bin" / "run")], tmp_path / "run.log", ready="Application startup complete", env=env, timeout=180
    )
    try:
        script = "set -euo pipefail\n" + "".join(
            f"echo '>>> line {number}' >&2\n{line}\n" for number, line in enumerate(to_run, 1)
        )
        shell = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        # The banner's try-it, as a person copies it from the terminal: it works offline too.
        banner = banner_try((tmp_path / "run.log").read_text())
        tried = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + banner], cwd=tmp_path, capture_output=True, text=True, timeout=600
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    assert shell.returncode == 0, (
        f"{shell.stderr[-3000:]}\n--- stdout ---\n{shell.stdout[-2000:]}\n--- lines ---\n" + "\n".join(to_run)
    )
    assert "whsec_" in shell.stdout  # set_webhook printed its secret: the private receiver was allowed
    # The README's first try-it (a sentence ffmpeg speaks, sent as a file) answered its transcript.
    assert "welcome to the transcription service" in shell.stdout.lower(), shell.stdout[:2000]
    assert tried.returncode == 0 and "welcome to the transcription service" in tried.stdout.lower(), (
        f"{banner}\n--- stdout ---\n{tried.stdout[-2000:]}\n--- stderr ---\n{tried.stderr[-2000:]}"
    )


def test_the_banner_shows_the_address_the_service_is_on(tmp_path):
    """BIND chooses where bin/web listens (README, docs/operating.md): the banner's links and
    PUBLIC_BASE_URL follow it, whatever PORT says."""
    port = free_port()
    env = embedded_env(tmp_path, BIND=f"127.0.0.1:{port}")
    env.pop("PORT", None)
    server = start(
        [str(ROOT / "bin" / "run")], tmp_path / "run.log", ready="Application startup complete", env=env, timeout=180
    )
    try:
        log = (tmp_path / "run.log").read_text()
        site = re.search(r"^Website:\s+(\S+)", log, re.M)
        assert site and site.group(1) == f"http://127.0.0.1:{port}/", log[:2000]
        assert f"http://127.0.0.1:{port}/v1/audio/transcriptions" in banner_try(log)
        with urllib.request.urlopen(site.group(1) + "health", timeout=30) as answer:
            assert answer.status == 200
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def test_bin_manage_finds_the_embedded_key_but_invents_none_for_production(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")
    }
    env["DATA_DIR"] = str(tmp_path / "var")
    embedded = subprocess.run(
        [str(ROOT / "bin" / "manage"), "check"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert embedded.returncode == 0, embedded.stderr
    key_file = tmp_path / "var" / "secret-key"
    assert key_file.stat().st_mode & 0o777 == 0o600 and len(key_file.read_text().strip()) > 50
    production = subprocess.run(
        [str(ROOT / "bin" / "manage"), "check"],
        cwd=tmp_path,
        env={**env, "DATABASE_URL": "postgres://root@127.0.0.1:5432/front"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert production.returncode != 0 and "SECRET_KEY is not set" in production.stderr


def test_the_readme_is_what_a_newcomer_reads_first_at_most_1200_words():
    """What it is, the two commands, the try-it, the doors, where the rest is (issue 55): the
    settings and the rest live in the guides it links."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.split()) <= 1200, f"the README has {len(readme.split())} words"
    for heading in ("## Two commands", "## The four doors", "## Where the rest is"):
        assert heading in readme
    assert '`docs/operating.md`, "Settings"' in readme


def settings_reads() -> set[str]:
    """The environment variables config/settings.py reads: the first argument of every
    `env.<cast>("NAME", ...)` call."""
    names = set()
    for node in ast.walk(ast.parse((ROOT / "config" / "settings.py").read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "env"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def settings_table() -> list[str]:
    """The first column of docs/operating.md's "Settings" table, one name a row."""
    section = (ROOT / "docs" / "operating.md").read_text().split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, re.M)


def test_every_setting_config_reads_is_in_the_operating_table_once():
    read, listed = settings_reads(), settings_table()
    assert len(read) > 80, "the walk finds config/settings.py's env.<cast>(...) calls"
    assert sorted(name for name in set(listed) if listed.count(name) > 1) == [], "a variable listed twice"
    assert sorted(read - set(listed)) == [], "config/settings.py reads these; docs/operating.md does not list them"
    # The only rows that config/settings.py does not read: the launch scripts' own.
    scripts = (ROOT / "bin" / "run").read_text() + (ROOT / "bin" / "web").read_text()
    others = set(listed) - read
    assert others and all(re.search(rf"\$\{{?{name}\b", scripts) for name in others), sorted(others)
