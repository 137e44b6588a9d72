"""Which Celery task runs a job's next stage: the one place that decides it.

Queues: media (start_job: preparing .. uploading) -> asr (transcribe_job: processing ..
translating) -> burn (burn_job: burning). A job is sent to the task of the state it is in, so the
same rule serves a new job, a stage that handed over to the next, and the sweeper sending again
the stage of a job whose worker died.

Tasks are sent by name. The tasks run the stages, the stages call the services, and the services
queue new jobs through here: importing the tasks module from here would close that circle, and
would load the speech stack into every web process.
"""

from __future__ import annotations

import logging
from functools import lru_cache

import redis
from celery import current_app
from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError

from config import shared_cache

from . import files, states
from .models import Job

logger = logging.getLogger(__name__)

# What the web tier says while the broker is down; a client waits this long before trying again.
BROKER_RETRY_AFTER_SECONDS = 30
SEND_ERRORS = (OperationalError, redis.RedisError, OSError)


class QueueUnavailable(Exception):
    """The broker cannot be reached, so nothing is queued (and nothing is stored): the client is
    told to come back (503 with Retry-After) rather than handed a job that might never run."""

    retry_after = BROKER_RETRY_AFTER_SECONDS

    def __init__(self):
        super().__init__(
            "The job queue is unreachable for a moment; nothing was queued and nothing charged. "
            f"Try again in {BROKER_RETRY_AFTER_SECONDS} seconds."
        )


@lru_cache(maxsize=4)
def _broker_client(url: str):
    """A Redis client on the broker at `url` with short timeouts, or None for another kind of broker."""
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    return shared_cache.connect(url)


def check_broker() -> None:
    """Raise QueueUnavailable when the broker does not answer a PING (one round trip)."""
    client = _broker_client(settings.CELERY_BROKER_URL)
    if client is None:
        return
    try:
        client.ping()
    except redis.RedisError as error:
        logger.warning("broker unreachable: %s", error)
        raise QueueUnavailable() from error


START_JOB = "transcription.tasks.start_job"
TRANSCRIBE_JOB = "transcription.tasks.transcribe_job"
BURN_JOB = "transcription.tasks.burn_job"

SPEECH_STATES = {states.PROCESSING, states.MERGING, states.ALIGNING, states.TRANSLATING}


def stage_task(job_id, state: str, job_type: str) -> str:
    """The name of the task that runs the stage a job in `state` is at."""
    if state == states.BURNING:
        return BURN_JOB
    if state in SPEECH_STATES or state == states.UPLOADING and files.uploaded(job_id, job_type):
        return TRANSCRIBE_JOB
    return START_JOB


def job_send(job_id) -> None:
    """Queue the task of the stage the job is at now (nothing for a job that has ended)."""
    job = Job.objects.filter(pk=job_id).only("state", "type").first()
    if job is None or job.state in states.FINAL_STATES:
        return
    current_app.send_task(stage_task(job_id, job.state, job.type), args=[str(job_id)])


def job_send_on_commit(job_id) -> None:
    """Queue a new job once the transaction that stored it has committed (a worker that picked the
    task up earlier would not find the row).

    The broker was reachable a moment ago (check_broker, before the row was stored). Should it go
    away in between, the job is already stored and answered: it stays `waiting` with nobody holding
    it, and the sweeper sends its task again after STALLED_AFTER_SECONDS, so it runs late, not never.
    """

    def send():
        try:
            current_app.send_task(START_JOB, args=[str(job_id)])
        except SEND_ERRORS as error:
            logger.warning("job %s: its task could not be sent (%s); the sweeper will send it again", job_id, error)

    transaction.on_commit(send)
