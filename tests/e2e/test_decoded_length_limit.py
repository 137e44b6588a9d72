"""Issue 41, the attack on the length limit: two hours of audio in a Matroska file whose header
claims one second, sent by link to a real worker whose MAX_VIDEO_SECONDS is 5. The job fails with
the limit in its error and costs nothing, and the decode stops just past the limit: the worker runs
under a file-size limit of 64 MB (prlimit), which the whole decode (230 MB of 16 kHz WAV) would
pass, killing ffmpeg with another error."""

import subprocess

import pytest

from billing.models import LedgerEntry
from billing.selectors import account_balance
from harness.media_files import make_hours_of_audio, make_long_speech_wav, media_duration
from harness.processes import purge_queues, service_env, start, stop, worker_command
from tests.support import submit, wait_for_job

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FILE_SIZE_LIMIT = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory):
    env = service_env(ALLOW_PRIVATE_URLS="true", MAX_VIDEO_SECONDS="5")
    purge_queues(env)
    command = ["prlimit", f"--fsize={FILE_SIZE_LIMIT}", "--", *worker_command()]
    process = start(command, tmp_path_factory.mktemp("worker") / "worker.log", ready="ready.", env=env)
    yield
    stop(process)


@pytest.fixture(scope="module")
def two_hours(media_server, tmp_path_factory):
    work = tmp_path_factory.mktemp("hours")
    path = make_hours_of_audio(media_server.folder / "two-hours.mka", make_long_speech_wav(work / "speech.wav"))
    assert media_duration(path) == 1.0, "the header claims one second"
    progress = subprocess.run(  # decoded to nothing, to know its true length
        ["ffmpeg", "-v", "error", "-i", str(path), "-f", "null", "-", "-progress", "pipe:1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    seconds = int(progress.rsplit("out_time_us=", 1)[1].split()[0]) / 1e6
    assert seconds > 7000 and seconds * 16000 * 2 > FILE_SIZE_LIMIT, "the whole decode would pass the file-size limit"
    return media_server.url("/files/two-hours.mka")


def test_a_file_longer_than_the_limit_is_stopped_at_the_limit_and_refunded(worker, api, account, two_hours):
    job_id = submit(api, "/v1/api/transcribe", {"url": two_hours})
    job = wait_for_job(job_id, timeout=120)
    assert job.state == "failed"
    assert job.error == "The audio runs longer than the limit of 5 seconds (the file's header said 1 s)."
    assert job.failure_reason == "source"
    assert account_balance(account.pk) == 600, "refunded"
    assert sorted(LedgerEntry.objects.filter(job=job).values_list("kind", "seconds")) == [("charge", -1), ("refund", 1)]
