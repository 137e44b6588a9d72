"""Redis stops under a running web process (bin/web, the production server): queueing answers 503
with `detail` and `Retry-After` and stores nothing, polls answer from PostgreSQL, /health says
so; once Redis is back (empty: its queued messages lost), the job accepted before the outage runs."""

import os
import subprocess
import sys

import pytest

from config import shared_cache
from harness.processes import ROOT, database_url, free_port, request, running_redis, running_web, running_worker
from tests.support import ends_within, wait_for

# The most a request spends on an unreachable Redis: one connect and one read timeout (the shared
# cache's, which the rate limits and the broker check use too), before it answers from PostgreSQL.
REDIS_TIMEOUTS = shared_cache.CONNECT_TIMEOUT_SECONDS + shared_cache.READ_TIMEOUT_SECONDS


def sweep(redis_url: str) -> None:
    """One run of the sweeper (what beat runs every minute), with no wait for stalled jobs."""
    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": redis_url, "STALLED_AFTER_SECONDS": "0"}
    code = "import django; django.setup(); from transcription.upkeep.sweeper import sweep_stalled_jobs as s; print(s())"
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.django_db(transaction=True)
def test_queueing_says_503_while_redis_is_down_and_earlier_jobs_run_after(token, media_server, tmp_path):
    from transcription.models import Job

    port = free_port()
    redis_url = f"redis://127.0.0.1:{port}/0"
    video = media_server.url("/files/speech.mp4")
    with running_web(tmp_path / "web.log", REDIS_URL=redis_url, ALLOW_PRIVATE_URLS="true") as web:
        with running_redis(port):
            status, _, accepted = request("POST", web + "/v1/api/transcribe", token, {"url": video})
            assert status == 200, accepted

        # Redis is stopped (nothing listens on its port).
        with ends_within(REDIS_TIMEOUTS, "a job request while Redis is down"):
            status, headers, answer = request("POST", web + "/v1/api/transcribe", token, {"url": video})
        assert status == 503, answer
        assert "queue is unreachable" in answer["detail"]
        assert int(headers["Retry-After"]) > 0
        assert Job.objects.count() == 1, "a refused request stores no job that would never run"

        with ends_within(REDIS_TIMEOUTS, "a poll while Redis is down"):
            status, _, polled = request("GET", web + f"/v1/api/transcription/{accepted['id']}", token)
        assert (status, polled["state"]) == (200, "waiting")

        status, _, health = request("GET", web + "/health")
        assert (status, health["redis"], health["database"]) == (503, "unreachable", "ok")

        with running_redis(port):  # back, empty: the message of the accepted job is lost
            assert request("GET", web + "/health")[0] == 200
            with running_worker(
                tmp_path / "worker.log", queues="media", REDIS_URL=redis_url, ALLOW_PRIVATE_URLS="true"
            ):
                sweep(redis_url)
                job = wait_for(accepted["id"], lambda job: job.state == "uploading", "media stage run", timeout=60)
            assert job.error is None and job.duration > 0
            status, _, again = request("POST", web + "/v1/api/transcribe", token, {"url": video})
            assert status == 200, again


# Nothing listens on port 1 of this machine: a broker that is really down.
STOPPED_BROKER = "redis://127.0.0.1:1/0"


@pytest.mark.django_db
def test_every_front_door_says_so_and_stores_nothing_without_the_broker(api, account, client):
    from django.test import override_settings

    from transcription.models import Job

    with override_settings(CELERY_BROKER_URL=STOPPED_BROKER):
        for path, body in (
            ("/v1/api/transcribe", {"url": "https://example.com/a.mp4"}),
            ("/v1/api/subtitles", {"url": "https://example.com/a.mp4", "target_languages": ["Spanish"]}),
            ("/v1/api/burn-subtitles", {"url": "https://example.com/a.mp4"}),
        ):
            response = api.post(path, body, content_type="application/json")
            assert response.status_code == 503, (path, response.content)
            assert set(response.json()) == {"detail"} and response["Retry-After"] == "30"

        account.user.set_password("correct-horse-battery-42")
        account.user.save()
        client.force_login(account.user)
        page = client.post(
            "/jobs/new/",
            {
                "url": "https://example.com/a.mp4",
                "type": "transcript",
                "format": "srt",
                "quality": "default",
                "font_size": "default",
            },
        )
        assert page.status_code == 503 and "queue is unreachable" in page.content.decode()
    assert Job.objects.count() == 0
