"""A worker killed in the middle of a job (kill -9) does not leave it stuck.

In a module of its own: the worker of the other end-to-end modules must be gone, or it could take
the job instead of the worker this test kills.
"""
import json
import time

import pytest
from django.test import override_settings

from tests.worker import kill_worker, running_worker, wait_for_job

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def submit(api, path, body):
    response = api.post(path, data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["id"]


def test_a_killed_worker_does_not_leave_its_job_stuck(django_db_setup, django_db_blocker, api, videos, tmp_path_factory):
    from transcription import runner

    log = tmp_path_factory.mktemp("killed") / "worker.log"
    with running_worker(log, ALLOW_PRIVATE_URLS="true") as process:
        job_id = submit(api, "/v1/api/transcribe", {"url": videos["librivox"]})
        wait_for_job(job_id, timeout=180, states=("processing", "merging", "aligning", "done", "failed"))
        kill_worker(process)
    from transcription.models import Job

    stuck = Job.objects.get(pk=job_id)
    assert stuck.state not in ("done", "failed"), "the worker was killed mid-job"
    time.sleep(3)
    assert Job.objects.get(pk=job_id).updated_at == stuck.updated_at, "nothing works on the job any more"
    with running_worker(tmp_path_factory.mktemp("restarted") / "worker.log", ALLOW_PRIVATE_URLS="true"):
        with override_settings(STALLED_AFTER_SECONDS=2):
            swept = runner.sweep_stalled_jobs()
        assert [str(i) for i in swept["requeued"]] == [job_id]
        body = api.get(f"/v1/api/transcription/{wait_for_job(job_id, timeout=420).id}").json()
    assert body["state"] == "done", body["error"]
    assert body["txt"].count("Speaker 1:") >= 1
    assert Job.objects.get(pk=job_id).attempts == 1


def test_a_worker_killed_while_burning_leaves_the_rest_to_the_next(django_db_setup, django_db_blocker, api, videos,
                                                                   tmp_path_factory):
    from transcription import runner
    from transcription.models import Job

    with running_worker(tmp_path_factory.mktemp("killed") / "worker.log", ALLOW_PRIVATE_URLS="true") as process:
        job_id = submit(api, "/v1/api/burn-subtitles", {"url": videos["librivox"], "target_languages": ["ca"]})
        wait_for_job(job_id, timeout=300, states=("burning", "done", "failed"))
        kill_worker(process)
    stuck = Job.objects.get(pk=job_id)
    assert stuck.state == "burning", stuck.error
    with running_worker(tmp_path_factory.mktemp("restarted") / "worker.log", ALLOW_PRIVATE_URLS="true"):
        with override_settings(STALLED_AFTER_SECONDS=1):
            time.sleep(1.5)
            swept = runner.sweep_stalled_jobs()
        assert [str(i) for i in swept["requeued"]] == [job_id]
        body = api.get(f"/v1/api/transcription/{wait_for_job(job_id, timeout=420).id}").json()
    assert body["state"] == "done", body["error"]
    assert body["burned_video_url"] and body["translations"][0]["burned_video_url"]
    assert body["translations"][0]["state"] == "done"
    assert Job.objects.get(pk=job_id).attempts == 1
    from django.core.files.storage import default_storage

    assert not default_storage.exists(f"sources/{job_id}.video"), "the source copy goes when the job ends"
