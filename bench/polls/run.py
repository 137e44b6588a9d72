#!/usr/bin/env python
"""Polling benchmark: GET /v1/api/transcription/{id} against a bare Django view, same server, same run.

    python bench/polls/run.py                 # from the repository root (or `make bench-polls`)
    python bench/polls/run.py --duration 5    # quicker, noisier
    python bench/polls/run.py --profile 2000  # no server: cProfile over 2000 in-process polls

See bench/polls/README.md for what is measured and why. Writes bench/polls/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgres://root@127.0.0.1:5432/bench_polls"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
RESULTS = HERE / "results.json"
GOAL = 0.6  # poll rps / bare rps (issue 20), with the poll p99 at most P99_GOAL x the bare p99
P99_GOAL = 2.0

POLL_LIMIT = 1_000_000_000  # RATE_LIMIT_POLLS_PER_MINUTE for the server: no 429 during the run

os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
os.environ["RATE_LIMIT_POLLS_PER_MINUTE"] = str(POLL_LIMIT)
os.environ["DJANGO_SETTINGS_MODULE"] = "bench.polls.settings"
# A benchmark signs nothing anyone keeps: a key of its own when the caller has none (the service
# itself refuses to start without one).
os.environ.setdefault("SECRET_KEY", "bench-" + secrets.token_urlsafe(48))
os.environ["DEBUG"] = "false"  # DEBUG keeps every SQL query in memory: never benchmark with it
os.environ["ALLOWED_HOSTS"] = "127.0.0.1,localhost,testserver"

from bench.polls.environment import clear_rate_limit_keys, environment, run_quietly  # noqa: E402
from bench.polls.fixture import create_fixture, ensure_database, log  # noqa: E402

# --- Server ------------------------------------------------------------------------------------


def poll_answer_bytes(fixture: dict) -> int:
    """The size of the poll's answer (the cached body), for the bare ASGI answer of the same size."""
    import uuid

    from transcription.api.front.polls import cached_poll

    cached = cached_poll(uuid.UUID(fixture["job_id"]))
    assert cached, f"no job {fixture['job_id']}"
    return len(cached.body)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(port: int, args, logdir: Path) -> subprocess.Popen:
    logs = ["--access-logfile", str(logdir / "access.log"), "--error-logfile", str(logdir / "error.log")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if args.worker_class == "web":
        # The production server as it ships: bin/web's own command (gunicorn with uvicorn workers
        # serving config.asgi), with
        # only the address, the number of workers and the logs chosen here.
        # -c: /bench/asgi-constant, a bare ASGI answer of the poll's size in the same workers.
        command = [str(ROOT / "bin" / "web"), *logs, "-c", str(HERE / "asgi_constant.py")]
        env |= {
            "BIND": f"127.0.0.1:{port}",
            "WEB_WORKERS": str(args.workers),
            "BENCH_CONSTANT_BYTES": str(args.constant_bytes),
        }
        log(f"starting bin/web (WEB_WORKERS={args.workers}) " + " ".join(logs))
        return subprocess.Popen(
            command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(args.workers),
        "--worker-class",
        args.worker_class,
        # bin/run logs every request (to stdout); a file here costs the same and keeps the output clean.
        "--access-logfile",
        str(logdir / "access.log"),
        "--error-logfile",
        str(logdir / "error.log"),
    ]
    if args.worker_class == "gthread":
        command += ["--threads", str(args.threads_per_worker)]
    log("starting " + " ".join(command[1:]))
    return subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def worker_memory(master_pid: int) -> dict[str, float]:
    """RSS (MB) of each gunicorn worker: the master's children, read from /proc."""
    memory = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != master_pid:  # fields: state, ppid, ...
                continue
            status = (stat.parent / "status").read_text()
        except (OSError, IndexError, ValueError):
            continue  # a process that ended meanwhile
        rss = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert rss, status
        rss_kb = int(rss[1])
        memory[stat.parent.name] = round(rss_kb / 1024, 1)
    return memory


def stop_gunicorn(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)  # the master stops its workers
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its own session: only the master and its workers
        process.wait(timeout=5)


def get(url: str, token: str | None = None, timeout: float = 5.0):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, {name.lower(): value for name, value in response.headers.items()}, response.read()


def wait_ready(process: subprocess.Popen, url: str, logdir: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            errors = (
                (logdir / "error.log").read_text(errors="replace")[-3000:] if (logdir / "error.log").exists() else ""
            )
            raise RuntimeError(f"gunicorn exited with {process.returncode}:\n{errors}")
        try:
            if get(url, timeout=2)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer {url} within {timeout:.0f} s")


# --- wrk ---------------------------------------------------------------------------------------

_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value)
    if not match:
        raise ValueError(f"unexpected wrk latency {value!r}")
    return float(match[1]) * _UNITS[match[2]]


def parse_wrk(output: str) -> dict:
    def find(pattern):
        match = re.search(pattern, output, re.MULTILINE)
        if not match:
            raise ValueError(f"wrk output has no {pattern!r}:\n{output}")
        return match

    requests = find(r"^\s*(\d+) requests in ([\d.]+\w+)")
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "rps": float(find(r"^Requests/sec:\s+([\d.]+)")[1]),
        "p50_ms": round(_ms(find(r"^\s+50%\s+(\S+)")[1]), 3),
        "p75_ms": round(_ms(find(r"^\s+75%\s+(\S+)")[1]), 3),
        "p90_ms": round(_ms(find(r"^\s+90%\s+(\S+)")[1]), 3),
        "p99_ms": round(_ms(find(r"^\s+99%\s+(\S+)")[1]), 3),
        "requests": int(requests[1]),
        "duration": requests[2],
        "non_2xx": int(non_2xx[1]) if non_2xx else 0,
        "socket_errors": dict(zip(["connect", "read", "write", "timeout"], map(int, socket_errors.groups())))
        if socket_errors
        else {"connect": 0, "read": 0, "write": 0, "timeout": 0},
    }


def wrk(url: str, seconds: int, args, token: str | None) -> dict:
    command = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{seconds}s", "--latency", "--timeout", "10s"]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    command.append(url)
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if result.returncode != 0:
        raise RuntimeError(f"wrk failed ({result.returncode}): {result.stderr or result.stdout}")
    return parse_wrk(result.stdout)


# --- Profile mode ------------------------------------------------------------------------------


def profile(fixture: dict, count: int) -> None:
    """cProfile over `count` polls through Django's test client (same settings, no HTTP server)."""
    import cProfile
    import pstats

    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION=f"Bearer {fixture['token']}")
    url = f"/v1/api/transcription/{fixture['job_id']}"
    for _ in range(50):
        assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    log(f"{len(queries)} SQL queries per poll:")
    for query in queries.captured_queries:
        print("   ", query["sql"][:300])
    reset_queries()
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(count):
        client.get(url)
    profiler.disable()
    log(f"{count} polls in-process: {(time.perf_counter() - started) / count * 1000:.3f} ms each (with profiler)")
    stats = pstats.Stats(profiler).sort_stats("cumulative")
    stats.print_stats(45)
    stats.sort_stats("tottime").print_stats(25)


def cpu_per_request(fixture: dict, count: int) -> None:
    """CPU seconds (this process: Django, redis-py, psycopg; not Redis nor PostgreSQL) per request
    through Django's WSGI handler, poll and bare view, interleaved in rounds: a figure a busy
    shared machine disturbs far less than wall-clock throughput."""
    import io

    from django.core.handlers.wsgi import WSGIHandler
    from django.test import RequestFactory

    app = WSGIHandler()
    factory = RequestFactory()

    def call(path: str, headers: dict) -> None:
        # Django's private helper makes the bare WSGI environ without building a WSGIRequest (which
        # the measured CPU would count); django-stubs do not list it.
        environ = factory._base_environ(  # type: ignore[attr-defined]
            PATH_INFO=path, REQUEST_METHOD="GET", QUERY_STRING="", **headers
        )
        environ["wsgi.input"] = io.BytesIO(b"")
        statuses: list[str] = []

        def start_response(
            status: str, _headers: list[tuple[str, str]], _exc_info: object = None
        ) -> Callable[[bytes], object]:
            statuses.append(status)
            return lambda _data: None

        b"".join(app(environ, start_response))
        assert statuses[0].startswith("200"), statuses

    targets = {
        "poll": (f"/v1/api/transcription/{fixture['job_id']}", {"HTTP_AUTHORIZATION": f"Bearer {fixture['token']}"}),
        "bare": ("/bench/constant", {}),
    }
    for path, headers in targets.values():
        for _ in range(50):
            call(path, headers)
    cpu: dict[str, list[float]] = {"poll": [], "bare": []}
    for _ in range(5):
        for name, (path, headers) in targets.items():
            started = time.process_time()
            for _ in range(count):
                call(path, headers)
            cpu[name].append((time.process_time() - started) / count * 1e6)
    poll, bare = statistics.median(cpu["poll"]), statistics.median(cpu["bare"])
    log(f"CPU per request (median of 5 x {count}): poll {poll:.0f} us, bare {bare:.0f} us, bare/poll {bare / poll:.3f}")


# --- Main --------------------------------------------------------------------------------------


def summarize(runs: list[dict]) -> dict:
    return {
        "rps": round(statistics.median(r["rps"] for r in runs), 1),
        "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 3),
        "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 3),
        "runs": runs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=15, help="seconds per measured wrk run (15)")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of unmeasured load per target first (3)")
    parser.add_argument("--rounds", type=int, default=2, help="measured runs per target, interleaved ABBA (2)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (16)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (2)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2, as bin/run)")
    parser.add_argument(
        "--worker-class",
        default="web",
        choices=["web", "sync", "gthread"],
        help="web: bin/web, the production server (default); sync or gthread: gunicorn's own workers on config.wsgi",
    )
    parser.add_argument("--threads-per-worker", type=int, default=4, help="--worker-class gthread only (4)")
    parser.add_argument(
        "--job-state",
        default="done",
        choices=["done", "processing"],
        help="the polled job: done (with text, ~47 kB answer) or processing (no text yet) (done)",
    )
    parser.add_argument(
        "--output", type=Path, default=RESULTS, help="where to write the JSON (bench/polls/results.json)"
    )
    parser.add_argument("--profile", type=int, metavar="N", help="profile N in-process polls instead of benchmarking")
    parser.add_argument(
        "--cpu", type=int, metavar="N", help="no server: this process's CPU time per request, 5 rounds of N each"
    )
    args = parser.parse_args()

    ensure_database()
    fixture = create_fixture(args.job_state)
    args.constant_bytes = poll_answer_bytes(fixture)
    if args.profile or args.cpu:
        try:
            profile(fixture, args.profile) if args.profile else cpu_per_request(fixture, args.cpu)
        finally:
            clear_rate_limit_keys(fixture["account_id"])
        return 0
    if not run_quietly(["which", "wrk"]):
        sys.exit("wrk is not installed: apt-get install -y wrk")

    env_info = environment()
    env_info["loadavg_before"] = os.getloadavg()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    targets = {
        "poll": (f"{base}/v1/api/transcription/{fixture['job_id']}", fixture["token"]),
        "bare": (f"{base}/bench/constant", None),
    }
    if args.worker_class == "web":
        targets["asgi"] = (f"{base}/bench/asgi-constant", None)
    runs: dict[str, list[dict]] = {name: [] for name in targets}
    with tempfile.TemporaryDirectory(prefix="bench-polls-") as tmp:
        logdir = Path(tmp)
        server = start_gunicorn(port, args, logdir)
        try:
            wait_ready(server, targets["bare"][0], logdir)
            status, headers, body = get(*targets["poll"])
            payload = json.loads(body)
            if status != 200 or payload["id"] != fixture["job_id"] or len(payload["translations"]) != 2:
                raise RuntimeError(f"unexpected poll answer {status}: {body[:500]!r}")
            if headers.get("x-ratelimit-limit") != str(POLL_LIMIT):
                raise RuntimeError(f"the server did not take the raised poll limit: {headers}")
            log(f"poll answers 200 with {len(body)} bytes; warming up {args.warmup} s per target")
            polls_served = 1
            for name, (url, token) in targets.items():
                warmup = wrk(url, args.warmup, args, token)
                polls_served += warmup["requests"] if name == "poll" else 0
            order = []
            for i in range(args.rounds):  # ABBA: poll bare bare poll ..., so drift hits both alike
                names = list(targets)
                order += names if i % 2 == 0 else names[::-1]
            for name in order:
                url, token = targets[name]
                result = wrk(url, args.duration, args, token)
                runs[name].append(result)
                polls_served += result["requests"] if name == "poll" else 0
                log(
                    f"{name}: {result['rps']:.1f} req/s, p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms"
                    f" ({result['requests']} requests, non-2xx {result['non_2xx']}, socket errors {result['socket_errors']})"
                )
            workers_rss_mb = worker_memory(server.pid)
            log(f"web workers' RSS after {polls_served} polls: {workers_rss_mb} MB")
        finally:
            stop_gunicorn(server)
            clear_rate_limit_keys(fixture["account_id"])
        env_info["loadavg_after"] = os.getloadavg()

    poll, bare = summarize(runs["poll"]), summarize(runs["bare"])
    ratio = round(poll["rps"] / bare["rps"], 3)
    asgi = summarize(runs["asgi"]) if runs.get("asgi") else None
    bad = [
        f"{name} run {i}"
        for name in runs
        for i, r in enumerate(runs[name])
        if r["non_2xx"] or any(r["socket_errors"].values())
    ]
    result = {
        "benchmark": "bench/polls",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "poll": poll,
        "bare": bare,
        "ratio_rps": ratio,
        "ratio_rps_per_pair": [round(p["rps"] / b["rps"], 3) for p, b in zip(runs["poll"], runs["bare"])],
        # The poll against a constant answer of its own size from a bare ASGI function on the same
        # server (bench/polls/asgi_constant.py): how near the server's own limit the poll is.
        "asgi_constant": asgi,
        "ratio_rps_vs_asgi_constant": round(poll["rps"] / asgi["rps"], 3) if asgi else None,
        "goal": f"ratio_rps >= {GOAL}, p99 <= {P99_GOAL} x bare",
        "meets_goal": ratio >= GOAL and poll["p99_ms"] <= P99_GOAL * bare["p99_ms"],
        "valid": not bad,
        "invalid_runs": bad,
        "p99_ratio": round(poll["p99_ms"] / bare["p99_ms"], 3),
        "web_workers_rss_mb": workers_rss_mb,
        "polls_served": polls_served,
        "setup": {
            "poll": "GET /v1/api/transcription/{id}, Authorization: Bearer <real token>; 5-minute subtitles "
            "job with 2 translations, "
            + (
                "finished: text and subtitles of 75 cues each"
                if args.job_state == "done"
                else "still processing: no text yet"
            ),
            "job_state": args.job_state,
            "poll_response_bytes": len(body),
            "bare": "GET /bench/constant: plain Django view returning constant JSON (bench/polls/urls.py)",
            "asgi_constant": f"GET /bench/asgi-constant: a bare ASGI function answering {args.constant_bytes} constant "
            "bytes of JSON in the same bin/web workers (bench/polls/asgi_constant.py)",
            "server": (
                f"bin/web: gunicorn config.asgi, uvicorn workers, {args.workers} workers"
                if args.worker_class == "web"
                else f"gunicorn config.wsgi, {args.worker_class} worker class, {args.workers} workers"
            )
            + (f" x {args.threads_per_worker} threads" if args.worker_class == "gthread" else "")
            + ", access log to a file, DJANGO_SETTINGS_MODULE=bench.polls.settings",
            "database": re.sub(r"//[^@/]*@", "//", os.environ["DATABASE_URL"]),
            "redis": os.environ["REDIS_URL"],
            "rate_limit_polls_per_minute": POLL_LIMIT,
            "load": f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s --latency",
            "warmup_s": args.warmup,
            "rounds": args.rounds,
            "order": order,
            "summary": "median over rounds of each figure",
        },
        "environment": env_info,
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {
                k: result[k]
                for k in (
                    "ratio_rps",
                    "ratio_rps_vs_asgi_constant",
                    "p99_ratio",
                    "goal",
                    "meets_goal",
                    "valid",
                    "web_workers_rss_mb",
                )
            }
            | {n: {k: v for k, v in result[n].items() if k != "runs"} for n in ("poll", "bare")},
            indent=2,
        )
    )
    log(f"wrote {args.output}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
