"""A worker that overruns its shutdown bound kills its pool processes and exits (tasks._end_now)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import wait_until

# A worker's main process in small: a pool process that would run on, and the bound's timer firing.
WORKER = """
import threading, time
import django
django.setup()
from billiard import Process
from transcription import tasks
child = Process(target=time.sleep, args=(60,), daemon=True)
child.start()
print(child.pid, flush=True)
threading.Timer(0.1, tasks._end_now, args=(0.1,)).start()
time.sleep(30)
"""


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, killed and not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_a_worker_past_its_shutdown_bound_kills_its_pool_processes_and_exits():
    worker = subprocess.run(
        [sys.executable, "-c", WORKER],
        capture_output=True,
        text=True,
        timeout=25,  # the timer thread's failure would leave the worker sleeping its 30 s
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
    )
    assert worker.returncode == 1, worker.stderr
    assert worker.stdout.strip(), worker.stderr
    child = int(worker.stdout.split()[0])
    # SIGKILL is delivered, not waited for
    wait_until(lambda: not _running(child), f"end of the killed child {child}", timeout=5)
