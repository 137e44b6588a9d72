"""Every account is served in turn on the embedded default too (issue 53, item 6): `make run`'s
processes (bin/run: the web and one worker of concurrency 1 on every queue, SQLite and Celery's
filesystem broker, no Redis), where the lines are kept in the database. Another account's single
job, queued after a five-job batch, is the second job started, as tests/e2e/test_fair_turns.py
finds with Redis. The server is stopped once the order is known: nothing here waits for the
batch's speech stages."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import uuid
from pathlib import Path

import pytest

from harness.processes import ROOT, embedded_env, free_port, request, start
from tests.support import wait_until

BATCH = 5

pytestmark = pytest.mark.e2e


def started(data_dir: Path) -> dict[str, str]:
    """When each job of the embedded database left `waiting` (its first stage), by job id."""
    with sqlite3.connect(data_dir / "db.sqlite3", timeout=30) as db:
        rows = db.execute("SELECT id, timeline FROM transcription_job").fetchall()
    found = {}
    for job_id, timeline in rows:
        when = next((at for state, at in json.loads(timeline) if state == "preparing"), None)
        if when is not None:
            found[str(uuid.UUID(job_id))] = when
    return found


def test_on_the_embedded_default_a_single_job_queued_after_a_batch_starts_second(tmp_path, media_server):
    port = free_port()
    env = embedded_env(tmp_path, PORT=str(port), ALLOW_PRIVATE_URLS="true")
    base = f"http://127.0.0.1:{port}"
    server = start(
        [str(ROOT / "bin" / "run")], tmp_path / "run.log", ready="Application startup complete", env=env, timeout=180
    )
    try:
        token = re.search(r"^API token:\s+(\S+)", (tmp_path / "run.log").read_text(), re.M).group(1)
        made = subprocess.run(
            [str(ROOT / "bin" / "manage"), "create_account", "other@example.com", "--minutes", "30"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        other = made.stdout.strip().splitlines()[-1]
        speech = {"url": media_server.url("/files/speech.wav")}

        def submit(token: str) -> str:
            status, _, body = request("POST", f"{base}/v1/api/transcribe", token, speech)
            assert status == 200, body
            return body["id"]

        batch = [submit(token) for _ in range(BATCH)]
        first = wait_until(lambda: next(iter(started(tmp_path / "var")), None), "a batch job to start", timeout=120)
        single = submit(other)
        status, headers, body = request("GET", f"{base}/v1/api/transcription/{single}", other)
        assert status == 200 and body["state"] == "waiting", body
        wait_until(lambda: single in started(tmp_path / "var"), "the single job to start", timeout=300)
        times = started(tmp_path / "var")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    order = sorted(times, key=times.get)
    assert first in batch and order[:2] == [first, single], (order, batch, single)
    assert order[0] == batch[0], "one account's jobs in the order queued"
