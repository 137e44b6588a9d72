"""Every account is served in turn (docs/decisions/workers-and-operations.md): with one worker and
another account's playlist queued first, a single job of a second account starts as soon as the
job running now is done with the worker, not behind the whole playlist.

In a module of its own: the one worker here must be the only one taking these queues' jobs.
"""

import pytest
from django.test import Client

from harness.processes import running_worker
from tests.support import submit, wait_for_job, wait_until

PLAYLIST = 5

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def started_at(job) -> str:
    """When the job left `waiting` (ISO time of its first stage)."""
    return next(when for state, when in job.timeline if state == "preparing")


def test_a_single_job_is_not_queued_behind_another_accounts_playlist(
    api, other_account, broker, media_server, tmp_path_factory
):
    from accounts.services import token_issue
    from transcription.models import Job

    speech = media_server.url("/files/speech.wav")
    playlist = [submit(api, "/v1/api/transcribe", {"url": speech}) for _ in range(PLAYLIST)]
    other = Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(other_account)}")
    log = tmp_path_factory.mktemp("fair") / "worker.log"
    with running_worker(log, purge=False, ALLOW_PRIVATE_URLS="true"):  # the playlist's tasks are queued
        first = wait_until_one_started(playlist)
        single = submit(other, "/v1/api/transcribe", {"url": speech})
        assert Job.objects.get(pk=single).state == "waiting"
        ended = {job_id: wait_for_job(job_id, timeout=300) for job_id in [single, *playlist]}
    assert {job.state for job in ended.values()} == {"done"}, [job.error for job in ended.values()]
    order = sorted(ended, key=lambda job_id: started_at(ended[job_id]))
    assert order[:2] == [first, single], "the single job is taken right after the job that was running"
    playlist_order = [job_id for job_id in order if job_id != single]
    assert sorted(playlist_order, key=playlist.index) == playlist_order, "one account's jobs in the order queued"
    finished_before = [job_id for job_id in playlist if ended[job_id].updated_at < ended[single].updated_at]
    assert len(finished_before) <= 2, "the single job does not wait for the playlist's speech stages"
    print_throughput(list(ended.values()))


def print_throughput(jobs) -> None:
    """What docs/operating.md quotes: one worker of concurrency 1 through these short jobs."""
    from datetime import datetime

    def at(job, state):
        return next(datetime.fromisoformat(when) for name, when in job.timeline if name == state)

    media = [(at(job, "uploading") - at(job, "preparing")).total_seconds() for job in jobs]
    speech = [(at(job, "done") - at(job, "processing")).total_seconds() for job in jobs]
    wall = (max(at(job, "done") for job in jobs) - min(at(job, "preparing") for job in jobs)).total_seconds()
    print(
        f"\n{len(jobs)} short jobs, one worker (concurrency 1): {wall:.1f} s in all, {3600 * len(jobs) / wall:.0f} jobs/h;"
        f" media stage median {sorted(media)[len(media) // 2]:.1f} s, speech stage median {sorted(speech)[len(speech) // 2]:.1f} s"
    )


def wait_until_one_started(playlist: list[str]) -> str:
    from transcription.models import Job

    def started():
        return Job.objects.filter(pk__in=playlist).exclude(state="waiting").values_list("id", flat=True).first()

    return str(wait_until(started, "a playlist job to start", timeout=120))
