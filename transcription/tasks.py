"""Celery tasks: thin wrappers that run a stage and hand the job to the task of its next stage
(dispatch.py decides which). Queues are set by name in settings.CELERY_TASK_ROUTES.

The job tasks keep their outcome (django-celery-results) for the job's admin page. Tasks are
acknowledged late (settings), so a worker killed mid-task leaves its message to be
delivered again; the sweeper catches what the broker does not redeliver. Only worker and beat
processes import this module (web processes send tasks by name), so the speech stack imported
through the stages never loads in a web process.

Stopping a worker (bin/worker): SIGTERM starts Celery's soft shutdown; stages still running after
WORKER_SHUTDOWN_GRACE_SECONDS are interrupted and hand their jobs back (stages/runner.py: claims
released, messages restored to the queue by the broker). A pool
process that does not unwind within WORKER_SHUTDOWN_UNWIND_SECONDS more is killed with the worker,
so a worker of any concurrency is gone within the sum of the two (its jobs then wait for their
claims to lapse, as after a crash).
"""

import contextlib
import logging
import os
import signal
import threading

from billiard.process import active_children
from celery import shared_task
from celery.signals import worker_shutting_down
from django.conf import settings

from . import dispatch, retention, sweeper
from .stages import burning, media, transcribing

logger = logging.getLogger(__name__)


@worker_shutting_down.connect
def _bound_the_shutdown(**kwargs) -> None:
    """In the worker's main process: whatever happens, be gone within the bound."""
    limit = settings.CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT + settings.WORKER_SHUTDOWN_UNWIND_SECONDS
    timer = threading.Timer(limit, _end_now, args=(limit,))
    timer.daemon = True
    timer.start()


def _end_now(limit: float) -> None:
    logger.error("the worker did not stop within %s s: its pool processes are killed", limit)
    for child in active_children():  # billiard's processes have terminate() but no kill()
        if child.pid is not None:
            with contextlib.suppress(ProcessLookupError):  # it has just ended
                os.kill(child.pid, signal.SIGKILL)
    os._exit(1)


@shared_task(acks_late=True, ignore_result=False)
def start_job(job_id: str) -> None:
    if media.run_media_stage(job_id):
        dispatch.job_send(job_id)


@shared_task(acks_late=True, ignore_result=False)
def transcribe_job(job_id: str) -> None:
    if transcribing.run_transcribe_stage(job_id):
        dispatch.job_send(job_id)


@shared_task(acks_late=True, ignore_result=False)
def burn_job(job_id: str) -> None:
    burning.run_burn_stage(job_id)  # the last stage


@shared_task
def sweep_stalled_jobs() -> dict:
    return sweeper.sweep_stalled_jobs()


@shared_task
def delete_expired_artifacts() -> dict:
    return retention.delete_expired_artifacts()
