"""One long recording on one asr worker vs two (issue 44, item 1: one long video across the fleet).

Through the real stack: a PostgreSQL database of its own (dropped, created, migrated), Redis (a
database number of its own), real Celery workers (bin/worker, concurrency 1, every queue) each
pinned to one core with `taskset` (its speech model then runs one thread, SPEAKER_THREADS=1), the
MediaServer on 127.0.0.1 serving >= --minutes of LibriVox speech (as rtf.py builds it) as a 16 kHz
WAV, and Django's test client for POST /v1/api/transcribe.

- one: one worker on core 0 recognises every chunk (and diarizes beside it, at SCHED_IDLE);
- two: two workers, on cores 0 and 1: the job's chunks are spread over both (SPREAD_ABOVE_SECONDS
  below the audio's length in both configurations, so the only difference is the second worker).

The chunks are SPREAD_CHUNK_SECONDS long (180, the default; --chunk-seconds, or a twelfth of the
audio when that is shorter, so a quick check has several chunks too); one worker alone recognises
the same chunks in turn, as it does with the shipped settings when no other worker is free. Fresh workers start for
each run and are warmed up by one short job each (the model loaded, the speaker graphs built), so
the run times the job only. The two configurations alternate ABBA (--rounds). For each run: wall
time POST -> done, the speech stage's time (processing -> done, from the job's timeline), the WER
against the LibriVox text, the CPU seconds of each worker with its children (what the split costs:
two processes detect the language and load the model where one did), and who recognised which
chunk.

    python bench/asr/spread.py --minutes 10 --rounds 2       # a quick check, about 12 min here
    python bench/asr/spread.py                                # 60 minutes, 2 rounds (a quiet machine)

ratio = median two-worker wall / median one-worker wall (target <= 0.65). Results:
bench/asr/results-spread.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline import fresh_database  # noqa: E402
from rtf import abba, build_audio, reference_text, wer, without_paragraph_heads  # noqa: E402

TARGET = 0.65
QUEUES = "media,asr,burn,hooks"


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of `pid` and its live descendants, with the children each of them
    has waited for (the diarization child, ffmpeg): /proc's utime, stime, cutime, cstime."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        stats[int(stat.parent.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / ticks)
    total, level = 0.0, {pid}
    while level:
        total += sum(stats[p][1] for p in level if p in stats)
        level = {p for p, (parent, _) in stats.items() if parent in level}
    return total


def main() -> None:  # noqa: C901 (one bench, read top to bottom)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--model", default="base")
    ap.add_argument("--chunk-seconds", type=float, default=180.0, help="SPREAD_CHUNK_SECONDS (180)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each configuration, ABBA (2)")
    ap.add_argument("--cores", default="0,1", help="the two cores the workers are pinned to")
    ap.add_argument("--db-name", default="bench_spread")
    ap.add_argument("--pg-host", default="127.0.0.1")
    ap.add_argument("--pg-port", type=int, default=5432)
    ap.add_argument("--pg-user", default="root")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/8", help="a Redis database of its own")
    ap.add_argument("--cache-dir", default=str(ROOT / "var" / "models"))
    ap.add_argument("--out", default=str(Path(__file__).with_name("results-spread.json")))
    args = ap.parse_args()
    cores = args.cores.split(",")

    tmp = Path(tempfile.mkdtemp(prefix="bench-spread-"))
    media = tmp / "media"
    media.mkdir()
    speech_wav, repeats = build_audio(media, args.minutes)
    audio_s = float(
        subprocess.check_output(
            ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(speech_wav)], text=True
        )
    )
    chunk_s = min(args.chunk_seconds, audio_s / 12)
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-i", str(speech_wav), "-t", "12", str(media / "warm.wav")], check=True
    )

    os.environ.setdefault("SECRET_KEY", "bench-" + secrets.token_urlsafe(48))
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"postgres://{args.pg_user}@{args.pg_host}:{args.pg_port}/{args.db_name}",
            "REDIS_URL": args.redis,
            "ALLOW_PRIVATE_URLS": "true",
            "WHISPER_MODEL": args.model,
            "MODEL_CACHE_DIR": args.cache_dir,
            "DATA_DIR": str(tmp / "data"),
            "FREE_MINUTES": str(int(args.minutes * 2 * args.rounds * 2 + 60)),
            "CONN_MAX_AGE": "0",
            "LOG_LEVEL": "WARNING",
            "SPEAKER_THREADS": "1",
            "RECOGNITION_CHUNK_SECONDS": str(min(600.0, audio_s / 3)),  # one worker's plan: several chunks
            "SPREAD_CHUNK_SECONDS": str(chunk_s),
            "SPREAD_ABOVE_SECONDS": str(min(1200.0, audio_s / 2)),
        }
    )
    fresh_database(args)

    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from accounts.services import account_create, token_issue
    from harness.media_server import MediaServer
    from harness.processes import purge_queues, service_env, start, stop, worker_command
    from transcription.models import Job, RecognitionChunk

    call_command("migrate", verbosity=0)
    account = account_create("bench@example.com")
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token_issue(account)}"

    def queue_job(url: str) -> str:
        response = client.post("/v1/api/transcribe", data=json.dumps({"url": url}), content_type="application/json")
        assert response.status_code == 200, response.content
        return response.json()["id"]

    def wait(job_ids: list[str], limit: float) -> None:
        deadline = time.monotonic() + limit
        while Job.objects.filter(pk__in=job_ids).exclude(state__in=("done", "failed")).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"jobs {job_ids} not done after {limit} s")
            time.sleep(0.5)
        failed = list(Job.objects.filter(pk__in=job_ids, state="failed").values_list("error", flat=True))
        if failed:
            raise RuntimeError(f"failed: {failed}")

    def run(name: str, server) -> dict:
        env = service_env()
        purge_queues(env)
        workers = {}
        try:
            for n, core in enumerate(cores[: 1 if name == "one" else 2]):
                command = ["taskset", "-c", core, *worker_command(QUEUES, 1, f"w{n}@%h")]
                workers[f"w{n}"] = start(command, tmp / f"{name}-w{n}.log", ready="ready.", env=env)
            # one short job per worker, queued together: each loads its model before the timed job
            wait([queue_job(server.url("/files/warm.wav")) for _ in workers], 600)
            cpu_before = {w: tree_cpu_seconds(p.pid) for w, p in workers.items()}
            load_before = os.getloadavg()[0]
            t0 = time.perf_counter()
            job_id = queue_job(server.url("/files/speech.wav"))
            wait([job_id], 6 * 3600)
            wall = time.perf_counter() - t0
            cpu = {w: round(tree_cpu_seconds(p.pid) - cpu_before[w], 1) for w, p in workers.items()}
        finally:
            for process in workers.values():
                stop(process)
        job = Job.objects.get(pk=job_id)
        times = {state: datetime.fromisoformat(at) for state, at in job.timeline}
        chunks = RecognitionChunk.objects.filter(job_id=job_id)
        txt = client.get(f"/v1/api/transcription/{job_id}").json()["txt"]
        result = {
            "config": name,
            "wall_s": round(wall, 1),
            "speech_stage_s": round((times["done"] - times["processing"]).total_seconds(), 1),
            "worker_cpu_s": cpu,
            "cpu_s": round(sum(cpu.values()), 1),
            "chunks_by_worker": dict(Counter(c.claimed_by.split("@")[0] for c in chunks)),
            "wer": round(wer(reference_text(repeats), without_paragraph_heads(txt)), 4),
            "speakers": sorted(set(re.findall(r"Speaker \d+", txt))),
            "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }
        print(json.dumps(result), flush=True)
        return result

    order = abba(args.rounds, "one", "two")
    runs: list[dict] = []
    with MediaServer(media) as server:
        for name in order:
            runs.append(run(name, server))

    def median(name: str, key: str) -> float:
        return round(statistics.median(r[key] for r in runs if r["config"] == name), 4)

    ratio = median("two", "wall_s") / median("one", "wall_s")
    result = {
        "model": args.model,
        "audio_s": round(audio_s, 1),
        "chunk_s": round(chunk_s, 1),
        "cores": cores,
        "cpu_count": os.cpu_count(),
        "order": order,
        "summary": "median of each configuration's runs",
        "wall_s": {name: median(name, "wall_s") for name in ("one", "two")},
        "speech_stage_s": {name: median(name, "speech_stage_s") for name in ("one", "two")},
        "cpu_s": {name: median(name, "cpu_s") for name in ("one", "two")},
        "wer": {name: median(name, "wer") for name in ("one", "two")},
        "ratio": round(ratio, 3),
        "speech_stage_ratio": round(median("two", "speech_stage_s") / median("one", "speech_stage_s"), 3),
        "cpu_ratio": round(median("two", "cpu_s") / median("one", "cpu_s"), 3),
        "target": f"ratio <= {TARGET}",
        "target_met": ratio <= TARGET,
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
