"""Servers the tests start as real processes: the production web server (bin/web) on the test
database, and a Redis of their own on a free port that a test can stop and start again."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.worker import ROOT, database_url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(method: str, url: str, token: str | None = None, body: dict | None = None, timeout: float = 30):
    """(status, headers, JSON body or text) of one HTTP request; HTTP errors are answers too."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            status, answer_headers, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, answer_headers, raw = error.code, error.headers, error.read()
    try:
        content = json.loads(raw)
    except ValueError:
        content = raw.decode(errors="replace")
    return status, answer_headers, content


@contextlib.contextmanager
def running_redis(port: int):
    """A redis-server on 127.0.0.1:`port`, keeping nothing on disk (a restart loses everything)."""
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.contextmanager
def running_web(log_path: Path, **extra_env: str):
    """bin/web (the production server command) on a free port, on the test database (the test
    must commit: django_db(transaction=True)); yields its base URL."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CONN_MAX_AGE": "0",
        "BIND": f"127.0.0.1:{port}",
        "WEB_WORKERS": "1",
        "PYTHONUNBUFFERED": "1",
        **extra_env,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log = log_path.open("w")
    process = subprocess.Popen(
        [str(ROOT / "bin" / "web")], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError):
                request("GET", base + "/health", timeout=2)
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"bin/web did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield base
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # the master stops its workers
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # its own session: only the master and its workers
                process.wait()
        log.close()
