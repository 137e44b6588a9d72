"""Celery tasks: thin wrappers that run a stage and hand the job to the task of its next stage
(dispatch.py decides which). A job task's message is a turn on its queue: the worker runs the job
the queue's fair line gives it (dispatch.job_take), not necessarily the one that sent the turn. Queues are set by name in settings.CELERY_TASK_ROUTES.

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
from collections.abc import Callable

from billiard.process import active_children
from celery import shared_task
from celery.signals import worker_shutting_down
from django.conf import settings

from transcription.scheduling import dispatch
from transcription.upkeep import retention, sweeper

from .stages import burning, media, retranslating, spreading, transcribing

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


def _run_turn(task: str, job_id: str, turn: bool, stage: Callable[[str], bool | None]) -> str | None:
    """Run the stage of the job this delivery takes (dispatch.job_take: a turn takes the job the
    fair line gives it); queue its next stage. The id of the job run is the task's result, which
    the job's admin page finds its outcomes by."""
    taken = dispatch.job_take(task, job_id, turn)
    if taken is None:
        return None  # the line is empty: its jobs were taken by earlier turns
    try:
        goes_on = stage(taken.job_id)
    except SystemExit:  # the worker is stopping: the job gets its place back, the broker its turn
        dispatch.job_put_back(taken)
        raise
    if goes_on:
        dispatch.job_send(taken.job_id)
    return taken.job_id


@shared_task(acks_late=True, ignore_result=False)
def start_job(job_id: str, turn: bool = False) -> str | None:
    return _run_turn(dispatch.START_JOB, job_id, turn, media.run_media_stage)


@shared_task(acks_late=True, ignore_result=False)
def transcribe_job(job_id: str, turn: bool = False) -> str | None:
    return _run_turn(dispatch.TRANSCRIBE_JOB, job_id, turn, transcribing.run_transcribe_stage)


@shared_task(acks_late=True, ignore_result=False)
def burn_job(job_id: str, turn: bool = False) -> str | None:
    return _run_turn(dispatch.BURN_JOB, job_id, turn, burning.run_burn_stage)  # the last stage: never goes on


@shared_task(acks_late=True)
def retranslate_job(job_id: str) -> None:
    """A done job's translations brought up to date with an edit (issue 46): names its job, no turn."""
    retranslating.run_retranslation(job_id)


@shared_task(acks_late=True)
def recognise_chunk(job_id: str, index: int) -> None:
    """A chunk of a long job's recognition (issue 44), offered by its coordinating worker: names its
    job and chunk, no turn (stages/spreading.py)."""
    spreading.run_chunk(job_id, index)


@shared_task
def sweep_stalled_jobs() -> dict:
    return sweeper.sweep_stalled_jobs()


@shared_task
def delete_expired_artifacts() -> dict:
    return retention.delete_expired_artifacts()
