"""Celery tasks: thin wrappers that name a queue and call the runner.

Tasks are acknowledged late (settings), so a worker killed mid-task leaves its message to be
delivered again; the sweeper catches what the broker does not redeliver. The runner (and with
it the speech model's libraries) is imported inside the tasks so that web processes, which only
queue tasks, never load it.
"""
from celery import shared_task


@shared_task(acks_late=True)
def start_job(job_id: str) -> None:
    from . import runner

    if runner.run_media_stages(job_id):
        transcribe_job.delay(job_id)


@shared_task(acks_late=True)
def transcribe_job(job_id: str) -> None:
    from . import runner

    if runner.run_speech_stages(job_id):
        burn_job.delay(job_id)


@shared_task(acks_late=True)
def burn_job(job_id: str) -> None:
    from . import runner

    runner.run_burn_stage(job_id)


@shared_task
def sweep_stalled_jobs() -> None:
    from . import runner

    runner.sweep_stalled_jobs()


@shared_task
def delete_expired_artifacts() -> None:
    from . import runner

    runner.delete_expired_artifacts()
