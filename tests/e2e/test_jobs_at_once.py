"""Several jobs on one loaded model (issue 44, item 3): an asr worker of ASR_JOBS_AT_ONCE = 2 under
Celery's thread pool recognises two jobs at the same time, with one model whose two replicas share
its weights (CTranslate2's inter_threads; on a GPU, a CUDA stream each). The GPU figures are
bench/asr/gpu.py's; this test runs the same code on the CPU.

In a module of its own: the one worker here must be the only one taking these queues' jobs.
"""

from datetime import datetime

import pytest

from harness.processes import running_worker
from tests.support import submit, wait_for_job, wer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _speech_stage(job) -> tuple[datetime, datetime]:
    """When the job entered `processing` and when it left `aligning` for `done`."""
    at = {state: datetime.fromisoformat(when) for state, when in job.timeline}
    return at["processing"], at["done"]


def test_one_worker_recognises_two_jobs_at_once_on_one_model(worker_log_folder, api, videos):
    jobs = [submit(api, "/v1/api/transcribe", {"url": videos["librivox"]}) for _ in range(2)]
    with running_worker(
        worker_log_folder / "worker.log",
        concurrency=2,
        pool="threads",
        purge=False,  # the jobs' turns are queued already
        ALLOW_PRIVATE_URLS="true",
        ASR_JOBS_AT_ONCE="2",
    ):
        ended = [wait_for_job(job_id, timeout=240) for job_id in jobs]
    assert [job.state for job in ended] == ["done", "done"], [job.error for job in ended]
    (first_start, first_end), (second_start, second_end) = (_speech_stage(job) for job in ended)
    assert first_start < second_end and second_start < first_end, "the two speech stages ran at the same time"
    for job in ended:
        text = " ".join(line.split(": ", 1)[1] for line in job.txt.split("\n\n"))
        assert wer(videos["reference"], text) <= 0.15, text
    log = (worker_log_folder / "worker.log").read_text()
    assert "concurrency: 2 (thread)" in log, "the worker ran Celery's thread pool"


@pytest.fixture
def worker_log_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("jobs-at-once")
