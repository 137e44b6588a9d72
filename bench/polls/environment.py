"""What a result was measured on: versions, CPU, commit; and the rate-limit counters a run leaves."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_quietly(command: list[str]) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=10, cwd=ROOT)
        return (result.stdout or result.stderr).strip()
    except OSError:
        return ""


def environment() -> dict:
    from importlib.metadata import version

    cpu_model = ""
    try:
        cpu_model = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    except OSError:
        pass
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "packages": {
            name: version(name)
            for name in ["Django", "djangorestframework", "gunicorn", "uvicorn", "a2wsgi", "psycopg", "redis"]
        },
        "wrk": run_quietly(["wrk", "-v"]).splitlines()[0] if run_quietly(["wrk", "-v"]) else "",
        "git_commit": run_quietly(["git", "rev-parse", "--short", "HEAD"]),
        "git_dirty": bool(run_quietly(["git", "status", "--porcelain", "--untracked-files=no"])),
    }
    try:
        import django
        from django.db import connection

        django.setup()
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            info["postgresql"] = cursor.fetchone()[0]
        connection.close()
        import redis

        info["redis"] = redis.Redis.from_url(os.environ["REDIS_URL"]).info("server")["redis_version"]
    except Exception as error:  # environment info is best effort
        info["server_versions_error"] = repr(error)
    return info


def clear_rate_limit_keys(account_id: int) -> None:
    import redis

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    keys = list(client.scan_iter(f"ratelimit:*:{account_id}:*"))
    if keys:
        client.delete(*keys)
