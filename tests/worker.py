"""A real Celery worker in a subprocess, on the test database and the real Redis broker."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
QUEUES = "media,asr,burn,hooks"


def database_url() -> str:
    """The URL of the database the tests run on, for processes the tests start."""
    db = connection.settings_dict
    auth = db["USER"] or ""
    if db["PASSWORD"]:
        auth += f":{db['PASSWORD']}"
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def purge_queues(env: dict) -> None:
    subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", "purge", "-f", "-Q", QUEUES],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )


@contextlib.contextmanager
def running_worker(log_path: Path, queues: str = QUEUES, concurrency: int = 1, purge: bool = True, **extra_env: str):
    """Start a worker (bin/worker) on `queues` (all by default); yield the process; stop it (or kill
    it) at the end.

    The worker talks to the test database (the test must commit: django_db(transaction=True)).
    """
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CONN_MAX_AGE": "0",
        "PYTHONUNBUFFERED": "1",
        **extra_env,
    }
    if purge:  # a test that hands a job from one worker to the next keeps its queued task
        purge_queues(env)
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            str(ROOT / "bin" / "worker"),
            "--queues",
            queues,
            "--concurrency",
            str(concurrency),
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
            "--hostname",
            f"test-{os.getpid()}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while "ready." not in log_path.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"The Celery worker did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kill_worker(process)
        log.close()


def kill_worker(process) -> None:
    """kill -9 the worker and its pool processes, as a crash or an OOM kill would."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
