"""SIGTERM ends a worker of any concurrency within a bound, and the job it held goes back at once:
its claim released and its stage queued again, so the next worker resumes it without waiting for
the claim to lapse (the heartbeat here is the default 30 s: a lapse would take two minutes).

In a module of its own: no other worker may take the job from the one this test stops.
"""

import signal
import time

import pytest

from harness.processes import running_worker
from tests.support import queued, submit, wait_for, wait_for_job

GRACE = 2  # WORKER_SHUTDOWN_GRACE_SECONDS: running stages may finish within it
UNWIND = 20  # WORKER_SHUTDOWN_UNWIND_SECONDS, the default

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_sigterm_stops_a_busy_worker_in_bounded_time_and_hands_its_job_back(
    django_db_setup, django_db_blocker, api, videos, broker, tmp_path_factory
):
    from transcription.models import Job

    settings_env = {"ALLOW_PRIVATE_URLS": "true", "WORKER_SHUTDOWN_GRACE_SECONDS": str(GRACE)}
    log = tmp_path_factory.mktemp("stopped") / "worker.log"
    with running_worker(log, concurrency=4, **settings_env) as process:
        job_id = submit(api, "/v1/api/transcribe", {"url": videos["librivox"]})
        recognising = wait_for(
            job_id, lambda job: job.state in ("done", "failed") or job.state == "processing", "recognition", 300
        )
        assert recognising.state == "processing", recognising.error
        assert recognising.lease_until is not None, "the worker holds the job"
        asked = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=GRACE + UNWIND + 10)
        stopped_after = time.monotonic() - asked
    assert stopped_after < GRACE + UNWIND, f"the worker took {stopped_after:.1f} s to stop"
    handed_back = Job.objects.get(pk=job_id)
    assert handed_back.state not in ("done", "failed"), "the stage was interrupted, not finished nor failed"
    assert handed_back.lease_until is None, "the claim is released at once, not left to lapse"
    assert handed_back.attempts == 0, "a stop is not a crash: it costs the job no attempt"
    assert queued(broker) == [("asr", "transcribe_job", job_id)], "its stage is queued again, once"
    assert f"job {job_id}: the worker is stopping; the job goes back to the queue" in log.read_text()

    # The next worker takes the queued stage at once (no sweeper, no lapse) and finishes the job.
    with running_worker(tmp_path_factory.mktemp("next") / "worker.log", purge=False, **settings_env):
        body = api.get(f"/v1/api/transcription/{wait_for_job(job_id, timeout=420).id}").json()
    assert body["state"] == "done", body["error"]
    assert body["txt"].count("Speaker 1:") >= 1
    print(f"\nSIGTERM to a worker of concurrency 4 mid-recognition: stopped in {stopped_after:.1f} s")
