"""Celery tasks: thin wrappers that run a stage and hand the job to the task of its next stage
(dispatch.py decides which). Queues are set by name in settings.CELERY_TASK_ROUTES.

The job tasks keep their outcome (django-celery-results) for the job's admin page. Tasks are
acknowledged late (settings), so a worker killed mid-task leaves its message to be
delivered again; the sweeper catches what the broker does not redeliver. Only worker and beat
processes import this module (web processes send tasks by name), so the speech stack imported
through the stages never loads in a web process.
"""

from celery import shared_task

from . import dispatch, retention, sweeper
from .stages import burn, media, speech


@shared_task(acks_late=True, ignore_result=False)
def start_job(job_id: str) -> None:
    if media.run(job_id):
        dispatch.job_send(job_id)


@shared_task(acks_late=True, ignore_result=False)
def transcribe_job(job_id: str) -> None:
    if speech.run(job_id):
        dispatch.job_send(job_id)


@shared_task(acks_late=True, ignore_result=False)
def burn_job(job_id: str) -> None:
    burn.run(job_id)  # the last stage


@shared_task
def sweep_stalled_jobs() -> dict:
    return sweeper.sweep_stalled_jobs()


@shared_task
def delete_expired_artifacts() -> dict:
    return retention.delete_expired_artifacts()
