"""What every stage shares: it runs only for a job that has not ended and that no other worker
runs (the claim), in a scratch folder of its own, and any error ends the job with a message for
the client.

A worker told to stop (SIGTERM, see bin/worker) lets a running stage finish within
WORKER_SHUTDOWN_GRACE_SECONDS (Celery's soft shutdown); then Celery's cold shutdown signals the pool
process, and billiard raises SystemExit in it. The stage unwinds like any other error (subprocesses
killed, scratch folder removed) but the job does not fail and costs no attempt: its claim is
released here, and the broker puts the task's message back in the queue (acks are late; the
stopping worker restores what it had not acknowledged), so another worker resumes the job at once
instead of waiting for the claim to lapse. Should the broker be unreachable then, the sweeper sends
the task again after STALLED_AFTER_SECONDS.

Everything a job writes to local disk lives in WORK_DIR/<job id>/ and is removed when the stage
ends, whatever happens. A stage re-delivered after a lost worker starts again from what the job
already has.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from transcription import states
from transcription.pipeline import burn, fetch
from transcription.pipeline.media import audio
from transcription.pipeline.recognition import whisper_model
from transcription.pipeline.speakers.encoding.weight_files import SpeakerWeightsMissing
from transcription.storage import files
from transcription.writes import services
from transcription.writes.claims import JobClaim

from ..models import FailureReason, Job
from ..pipeline.speakers import DiarizationFailed, voices

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "An internal error stopped this job; its minutes have been refunded. Please try again."

# Errors whose message is written for the client and becomes the job's `error` as is.
# Each with the reason an operator counts it under (metrics).
CLIENT_ERRORS: dict[type[Exception], str] = {
    fetch.FetchError: FailureReason.SOURCE,
    audio.AudioError: FailureReason.MEDIA,
    whisper_model.ModelUnavailable: FailureReason.MODEL,
    burn.BurnError: FailureReason.BURN,
    voices.VoiceSampleError: FailureReason.MEDIA,
    # the speaker models failed or their weights are missing (the system check refuses to start a
    # worker without them; a file removed later still fails the job with a message, not "internal")
    DiarizationFailed: FailureReason.MODEL,
    SpeakerWeightsMissing: FailureReason.MODEL,  # a voice sample's or a voice's encoder, in the worker itself
}

Stage = Callable[[Job, Path], bool]


def run_stage(job_id, stage: Stage) -> bool:
    """Run `stage(job, scratch folder)` for a job that has not ended and that no other worker is
    running; fail the job on any error. True when the stage says the job goes on."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.state in states.FINAL_STATES:
        return False
    claim = JobClaim(job_id)
    if not claim.take():
        logger.warning("job %s: another worker is running it; this delivery of the task is dropped", job_id)
        return False
    directory = _work_dir(job_id)
    try:
        with claim:
            return stage(job, directory)
    except SystemExit:  # the pool process is stopped with its worker: not the job's fault
        logger.warning("job %s: the worker is stopping; the job goes back to the queue", job_id)
        raise
    except tuple(CLIENT_ERRORS) as error:
        reason = next(reason for kind, reason in CLIENT_ERRORS.items() if isinstance(error, kind))
        services.job_fail(job_id, str(error), reason)
    except states.InvalidTransition as error:
        logger.warning("job %s: %s", job_id, error)
    except files.store_errors() as error:  # a bucket down or refusing: said so, refunded, counted apart
        logger.warning("job %s: the file store failed: %r", job_id, error)
        files.count_error("stage")
        services.job_fail(job_id, files.STORE_DOWN, FailureReason.STORAGE)
    except Exception:
        logger.exception("job %s failed unexpectedly", job_id)
        services.job_fail(job_id, INTERNAL_ERROR, FailureReason.INTERNAL)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        try:
            _delete_shared_copies(job_id)
        except Exception as error:  # the store down: retention deletes leftover copies later
            logger.warning("job %s: its shared copies could not be deleted now: %r", job_id, error)
        try:  # what the stage stored or deleted counts in the account's storage quota from now
            services.job_files_measured(job_id)
        except Exception:  # storage unreachable: measured again after the next stage or deletion
            logger.exception("job %s: its files could not be measured", job_id)
        claim.release()
    return False


def _work_dir(job_id) -> Path:
    directory = Path(settings.WORK_DIR) / str(job_id)
    shutil.rmtree(directory, ignore_errors=True)  # a retried stage starts clean
    directory.mkdir(parents=True)
    return directory


def _delete_shared_copies(job_id) -> None:
    """The audio is only needed until the speech stage is over, the source video until the job
    ends; a done burned job's is kept with its videos, to burn them again on request (issue 46:
    retention deletes it with them)."""
    state, kind = Job.objects.filter(pk=job_id).values_list("state", "type").first() or (None, None)
    if state is None or state in states.FINAL_STATES or state == states.BURNING:
        default_storage.delete(files.audio_name(job_id))
    if state is None or state == states.FAILED or state == states.DONE and kind != "burned":
        default_storage.delete(files.source_name(job_id))


class Throttled:
    """Calls `update(fraction)` at most once a second: progress is a database write."""

    def __init__(self, update: Callable[[float], None]):
        self.update, self.last = update, 0.0

    def __call__(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self.last >= 1.0 or fraction >= 1.0:
            self.last = now
            self.update(fraction)
