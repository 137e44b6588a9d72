"""Real processes for tests and benchmarks: one way to start a command and wait until it is ready,
and the servers started that way (bin/worker, bin/web, redis-server) on the test database."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUEUES = "media,asr,burn,hooks"
STARTUP_SECONDS = 90  # a cold start on a loaded machine: Django, Celery, the speech stack's imports


def start(
    command: list[str],
    log_path: Path,
    *,
    ready: str | Callable[[], object] | None,
    env: dict[str, str] | None = None,
    timeout: float = STARTUP_SECONDS,
) -> subprocess.Popen:
    """Start `command` in the repository, in a session of its own (stop() reaches its children),
    its output in `log_path`; return once `ready` (a line its log shows, or a condition) holds.
    RuntimeError with the log's end when it exits first or is not ready within `timeout`."""
    log = log_path.open("w")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()  # the child holds its own copy
    deadline = time.monotonic() + timeout
    while ready is not None and not (ready in log_path.read_text() if isinstance(ready, str) else ready()):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise RuntimeError(f"{command[0]} did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    return process


def stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM, as an operator would; its whole session killed if it is still there after `timeout`."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
            return
        except subprocess.TimeoutExpired:
            pass
    kill(process)


def kill(process: subprocess.Popen) -> None:
    """kill -9 the process and its session (a worker's pool processes), as a crash or an OOM kill would."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """The URL of the database this process runs on (the tests': test_...), for processes it starts."""
    from django.db import connection

    db = connection.settings_dict
    auth = db["USER"] or ""
    if db["PASSWORD"]:
        auth += f":{db['PASSWORD']}"
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def ensure_database(url: str) -> bool:
    """Create the PostgreSQL database `url` names when it is missing (a benchmark's own database),
    connecting to the server's `postgres` database; True when it was created."""
    import environ
    import psycopg
    from psycopg import sql

    config = environ.Env.db_url_config(url)
    if "postgresql" not in config["ENGINE"]:
        raise SystemExit(f"a PostgreSQL database is needed; DATABASE_URL is {config['ENGINE']}")
    with psycopg.connect(
        dbname="postgres",
        autocommit=True,
        connect_timeout=5,
        host=config.get("HOST") or None,
        port=config.get("PORT") or None,
        user=config.get("USER") or None,
        password=config.get("PASSWORD") or None,
    ) as connection:
        if connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]).fetchone():
            return False
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(config["NAME"])))
        return True


def service_env(**extra_env: str) -> dict[str, str]:
    """The environment of a web or worker process on this process's database and Redis."""
    from django.conf import settings

    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CONN_MAX_AGE": "0",
        "PYTHONUNBUFFERED": "1",
        **extra_env,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def embedded_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The embedded default (`make run`: SQLite and the filesystem broker under DATA_DIR, no Redis),
    as a fresh shell has it: none of the suite's own settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")
    }
    return env | {"DATA_DIR": str(tmp_path / "var"), "PYTHONUNBUFFERED": "1", **extra}


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


def purge_queues(env: dict) -> None:
    subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", "purge", "-f", "-Q", QUEUES],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )


def worker_command(
    queues: str = QUEUES, concurrency: int = 1, hostname: str | None = None, pool: str = "prefork"
) -> list[str]:
    """bin/worker as the tests and the fleet run it: no gossip, no mingle, INFO logs."""
    return [
        str(ROOT / "bin" / "worker"),
        *("--queues", queues, "--concurrency", str(concurrency), "--pool", pool),
        *("--without-gossip", "--without-mingle", "--loglevel", "INFO"),
        *("--hostname", hostname or f"test-{os.getpid()}@%h"),
    ]


@contextlib.contextmanager
def running_worker(
    log_path: Path,
    queues: str = QUEUES,
    concurrency: int = 1,
    purge: bool = True,
    pool: str = "prefork",
    hostname: str | None = None,
    **extra_env: str,
):
    """A worker (bin/worker) on `queues` (all by default) on this process's database and Redis (a
    test must commit: django_db(transaction=True)), named `hostname` (Celery's -n) when given;
    yields the process; stopped at the end."""
    env = service_env(**extra_env)
    if purge:  # a test that hands a job from one worker to the next keeps its queued task
        purge_queues(env)
    process = start(worker_command(queues, concurrency, hostname, pool), log_path, ready="ready.", env=env)
    try:
        yield process
    finally:
        stop(process)


@contextlib.contextmanager
def running_web(log_path: Path, port: int | None = None, **extra_env: str):
    """bin/web (the production server command) on a free port (or `port`), on this process's
    database; yields its base URL once /health answers."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    env = service_env(BIND=f"127.0.0.1:{port}", WEB_WORKERS="1", **extra_env)

    def answers() -> bool:
        with contextlib.suppress(OSError):
            request("GET", base + "/health", timeout=2)
            return True
        return False

    process = start([str(ROOT / "bin" / "web")], log_path, ready=answers, env=env, timeout=60)
    try:
        yield base
    finally:
        stop(process, timeout=15)  # the master stops its workers


@contextlib.contextmanager
def running_redis(port: int, *options: str):
    """A redis-server on 127.0.0.1:`port`, keeping nothing on disk (a restart loses everything);
    `options` are redis-server's (--requirepass, --tls-port ...)."""
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *options]
    with tempfile.TemporaryDirectory(prefix="redis-") as folder:
        process = start(command, Path(folder) / "redis.log", ready="Ready to accept connections", timeout=10)
        try:
            yield process
        finally:
            stop(process, timeout=10)
