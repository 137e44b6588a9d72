"""Jobs that cannot succeed end `failed` with a readable error, through the real API, a real
Celery worker, real yt-dlp and ffmpeg against a server on 127.0.0.1, and get their minutes back."""

import pytest

from billing.selectors import account_balance
from harness.processes import running_worker
from tests.support import submit, wait_for_job
from transcription.pipeline.fetch import errors as fetch_errors
from transcription.pipeline.media import audio

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def read(api, job_id):
    return api.get(f"/v1/api/transcription/{job_id}").json()


class TestWithPrivateAddressesRefused:
    @pytest.fixture(scope="class")
    @classmethod
    def worker(cls, django_db_setup, django_db_blocker, tmp_path_factory):
        with running_worker(tmp_path_factory.mktemp("worker") / "worker.log", ALLOW_PRIVATE_URLS="false"):
            yield

    def test_a_loopback_address_is_refused_without_a_request(self, worker, api, media_server):
        before = media_server.count("/files/")
        job_id = submit(api, "/v1/api/transcribe", {"url": media_server.url("/files/speech.mp4")})
        wait_for_job(job_id, timeout=60)
        body = read(api, job_id)
        assert body["state"] == "failed" and body["error"] == fetch_errors.MSG_PRIVATE
        assert media_server.count("/files/") == before

    @pytest.mark.parametrize("url", ["ftp://example.com/video.mp4", "file:///etc/passwd", "mailto:talks@example.com"])
    def test_only_http_and_https_are_accepted(self, worker, api, url):
        job_id = submit(api, "/v1/api/transcribe", {"url": url})
        wait_for_job(job_id, timeout=60)
        body = read(api, job_id)
        assert body["state"] == "failed" and body["error"] in (fetch_errors.MSG_SCHEME, fetch_errors.MSG_INVALID)


class TestFromALocalServer:
    @pytest.fixture(scope="class")
    @classmethod
    def worker(cls, django_db_setup, django_db_blocker, tmp_path_factory):
        with running_worker(
            tmp_path_factory.mktemp("worker") / "worker.log",
            ALLOW_PRIVATE_URLS="true",
            FETCH_TIMEOUT_SECONDS="5",
            DOWNLOAD_TIMEOUT_SECONDS="20",
            DOWNLOAD_STALL_SECONDS="5",
        ):
            yield

    @pytest.mark.parametrize(
        "path,error",
        [
            ("/status/404", fetch_errors.MSG_NOT_FOUND),
            ("/status/403", fetch_errors.MSG_FORBIDDEN),
            ("/status/410", fetch_errors.MSG_GONE),
            ("/page/nomedia.html", fetch_errors.MSG_NO_MEDIA),
            ("/live/index.m3u8", fetch_errors.MSG_LIVE),
            ("/files/video_only.mp4", audio.MSG_NO_AUDIO),
        ],
    )
    def test_it_fails_with_the_reason_and_refunds(self, worker, api, account, media_server, path, error):
        balance = account_balance(account.pk)
        job_id = submit(api, "/v1/api/transcribe", {"url": media_server.url(path)})
        job = wait_for_job(job_id, timeout=90)
        body = read(api, job_id)
        assert body["state"] == "failed", body
        assert body["error"] == error
        assert body["txt"] is None and body["srt"] is None
        assert account_balance(account.pk) == balance, "a failed job costs nothing"
        assert job.progress < 100

    def test_a_video_over_twelve_hours_is_refused_before_download(self, worker, api, media_server):
        job_id = submit(api, "/v1/api/transcribe", {"url": media_server.url("/long/index.m3u8")})
        wait_for_job(job_id, timeout=90)
        body = read(api, job_id)
        assert body["state"] == "failed" and "12 hours" in body["error"]

    def test_a_stalled_server_cannot_hang_the_worker(self, worker, api, media_server):
        job_id = submit(api, "/v1/api/transcribe", {"url": media_server.url("/stall")})
        wait_for_job(job_id, timeout=120)
        body = read(api, job_id)
        assert body["state"] == "failed" and body["error"]
