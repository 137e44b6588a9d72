"""The sweeper (every minute, from beat): sends again the task of every job that no worker is
running and that nothing would run.

- `requeued`: the worker's claim on the job has lapsed (its heartbeat stopped: the worker died
  mid-stage). The stage is queued again at once; after STALLED_MAX_ATTEMPTS such re-queues the
  job is `failed` with STALLED_ERROR and refunded, so a video that kills its worker every time
  cannot go on killing workers.
- `resent`: nobody has claimed the job and it has not changed for STALLED_AFTER_SECONDS. It is
  waiting in a queue behind other work, or its message was lost (a broker restarted without
  persistence). Its task is sent again, at most once per STALLED_AFTER_SECONDS, and that costs no
  attempt: a backlog never fails jobs. A duplicate delivery is harmless; it finds the job claimed,
  moved on or ended, and does nothing.
- `retranslations`: a done job whose translations have waited STALLED_AFTER_SECONDS for the
  retranslation an edit sent (issue 46): its message is sent again, once per period.
- `live_jobs_lost`: a live stream's job waits unqueued while its recording arrives (its upload is
  receiving: never resent); once its stream is settled without the recording handed on (the web
  process holding the socket died), it fails (writes.live_job_services.live_jobs_orphaned).

A job whose worker still renews its claim is working, however long its bar stands still.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from billing import live_services as billing
from transcription import states
from transcription.models import FailureReason, Job, UploadState
from transcription.scheduling import dispatch
from transcription.writes import live_job_services, reburn_services, retranslation_services, services

STALLED_ERROR = "The job stopped making progress (a worker was lost) and was given up; its minutes have been refunded."


def sweep_stalled_jobs(now=None) -> dict:
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.STALLED_AFTER_SECONDS)
    requeued, resent, failed = [], [], []
    running = Job.objects.exclude(state__in=states.FINAL_STATES).only(
        "id", "state", "attempts", "type", "lease_until", "timeline"
    )
    for job in running.filter(lease_until__lt=now):
        if job.attempts >= settings.STALLED_MAX_ATTEMPTS:
            if reburn_services.is_reburn(job):  # a done job burned again is never failed (issue 46)
                reburn_services.reburn_end(job.id, error="a burn worker was lost")
            elif services.job_fail(job.id, STALLED_ERROR, FailureReason.STALLED):
                failed.append(job.id)
            continue
        if services.job_take_lapsed_claim(job.id, job.attempts, job.lease_until, now):
            dispatch.job_send(job.id)
            requeued.append(job.id)
    unclaimed = running.filter(lease_until__isnull=True, updated_at__lt=cutoff)
    for job in unclaimed.exclude(upload__state=UploadState.RECEIVING):  # a live stream's, still recording
        if services.job_mark_resent(job.id, cutoff, now):
            dispatch.job_send(job.id)
            resent.append(job.id)
    retranslations = retranslation_services.retranslations_resend(cutoff, now)  # a done job's edit (issue 46)
    for job_id in retranslations:
        dispatch.retranslation_send(job_id)
    # live streams whose web process died before settling them: settled at what they last reported
    lost_after = timedelta(seconds=billing.live_stale_after_seconds(settings.LIVE_IDLE_TIMEOUT_SECONDS))
    live_settled = billing.live_settle_stale(now - lost_after)
    live_jobs_lost = live_job_services.live_jobs_orphaned()
    return {
        "requeued": requeued,
        "resent": resent,
        "failed": failed,
        "retranslations": retranslations,
        "live_streams_settled": live_settled,
        "live_jobs_lost": live_jobs_lost,
    }
