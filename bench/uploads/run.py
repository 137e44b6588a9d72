"""bench/uploads: what an upload costs, measured the production way (bin/web, bin/worker).

1. Throughput: a 1 GB file (a WAV of silence, 9 h 19 min: ffprobe accepts it) sent to
   `POST /v1/api/uploads` by curl, raw and multipart, against `cat` of the same file to the same
   disk; both followed by `sync` of the written file, so each figure counts the bytes on the disk.
2. Memory: the web worker process's RSS sampled every 50 ms during each upload; the growth is the
   peak minus the RSS before (after a warm-up upload).
3. Upload-to-done against URL: a 5-minute recording (LibriVox, looped) transcribed from an upload
   (the clock starts when the upload has ended, at the POST /v1/api/transcribe) and from its URL
   (served on 127.0.0.1), in ABBA order; the ratio of the medians.

Its own redis-server on a free port (nothing of another Redis is touched) and the database
DATABASE_URL (default postgres://root@127.0.0.1:5432/bench_uploads, created when missing). Writes
bench/uploads/results.json. About 10 minutes on the shared 2-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = HERE / "results.json"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
os.environ.setdefault("DATABASE_URL", "postgres://root@127.0.0.1:5432/bench_uploads")
os.environ.setdefault("SECRET_KEY", "bench-" + secrets.token_urlsafe(48))
os.environ["DEBUG"] = "false"
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"


def log(message: str) -> None:
    print(f"[bench-uploads] {message}", flush=True)


def run(command: list[str], **options) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, capture_output=True, text=True, **options)


def timed(command: str) -> float:
    started = time.perf_counter()
    subprocess.run(["bash", "-c", command], check=True)
    return time.perf_counter() - started


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def web_worker_pid(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return int(children[0])


@contextlib.contextmanager
def sampling(pid: int):
    """The peak RSS (MB) of `pid` while the block runs, sampled every 50 ms."""
    peak = {"mb": rss_mb(pid)}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak["mb"] = max(peak["mb"], rss_mb(pid))
            time.sleep(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


def request(method: str, url: str, token: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers, method=method)) as answer:
        raw = answer.read()
    return json.loads(raw) if raw else {}


def wait_done(base: str, token: str, job_id: str, timeout: float = 1800) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = request("GET", f"{base}/v1/api/transcription/{job_id}", token)
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.25)
    raise RuntimeError(f"job {job_id} did not end in {timeout} s")


def media(work: Path) -> tuple[Path, Path]:
    """The 1 GB WAV and the 5-minute MP4 (made once; kept in `work`)."""
    work.mkdir(parents=True, exist_ok=True)
    big = work / "silence-1gb.wav"
    if not big.exists():
        log("making the 1 GB WAV")
        seconds = (1024**3 - 44) / 32000
        run(
            ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono"]
            + ["-t", f"{seconds:.4f}", "-c:a", "pcm_s16le", str(big)],
            timeout=600,
        )
    talk = work / "talk-5min.mp4"
    if not talk.exists():
        log("making the 5-minute recording")
        listing = work / "clips.txt"
        listing.write_text("".join(f"file '{p}'\n" for p in sorted(LIBRIVOX.glob("*.wav"))))
        run(
            ["ffmpeg", "-nostdin", "-v", "error", "-y", "-stream_loop", "-1", "-f", "concat", "-safe", "0"]
            + ["-i", str(listing), "-t", "300", "-c:a", "aac", "-b:a", "64k", str(talk)],
            timeout=600,
        )
    return big, talk


def throughput(
    base: str, token: str, pid: int, big: Path, media_root: Path, rounds: int, baseline: float
) -> dict[str, object]:
    """cat + sync against the two ways of uploading `big` (then sync), each `rounds` times, and the
    web process's RSS peak during each upload."""
    auth = f"Authorization: Bearer {token}"
    copy = media_root / "incoming" / "cat-copy.bin"
    copy.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {}
    ways = {
        "raw": ["-T", str(big), "-X", "POST", "-H", "Content-Type: audio/wav"],  # -T streams the file
        "multipart": ["-F", f"file=@{big}"],
    }

    def by_cat() -> float:
        copy.unlink(missing_ok=True)
        seconds = timed(f"cat '{big}' > '{copy}' && sync '{copy}'")
        copy.unlink(missing_ok=True)
        return seconds

    from harness.processes import free_port

    bare_port = free_port()
    bare_file = media_root / "incoming" / "bare-copy.bin"
    bare = subprocess.Popen(
        [sys.executable, str(HERE / "bare_receiver.py"), str(bare_port), str(bare_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert bare.stdout is not None and bare.stdout.readline().strip() == "listening"

    def by_bare() -> float:
        started = time.perf_counter()
        run(["curl", "-sS", "-f", f"http://127.0.0.1:{bare_port}/", *ways["raw"]])
        subprocess.run(["sync", str(bare_file)], check=True)
        seconds = time.perf_counter() - started
        bare_file.unlink(missing_ok=True)
        return seconds

    def by_upload(body: list[str]) -> tuple[float, float]:
        with sampling(pid) as peak:
            started = time.perf_counter()
            answer = json.loads(run(["curl", "-sS", "-f", f"{base}/v1/api/uploads", "-H", auth, *body]).stdout)
            subprocess.run(["sync", str(media_root / "uploads" / answer["id"])], check=True)
            seconds = time.perf_counter() - started
        request("DELETE", f"{base}/v1/api/uploads/{answer['id']}", token)
        return seconds, peak["mb"]

    # cat and the two ways take turns, the order turning each round (the machine's speed drifts
    # from minute to minute), each after a sync so no step pays for the one before it
    # and the floor: the same curl into a bare Python socket server (bare_receiver.py)
    seconds: dict[str, list[float]] = {"cat": [], "raw": [], "multipart": [], "bare": []}
    peaks: dict[str, list[float]] = {"raw": [], "multipart": []}
    order = list(seconds)
    try:
        for round_ in range(rounds):
            for name in order[round_ % 4 :] + order[: round_ % 4]:
                subprocess.run(["sync"], check=True)
                if name == "cat":
                    seconds["cat"].append(by_cat())
                elif name == "bare":
                    seconds["bare"].append(by_bare())
                else:
                    took, peak = by_upload(ways[name])
                    seconds[name].append(took)
                    peaks[name].append(peak)
            log(", ".join(f"{name} {times[-1]:.2f} s" for name, times in seconds.items()))
    finally:
        bare.terminate()
        bare.wait()
    size_mb = big.stat().st_size / 1e6
    cat_mb_per_s = size_mb / statistics.median(seconds["cat"])
    results["cat_seconds"] = seconds["cat"]
    results["cat_mb_per_s"] = cat_mb_per_s
    bare_mb_per_s = size_mb / statistics.median(seconds["bare"])
    results["bare_receiver_seconds"] = seconds["bare"]
    results["bare_receiver_mb_per_s"] = bare_mb_per_s
    results["bare_receiver_vs_cat"] = bare_mb_per_s / cat_mb_per_s
    log(f"bare receiver: {bare_mb_per_s:.0f} MB/s ({bare_mb_per_s / cat_mb_per_s:.2f} x cat)")
    for name in ways:
        mb_per_s = size_mb / statistics.median(seconds[name])
        rss_growth_mb = max(peaks[name]) - baseline
        results[f"upload_{name}_seconds"] = seconds[name]
        results[f"upload_{name}_mb_per_s"] = mb_per_s
        results[f"upload_{name}_rss_growth_mb"] = rss_growth_mb
        results[f"upload_{name}_vs_cat"] = mb_per_s / cat_mb_per_s
        log(
            f"{name}: {mb_per_s:.0f} MB/s ({mb_per_s / cat_mb_per_s:.2f} x cat {cat_mb_per_s:.0f} MB/s), "
            f"RSS +{rss_growth_mb:.1f} MB"
        )
    return results


@contextlib.contextmanager
def served(folder: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        """Logs no request (setting log_message on the partial below, as before, silenced nothing)."""

        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of cat, a raw and a multipart upload of 1 GB")
    parser.add_argument("--abba", type=int, default=1, help="ABBA blocks of the upload-to-done comparison")
    parser.add_argument("--skip-done", action="store_true", help="throughput and memory only")
    args = parser.parse_args()

    from harness.processes import ensure_database, free_port, running_redis

    ensure_database(os.environ["DATABASE_URL"])

    port = free_port()
    with running_redis(port):
        os.environ["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
        os.environ["ALLOW_PRIVATE_URLS"] = "true"
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        from accounts.models import Account
        from accounts.services import account_create, token_issue
        from billing.services import grant_staff_minutes

        account = Account.objects.filter(user__email="bench-uploads@example.com").first()
        account = account or account_create("bench-uploads@example.com")
        grant_staff_minutes(account, 600, reason="bench/uploads")
        token = token_issue(account)
        media_root = Path(settings.MEDIA_ROOT)
        work = Path(settings.DATA_DIR) / "bench-uploads"
        big, talk = media(work)
        results = {"file_bytes": big.stat().st_size, "media_root": str(media_root)}

        env = {**os.environ, "WEB_WORKERS": "1", "PYTHONUNBUFFERED": "1"}
        web_port = free_port()
        base = f"http://127.0.0.1:{web_port}"
        log_dir = work / "logs"
        log_dir.mkdir(exist_ok=True)
        web = subprocess.Popen(
            [str(ROOT / "bin" / "web")],
            cwd=ROOT,
            env={**env, "BIND": f"127.0.0.1:{web_port}"},
            stdout=(log_dir / "web.log").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        worker = None
        try:
            for _ in range(200):
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(f"{base}/health", timeout=2)
                    break
                time.sleep(0.2)
            pid = web_worker_pid(web.pid)
            auth = f"Authorization: Bearer {token}"
            warm = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0870.wav"
            run(["curl", "-sS", "-f", f"{base}/v1/api/uploads", "-H", auth, "-F", f"file=@{warm}"])
            baseline = rss_mb(pid)
            results |= throughput(base, token, pid, big, media_root, args.rounds, baseline)
            results["web_rss_before_mb"] = baseline

            if not args.skip_done:
                worker = subprocess.Popen(
                    [str(ROOT / "bin" / "worker"), "-Q", "media,asr,burn,hooks", "-c", "1", "--without-gossip"],
                    cwd=ROOT,
                    env=env,
                    stdout=(log_dir / "worker.log").open("w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                with served(work) as files_base:
                    url = f"{files_base}/{talk.name}"

                    def by_url() -> float:
                        started = time.perf_counter()
                        job = request("POST", f"{base}/v1/api/transcribe", token, {"url": url})
                        assert wait_done(base, token, job["id"])["state"] == "done"
                        return time.perf_counter() - started

                    def by_upload() -> float:
                        upload = json.loads(
                            run(
                                ["curl", "-sS", "-f", f"{base}/v1/api/uploads", "-H", auth, "-F", f"file=@{talk}"]
                            ).stdout
                        )
                        started = time.perf_counter()  # the upload has ended
                        job = request("POST", f"{base}/v1/api/transcribe", token, {"upload_id": upload["id"]})
                        assert wait_done(base, token, job["id"])["state"] == "done"
                        return time.perf_counter() - started

                    log("warm-up job (loads the model in the worker)")
                    by_url()
                    timings: dict[str, list[float]] = {"url": [], "upload": []}
                    for _ in range(args.abba):
                        for name, way in (
                            ("upload", by_upload),
                            ("url", by_url),
                            ("url", by_url),
                            ("upload", by_upload),
                        ):
                            timings[name].append(way())
                            log(f"{name}: {timings[name][-1]:.1f} s")
                results["done_url_seconds"] = timings["url"]
                results["done_upload_seconds"] = timings["upload"]
                results["done_ratio"] = statistics.median(timings["upload"]) / statistics.median(timings["url"])
                log(f"upload-to-done / url-to-done: {results['done_ratio']:.3f}")
        finally:
            for process in (worker, web):
                if process is not None and process.poll() is None:
                    process.terminate()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=30)
        if args.skip_done and RESULTS.exists():  # keep the last whole run's upload-to-done figures
            earlier = json.loads(RESULTS.read_text())
            results |= {key: value for key, value in earlier.items() if key.startswith("done_")}
            results.setdefault("done_when", earlier.get("done_when", earlier.get("when")))
        elif not args.skip_done:
            results["done_when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        results["load_average"] = os.getloadavg()
        results["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        RESULTS.write_text(json.dumps(results, indent=2) + "\n")
        log(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
