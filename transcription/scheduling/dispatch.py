"""Which Celery task runs a job's next stage: the one place that decides it.

Queues: media (start_job: preparing .. uploading) -> asr (transcribe_job: processing ..
translating) -> burn (burn_job: burning). A job is sent to the task of the state it is in, so the
same rule serves a new job, a stage that handed over to the next, and the sweeper sending again
the stage of a job whose worker died.

Every account is served in turn (docs/decisions/workers-and-operations.md): a job joins its
queue's waiting line (lines.py) and the message sent says only that a job joined; the worker that
receives it takes the job the line gives it (job_take), which is this one unless another account's
turn comes first. So each job in a line has one message in its queue, and no worker idles while a
job waits. Without REDIS_URL (the embedded default) the lines are kept in the database, by the
same rule (lines.py); with a Redis that is down for a moment, the message names its job and runs
it, first come first served, as before the lines.

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
from django.utils import timezone
from kombu.exceptions import OperationalError

from config import shared_cache
from transcription import states
from transcription.models import Job
from transcription.scheduling import lines
from transcription.storage import files

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
RETRANSLATE_JOB = "transcription.tasks.retranslate_job"
RECOGNISE_CHUNK = "transcription.tasks.recognise_chunk"

SPEECH_STATES = {states.PROCESSING, states.MERGING, states.ALIGNING, states.TRANSLATING}


def stage_task(job_id, state: str, job_type: str) -> str:
    """The name of the task that runs the stage a job in `state` is at."""
    if state == states.BURNING:
        return BURN_JOB
    if state in SPEECH_STATES or state == states.UPLOADING and files.uploaded(job_id, job_type):
        return TRANSCRIBE_JOB
    return START_JOB


QUEUE_OF_TASK = {START_JOB: "media", TRANSCRIBE_JOB: "asr", BURN_JOB: "burn"}


def _send(task: str, job_id, account_id) -> None:
    """Put the job in the line of the task's queue and send that queue a turn; while Redis is down,
    send the job itself."""
    try:
        lines.join(QUEUE_OF_TASK[task], job_id, account_id)
    except shared_cache.Unavailable as error:
        shared_cache.mark_down(error)
        current_app.send_task(task, args=[str(job_id)])
        return
    current_app.send_task(task, args=[str(job_id)], kwargs={"turn": True})


def job_send(job_id) -> None:
    """Queue the task of the stage the job is at now (nothing for a job that has ended)."""
    job = Job.objects.filter(pk=job_id).only("state", "type", "account_id").first()
    if job is None or job.state in states.FINAL_STATES:
        return
    _send(stage_task(job_id, job.state, job.type), job_id, job.account_id)


def job_send_on_commit(job_id, account_id) -> None:
    """Queue a new job once the transaction that stored it has committed (a worker that picked the
    task up earlier would not find the row).

    The broker was reachable a moment ago (check_broker, before the row was stored). Should it go
    away in between, the job is already stored and answered: it stays `waiting` with nobody holding
    it, and the sweeper sends its task again after STALLED_AFTER_SECONDS, so it runs late, not never.
    """

    def send():
        try:
            _send(START_JOB, job_id, account_id)
        except SEND_ERRORS as error:
            logger.warning("job %s: its task could not be sent (%s); the sweeper will send it again", job_id, error)

    transaction.on_commit(send)


def retranslation_send(job_id) -> None:
    """Send the asr workers a done job's translations to bring up to date with an edit (issue 46):
    a message naming the job, not a turn in the fair line (it is seconds of work, and the job has
    no place in a line once done). Lost (the broker down), the job's next edit or the sweeper sends it again."""
    try:
        current_app.send_task(RETRANSLATE_JOB, args=[str(job_id)])
    except SEND_ERRORS as error:
        logger.warning("job %s: its retranslation could not be sent (%s)", job_id, error)


def chunks_send(job_id, indexes) -> None:
    """Offer the chunks of a long job's recognition to the other asr workers (issue 44): one message
    per chunk, naming it, outside the fair line (stages/spreading.py says why that stays fair). A
    message lost costs nothing: the coordinating worker recognises every chunk nobody took."""
    for index in indexes:
        try:
            current_app.send_task(RECOGNISE_CHUNK, args=[str(job_id), index])
        except SEND_ERRORS as error:
            logger.warning("job %s: chunk %s could not be offered (%s)", job_id, index, error)
            return


def others_waiting(queue: str, account_id) -> bool:
    """Whether another account's job waits in the queue's line; False while Redis is down (nobody
    can tell: the chunk is taken, first come first served, as every job is then)."""
    try:
        return lines.others_waiting(queue, account_id)
    except shared_cache.Unavailable as error:
        shared_cache.mark_down(error)
        return False


def job_take(task: str, job_id: str, turn: bool) -> lines.Taken | None:
    """The job a delivery of `task` runs: for a turn, the first job of the queue's line that has not
    ended and that no worker holds (entries of others are dropped: their jobs ended while they
    waited, or were sent again and run already); None when the line holds none. A message that
    names its job (sent while Redis was down) runs that job; so does a turn while Redis is down (the job
    that joined is still in the line and is dropped when taken, having run)."""
    if turn:
        try:
            while (taken := lines.take(QUEUE_OF_TASK[task])) is not None:
                if _free(taken.job_id):
                    return taken
            return None
        except shared_cache.Unavailable as error:
            shared_cache.mark_down(error)
    return lines.Taken(QUEUE_OF_TASK[task], job_id, "", "")


def _free(job_id: str) -> bool:
    return (
        Job.objects.filter(pk=job_id)
        .exclude(state__in=states.FINAL_STATES)
        .exclude(lease_until__gte=timezone.now())
        .exists()
    )


def job_put_back(taken: lines.Taken) -> None:
    """Give a job its place in line again: its worker stopped before the stage was over, and the
    broker gives the turn back to the queue (acks are late). While Redis is down the sweeper sends it."""
    if not taken.tag:
        return  # a message that named its job: the broker gives that message back as it is
    try:
        lines.put_back(taken)
    except shared_cache.Unavailable as error:
        logger.warning("job %s: its place in line could not be given back (%s); the sweeper will", taken.job_id, error)


def job_leave_lines(job_id) -> None:
    """Take an ended job out of the lines, so that depth and places count only jobs that will run."""
    try:
        lines.forget(job_id)
    except shared_cache.Unavailable as error:
        shared_cache.mark_down(error)
