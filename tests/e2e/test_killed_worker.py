"""A worker killed in the middle of a job (kill -9) does not leave it stuck, and a worker that is
alive keeps its job however long its stage runs.

The workers here beat every second (WORKER_HEARTBEAT_SECONDS=1), so a dead one's claim lapses
after 4 s instead of 2 minutes.

In a module of its own: the worker of the other end-to-end modules must be gone, or it could take
the job instead of the worker this test kills.
"""

import pytest
from django.test import override_settings

from harness.processes import kill, running_worker
from tests.support import submit, wait_for, wait_for_job, wait_for_lapsed_claim

FAST_HEARTBEAT = {"ALLOW_PRIVATE_URLS": "true", "WORKER_HEARTBEAT_SECONDS": "1"}

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_killed_worker_does_not_leave_its_job_stuck(
    django_db_setup, django_db_blocker, api, videos, tmp_path_factory
):
    from transcription.upkeep import sweeper

    log = tmp_path_factory.mktemp("killed") / "worker.log"
    with running_worker(log, **FAST_HEARTBEAT) as process:
        job_id = submit(api, "/v1/api/transcribe", {"url": videos["librivox"]})
        wait_for_job(job_id, timeout=180, states=("processing", "merging", "aligning", "done", "failed"))
        kill(process)
    from transcription.models import Job

    stuck = Job.objects.get(pk=job_id)
    assert stuck.state not in ("done", "failed"), "the worker was killed mid-job"
    assert stuck.lease_until is not None, "the worker had claimed the job"
    # The claim lapses only after four beats without renewal, so by then a live heartbeat or a
    # stage still running would have shown: the job is exactly as the killed worker left it.
    lapsed = wait_for_lapsed_claim(job_id)
    assert (lapsed.updated_at, lapsed.lease_until) == (stuck.updated_at, stuck.lease_until), (
        "nothing works on the job any more: no progress, no heartbeat"
    )
    with running_worker(tmp_path_factory.mktemp("restarted") / "worker.log", **FAST_HEARTBEAT):
        swept = sweeper.sweep_stalled_jobs()
        assert [str(i) for i in swept["requeued"]] == [job_id], "a lapsed claim is re-queued at once"
        body = api.get(f"/v1/api/transcription/{wait_for_job(job_id, timeout=420).id}").json()
    assert body["state"] == "done", body["error"]
    assert body["txt"].count("Speaker 1:") >= 1
    job = Job.objects.get(pk=job_id)
    assert job.attempts == 1 and job.lease_until is None


def test_a_worker_killed_while_burning_leaves_the_rest_to_the_next(
    django_db_setup, django_db_blocker, api, videos, tmp_path_factory
):
    from transcription.models import Job
    from transcription.upkeep import sweeper

    with running_worker(tmp_path_factory.mktemp("killed") / "worker.log", **FAST_HEARTBEAT) as process:
        job_id = submit(api, "/v1/api/burn-subtitles", {"url": videos["librivox"], "target_languages": ["ca"]})
        burning = wait_for(
            job_id,
            lambda job: job.state in ("done", "failed") or job.state == "burning" and job.lease_until,
            "claimed burn",
            timeout=300,
        )
        assert burning.state == "burning", burning.error
        with override_settings(STALLED_AFTER_SECONDS=0):
            swept = sweeper.sweep_stalled_jobs()
        jobs_swept = {str(i) for key in ("requeued", "resent", "failed", "retranslations") for i in swept[key]}
        assert job_id not in jobs_swept, "a job whose worker is alive is never swept, however long its bar stands still"
        kill(process)
    stuck = Job.objects.get(pk=job_id)
    assert stuck.state == "burning", stuck.error
    wait_for_lapsed_claim(job_id)
    with running_worker(tmp_path_factory.mktemp("restarted") / "worker.log", **FAST_HEARTBEAT):
        swept = sweeper.sweep_stalled_jobs()
        assert [str(i) for i in swept["requeued"]] == [job_id]
        body = api.get(f"/v1/api/transcription/{wait_for_job(job_id, timeout=420).id}").json()
    assert body["state"] == "done", body["error"]
    assert body["burned_video_url"] and body["translations"][0]["burned_video_url"]
    assert body["translations"][0]["state"] == "done"
    assert Job.objects.get(pk=job_id).attempts == 1
    from django.core.files.storage import default_storage

    assert default_storage.exists(f"sources/{job_id}.video"), "a done burned job keeps its source, to burn again"
