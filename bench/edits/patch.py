"""bench/edits/patch.py: the whole `PATCH /v1/api/transcription/{id}/segments` of one cue on a
2-hour transcript, through Django (the REST door, the front door, PostgreSQL, Redis's rate limits),
in this process with Django's test client (no HTTP server): issue 46, item 6's goal is p95 < 100 ms.

Rounds alternate A, B and C on the same job, one edit each:
  A ("whole"): the render made from the whole document, as before (the kept render forgotten first)
  B ("incremental"): the render made again from the kept render of the version edited
  C ("from Redis"): as B, the kept render loaded from its copy in Redis (as another web process)
and each round's steps are timed apart: the row read, the edit applied and rendered, the write
(edit_services.segments_edit: the changed parts, the job's texts, the commit), the answer's JSON and
the garbage collector's pauses. Each round starts after a collection (untimed), so that A's
garbage does not land in B's round.

    DATABASE_URL=postgres://root@127.0.0.1:5432/SCRATCH REDIS_URL=redis://127.0.0.1:6379/N \\
      .venv/bin/python bench/edits/patch.py [--hours 2] [--rounds 20]

It migrates the database named and leaves one account and job in it: give it a scratch database.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import secrets
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "bench-edits-" + secrets.token_urlsafe(40))
os.environ.setdefault("RATE_LIMIT_JOBS_PER_MINUTE", "100000")
os.environ.setdefault("RATE_LIMIT_POLLS_PER_MINUTE", "100000")

from bench.edits.run import p50_p95, transcript  # noqa: E402


def setup(hours: float):
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.test import Client

    from accounts.services import account_create, token_issue
    from transcription.models import Job
    from transcription.writes import services

    account = account_create(f"bench-edits-{secrets.token_hex(4)}@example.com")
    document = transcript(hours)
    job = Job.objects.create(
        account=account, url="https://example.com/v", type="subtitles", state="done", progress=100,
        duration=hours * 3600 + 60, detected_language="en",
    )  # fmt: skip
    services.job_keep_segments(job.id, language="en", duration=hours * 3600, segments=document)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(account)}", HTTP_HOST="localhost")
    return client, job, document


STEPS: dict[str, list[float]] = {}
WAYS = ("incremental", "whole", "from Redis")


def timed(owner, name: str, label: str) -> None:
    """`owner.name` timed into STEPS[label] each call (the last call of a round counts)."""
    inner = getattr(owner, name)

    @functools.wraps(inner)  # an operation's bucket and name too
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            STEPS.setdefault(label, []).append((time.perf_counter() - began) * 1000)

    setattr(owner, name, wrapper)


def collections() -> list[float]:
    """The collector's pauses (ms), appended as they end: a whole render's garbage makes the next
    round's collections long."""
    pauses: list[float] = []
    began = [0.0]

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - began[0]) * 1000)

    gc.callbacks.append(callback)
    return pauses


def time_steps() -> None:
    from transcription.api.doors import views
    from transcription.api.front import editing
    from transcription.models import Job
    from transcription.writes import edit_services

    timed(editing, "_editable", "read the job and its version")
    timed(editing, "edited", "apply the edit and render")
    timed(edit_services, "_write_parts", "write the changed parts")
    timed(edit_services, "segments_edit", "the write's transaction (parts, job, history, commit)")
    timed(Job, "save", "write the job's txt/srt/webvtt")
    timed(editing, "edit_transcript", "the operation (all of the above)")
    timed(views, "_segments_answer", "the answer's JSON")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--output", type=Path, default=ROOT / "bench/edits/results-patch.json")
    args = parser.parse_args()
    client, job, document = setup(args.hours)
    time_steps()
    pauses = collections()
    from transcription.api.front import edit_renders

    url = f"/v1/api/transcription/{job.id}/segments"
    etag = client.get(url)["ETag"]
    rng = random.Random(2)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    steps: dict[str, dict[str, list[float]]] = {}
    warm = True
    for round_ in range(3 * args.rounds + 1):
        way = WAYS[round_ % 3]
        edit_renders.written()  # untimed: the previous round's copy to Redis is written
        if way == "whole":
            edit_renders.forget(job.id)
        elif way == "from Redis":
            edit_renders.forget()
        index = rng.randrange(len(document))
        edit = {"op": "text", "index": index, "text": f"{document[index]['text']} edit {round_}"}
        gc.collect()  # untimed: each round starts without the previous one's garbage (A's is large)
        pauses.clear()
        began = time.perf_counter()
        response = client.patch(
            url, data=json.dumps({"edits": [edit]}), content_type="application/json", HTTP_IF_MATCH=etag
        )
        took = (time.perf_counter() - began) * 1000
        assert response.status_code == 200, response.content[:500]
        etag = response["ETag"]
        document = json.loads(response.content)["segments"]
        if warm:  # the first round renders whole, and keeps the render B starts from
            warm = False
            continue
        times[way].append(took)
        STEPS.setdefault("garbage collection", []).append(sum(pauses))
        for label, values in STEPS.items():
            steps.setdefault(way, {}).setdefault(label, []).append(values[-1])
        if os.environ.get("BENCH_VERBOSE"):
            print(way, round(took, 1), flush=True)
    results = {
        "hours": args.hours,
        "segments": len(document),
        "words": sum(len(s["words"]) for s in document),
        "rounds_each": args.rounds,
        "goal_p95_ms": 100,
        "patch_ms": {way: p50_p95(v) for way, v in times.items()},
        "steps_ms": {way: {label: p50_p95(v) for label, v in by_label.items()} for way, by_label in steps.items()},
        "cpu_count": os.cpu_count(),
    }
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
