"""The production layout on one machine, broken while it works.

Two web processes (bin/web), one worker per queue (bin/worker: media, asr, burn, hooks), beat, the
test database and a Redis server of the test's own on a spare port (never the machine's 6379: it is
restarted here, losing what it held). Three accounts queue 11 jobs: transcripts, subtitles with a
translation, burned videos with a translation (two of each), a playlist of two and one address
that does not exist; meanwhile:

- the burn worker is stopped (SIGTERM) and started again later, so burned jobs wait in a backlog;
- the asr worker is killed (kill -9) in the middle of a recognition, and a new one started;
- Redis is restarted, its queued messages and counters lost;
- the media, asr and hooks workers get SIGTERM once each (the burn worker had its own) and are
  started again.

Then every job has ended: done, or failed for its own reason with its error; none lost; none
processed twice (one charge, one `done`, one burned video per language); the ledger equals what the
finished jobs cost; no scratch file is left. The figures are printed (run with -s to see them).

Heartbeat 1 s (a claim lapses after 4 s), sweeper every 5 s, lost messages re-sent after 20 s.

No step has a deadline of its own: how long the asr queue takes to reach a re-queued job depends on
the machine (on one 1.7x slower than ours, more than the two minutes a step once had). The test waits
for each condition and fails when the fleet stands still: no job changes state, progress or claim
for longer than the sweeper lets a job wait (STALLED_SECONDS: a lost message is sent again after
STALLED_AFTER_SECONDS, looked for every SWEEP_SECONDS; a dead worker's claim lapses after
CLAIM_SECONDS), twice over. While any stage runs its heartbeat moves a claim every second. A
row's `updated_at` is not movement: the sweeper touches it each time it sends a waiting job's task
again (every STALLED_SECONDS for the burned jobs that wait for the stopped burn worker), which had
kept the guard from ever firing while a step waited on a condition that could no longer come true.

A fault's jobs have moved on when each has ended, changed state or been claimed afresh since the
fault: their states are taken just before the fault, never after it (a job that went on to
`burning` while its worker stopped would otherwise be waited for until the burn worker returned).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from harness import processes
from harness.processes import ROOT, database_url
from tests.support import wait_until

pytestmark = [pytest.mark.fleet, pytest.mark.django_db(transaction=True)]

CLAIM_SECONDS = 4  # WORKER_HEARTBEAT_SECONDS=1 x JobClaim.BEATS_PER_CLAIM
SWEEP_SECONDS = 5  # SWEEP_INTERVAL_SECONDS
STALLED_SECONDS = 20  # STALLED_AFTER_SECONDS
# The longest the fleet may stand still, twice the sweeper's own bound (see the module's docstring).
STANDSTILL_BOUND = 2 * (STALLED_SECONDS + SWEEP_SECONDS + CLAIM_SECONDS)
STOP_BOUND = 2 + 20  # WORKER_SHUTDOWN_GRACE_SECONDS here + WORKER_SHUTDOWN_UNWIND_SECONDS
FINAL = ("done", "failed")


class Fleet:
    """The processes of the layout, each started by its production command, logs in `folder`."""

    def __init__(self, folder: Path, redis_port: int):
        self.folder = folder
        self.redis_port = redis_port
        self.processes: dict[str, subprocess.Popen] = {}
        self.starts: dict[str, int] = {}
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "DATA_DIR": str(folder / "data"),
            "MEDIA_ROOT": str(folder / "data" / "media"),
            "WORK_DIR": str(folder / "data" / "work"),
            "ALLOW_PRIVATE_URLS": "true",
            "DEBUG": "false",
            "CONN_MAX_AGE": "0",
            "PYTHONUNBUFFERED": "1",
            "WORKER_HEARTBEAT_SECONDS": "1",
            "SWEEP_INTERVAL_SECONDS": str(SWEEP_SECONDS),
            "STALLED_AFTER_SECONDS": str(STALLED_SECONDS),
            "WORKER_SHUTDOWN_GRACE_SECONDS": "2",
            "WEB_WORKERS": "1",
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)

    def start(self, name: str, command: list[str], ready: str | None = None, **env: str) -> subprocess.Popen:
        self.starts[name] = self.starts.get(name, 0) + 1
        log_path = self.folder / f"{name}.{self.starts[name]}.log"
        self.processes[name] = processes.start(command, log_path, ready=ready, env={**self.env, **env})
        return self.processes[name]

    def redis(self) -> None:
        self.start(
            "redis",
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            ready="Ready to accept connections",
        )

    def worker(self, queue: str) -> None:
        self.start(queue, processes.worker_command(queue, hostname=f"{queue}@fleet"), ready="ready.")

    def web(self, name: str, port: int) -> None:
        self.start(name, [str(ROOT / "bin" / "web")], ready="Booting worker", PORT=str(port))

    def sigterm(self, name: str) -> float:
        """SIGTERM to the process; the seconds it took to end."""
        asked = time.monotonic()
        self.processes[name].send_signal(signal.SIGTERM)
        self.processes[name].wait(timeout=STOP_BOUND + 30)
        return time.monotonic() - asked

    def kill(self, name: str) -> None:
        processes.kill(self.processes[name])

    def stop_all(self) -> None:
        for name in list(self.processes):
            if self.processes[name].poll() is None:
                self.kill(name)


def health(port: int) -> tuple[int, str]:
    answer = requests.get(f"http://127.0.0.1:{port}/health", timeout=5)
    return answer.status_code, answer.json().get("status")


def burning_jobs_metric(port: int) -> float:
    """transcription_jobs{state="burning"} from /metrics (loopback may read it by default)."""
    answer = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert answer.status_code == 200, answer.text
    return sum(
        sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
        if sample.name == "transcription_jobs" and sample.labels.get("state") == "burning"
    )


def jobs_of(ids):
    from transcription.models import Job

    return {str(job.id): job for job in Job.objects.filter(pk__in=ids)}


def states_of(ids) -> dict[str, str]:
    """Each job's state now: taken just before a fault, what the fault's jobs must move on from."""
    return {key: job.state for key, job in jobs_of(ids).items()}


class Watch:
    """Waits on conditions over the jobs in `ids`, for as long as the fleet keeps moving."""

    def __init__(self, ids):
        self.ids = ids

    def snapshot(self):
        from transcription.models import Job

        return set(Job.objects.filter(pk__in=self.ids).values_list("id", "state", "progress", "lease_until"))

    def until(self, condition, what: str):
        """condition()'s first true answer; fails when no job moved for STANDSTILL_BOUND seconds."""
        seen, moved_at = self.snapshot(), time.monotonic()
        while not (found := condition()):
            time.sleep(0.25)
            now = self.snapshot()
            if now != seen:
                seen, moved_at = now, time.monotonic()
            still = time.monotonic() - moved_at
            assert still < STANDSTILL_BOUND, f"waiting for {what}, no job moved for {still:.0f} s: {sorted(now)}"
        return found

    def recovered(self, before: dict[str, str], fault_at: float, fault_wall) -> float:
        """Seconds from the fault until every job it hit (`before`: their states just before it) has
        moved on: ended, changed state, or been claimed by a worker after the fault (a claim newer
        than the ones taken before it)."""
        from datetime import timedelta

        hit = list(before)
        fresh_claim = fault_wall + timedelta(seconds=CLAIM_SECONDS + 0.5)
        self.until(
            lambda: all(
                job.state in FINAL or job.state != before[key] or (job.lease_until and job.lease_until > fresh_claim)
                for key, job in jobs_of(hit).items()
            ),
            f"the jobs hit by the fault to move on: {hit}",
        )
        return time.monotonic() - fault_at


def test_the_fleet_survives_its_faults(django_db_setup, media_server, tmp_path_factory):
    from django.utils import timezone

    from accounts.services import account_create, token_issue
    from billing import pricing
    from billing.models import LedgerEntry
    from billing.services import billed_seconds, grant_staff_minutes
    from tests.support import feed
    from transcription.models import Job
    from transcription.storage import files

    began = time.monotonic()
    folder = tmp_path_factory.mktemp("fleet")
    fleet = Fleet(folder, processes.free_port())
    clip = media_server.url("/files/speech.mp4")
    playlist = [(f"Talk {i}", media_server.url(f"/files/speech.mp4?talk={i}"), 5) for i in range(2)]
    media_server.routes["/feeds/fleet.xml"] = lambda req: req.send_bytes(
        feed(playlist, "Two talks"), "application/rss+xml"
    )

    accounts = [account_create(f"fleet{i}@example.com") for i in range(3)]
    tokens = [token_issue(account) for account in accounts]
    for account in accounts:
        grant_staff_minutes(account, 600, reason="fleet test")
    faults: dict[str, float] = {}
    try:
        fleet.redis()
        webs = [processes.free_port(), processes.free_port()]
        fleet.web("web1", webs[0])
        fleet.web("web2", webs[1])
        for queue in ("media", "asr", "burn", "hooks"):
            fleet.worker(queue)
        fleet.start("beat", [str(ROOT / ".venv/bin/celery"), "-A", "config", "beat", "--loglevel", "INFO",
                             "--schedule", str(folder / "celerybeat-schedule")])  # fmt: skip

        # The burn worker stops first (its SIGTERM): burned jobs queue up behind it.
        burn_stop = fleet.sigterm("burn")

        submitted: list[str] = []

        def post(n: int, path: str, body: dict) -> dict:
            answer = requests.post(
                f"http://127.0.0.1:{webs[n % 2]}/v1/api/{path}",
                json=body,
                headers={"Authorization": f"Bearer {tokens[n % 3]}"},
                timeout=30,
            )
            assert answer.status_code == 200, answer.text
            return answer.json()

        n = 0
        for path, extra in (
            ("transcribe", {}),
            ("subtitles", {"target_languages": ["ca"]}),
            ("transcribe", {}),
            ("burn-subtitles", {"target_languages": ["ca"]}),
        ):
            for _turn in range(2):  # two of each kind, over the three accounts in turn
                submitted.append(post(n, path, {"url": clip, **extra})["id"])
                n += 1
        batch = post(0, "transcribe-playlist", {"url": media_server.url("/feeds/fleet.xml")})
        submitted += batch["ids"]
        missing = post(1, "transcribe", {"url": media_server.url("/files/no-such-video.mp4")})["id"]
        submitted.append(missing)
        assert batch["count"] == 2
        watch = Watch(submitted)

        # kill -9 the asr worker in the middle of a recognition; a new one starts.
        held = watch.until(
            lambda: Job.objects.filter(pk__in=submitted, state="processing", lease_until__isnull=False).first(),
            "a recognition",
        )
        held_before = {str(held.id): held.state}
        fleet.kill("asr")
        killed_at, killed_wall = time.monotonic(), timezone.now()
        fleet.worker("asr")
        # The sweeper's own bound: the claim lapses, the next sweep re-queues the job.
        wait_until(
            lambda: Job.objects.get(pk=held.id).attempts > held.attempts, "the sweeper", STALLED_SECONDS, interval=0.25
        )
        faults["kill -9 asr worker: its job back in the queue"] = time.monotonic() - killed_at
        faults["kill -9 asr worker: its job running again (behind the asr queue)"] = watch.recovered(
            held_before, killed_at, killed_wall
        )

        # Redis restarts: the queued messages and the counters are gone.
        # (burned jobs waiting for the stopped burn worker are counted when it is back)
        in_flight = states_of(
            Job.objects.filter(pk__in=submitted).exclude(state__in=(*FINAL, "burning")).values_list("id", flat=True)
        )
        fleet.kill("redis")
        restarted_at, restarted_wall = time.monotonic(), timezone.now()
        fleet.redis()
        faults["Redis restart"] = watch.recovered(in_flight, restarted_at, restarted_wall)
        # What a load balancer asks: both web processes are healthy again once Redis is back.
        for port in webs:
            wait_until(lambda port=port: health(port) == (200, "ok"), f"/health on web port {port}", 30, interval=0.25)

        # SIGTERM once to each other worker; each is started again at once.
        stop_times = {"burn": burn_stop}
        for queue in ("media", "asr", "hooks"):
            held_by_workers = states_of(
                Job.objects.filter(pk__in=submitted, lease_until__isnull=False)
                .exclude(state__in=(*FINAL, "burning"))
                .values_list("id", flat=True)
            )
            asked_at, asked_wall = time.monotonic(), timezone.now()
            stop_times[queue] = fleet.sigterm(queue)
            fleet.worker(queue)
            faults[f"SIGTERM {queue} worker"] = watch.recovered(held_by_workers, asked_at, asked_wall)

        # The burn worker comes back once every burned job waits for it: the backlog drains.
        burned = [key for key, job in jobs_of(submitted).items() if job.type == "burned"]
        watch.until(lambda: all(job.state in (*FINAL, "burning") for job in jobs_of(burned).values()), "the backlog")
        burn_backlog = Job.objects.filter(pk__in=submitted, state="burning").count()
        # What Prometheus sees meanwhile: the backlog, as jobs waiting to be burned.
        assert burning_jobs_metric(webs[0]) >= burn_backlog > 0
        back_at = time.monotonic()
        fleet.worker("burn")
        watch.until(lambda: all(job.state in FINAL for job in jobs_of(burned).values()), "the burn backlog")
        faults[f"burn worker stopped ({burn_backlog} waiting), backlog drained after restart"] = (
            time.monotonic() - back_at
        )

        watch.until(lambda: all(job.state in FINAL for job in jobs_of(submitted).values()), "every job")
    finally:
        fleet.stop_all()
        print("\n" + "".join(f"--- {log.name}\n{log.read_text()[-1500:]}\n" for log in sorted(folder.glob("*.log"))))

    # --- what a user and an operator would check
    jobs = jobs_of(submitted)
    lost = [key for key in submitted if key not in jobs or jobs[key].state not in FINAL]
    failed = {key: job.error for key, job in jobs.items() if job.state == "failed"}
    assert failed.keys() == {missing}, f"only the missing video fails: {failed}"
    assert "404" in failed[missing] or "not" in failed[missing].lower(), failed[missing]

    duplicated = []
    expected_cost = actual_cost = 0
    for key, job in jobs.items():
        charges = LedgerEntry.objects.filter(job_id=key, kind="charge").count()
        dones = [state for state, _at in job.timeline].count("done")
        burned_files = list((folder / "data" / "media" / "burned" / key).glob("*")) if job.type == "burned" else []
        if charges > 1 or dones > 1 or len(burned_files) > (2 if job.type == "burned" else 0):
            duplicated.append(key)
        if job.state == "done":
            expected_cost += pricing.job_cost(job.type, billed_seconds(job), job.quality, len(job.target_languages))
            assert job.txt and job.srt, key
        actual_cost -= sum(LedgerEntry.objects.filter(job_id=key).values_list("seconds", flat=True))
    ledger_difference = actual_cost - expected_cost
    scratch = [str(p) for p in (folder / "data" / "work").rglob("*")]
    scratch += [str(p) for name in ("audio", "sources") for p in (folder / "data" / "media" / name).rglob("*")]
    # a done burned job's source video is kept with its burned videos, to burn again from (issue 46)
    kept_sources = {
        str(folder / "data" / "media" / files.source_name(key))
        for key, job in jobs.items()
        if job.type == "burned" and job.state == "done"
    }
    scratch = [path for path in scratch if path not in kept_sources]

    print(f"\nFLEET: {len(submitted)} jobs ({len(jobs) - len(failed)} done, {len(failed)} failed for their own reason)")
    print(f"FLEET: faults {len(faults)}, lost {len(lost)}, duplicated {len(duplicated)}, ledger difference "
          f"{ledger_difference} s, scratch files left {len(scratch)}, total {time.monotonic() - began:.0f} s")  # fmt: skip
    for fault, seconds in faults.items():
        print(f"FLEET: {fault}: recovered in {seconds:.1f} s")
    print("FLEET: SIGTERM to stop: " + ", ".join(f"{queue} {seconds:.1f} s" for queue, seconds in stop_times.items()))

    assert lost == [] and duplicated == [] and ledger_difference == 0 and scratch == []
    assert max(stop_times.values()) < STOP_BOUND, stop_times
