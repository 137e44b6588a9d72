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

from celery import current_app
from django.db import transaction

from . import files, states
from .models import Job

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
    task up earlier would not find the row)."""
    transaction.on_commit(lambda: current_app.send_task(START_JOB, args=[str(job_id)]))
