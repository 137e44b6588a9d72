"""A worker's claim on the job whose stage it runs, and the heartbeat that renews it.

Progress alone cannot show that a worker is alive: a download, the speech model's translate task
or a 4K encode of a long video can run for many minutes without the bar moving. A claim lapses
after four missed beats, so a worker that dies frees its job for the sweeper. The claim's expiry
is its token: a worker whose claim lapsed and was taken over neither renews nor releases the new
holder's claim (services.job_claim / job_renew_claim / job_release compare it).
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connection

from . import services

logger = logging.getLogger(__name__)


class JobClaim:
    """Taken before a stage runs; renewed every WORKER_HEARTBEAT_SECONDS by a thread while the stage
    runs (`with claim:`); released when it ends."""

    BEATS_PER_CLAIM = 4

    def __init__(self, job_id):
        self.job_id = job_id
        self.interval = float(settings.WORKER_HEARTBEAT_SECONDS)
        self.seconds = self.interval * self.BEATS_PER_CLAIM
        self.until = None  # the expiry this worker last wrote
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"heartbeat-{job_id}", daemon=True)

    def take(self) -> bool:
        self.until = services.job_claim(self.job_id, self.seconds)
        return self.until is not None

    def release(self) -> None:
        services.job_release(self.job_id, self.until)

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                try:
                    renewed = services.job_renew_claim(self.job_id, self.until, self.seconds)
                except Exception:  # a lost database connection: try again at the next beat
                    logger.exception("job %s: heartbeat failed", self.job_id)
                    connection.close()
                    continue
                if renewed is None:
                    logger.warning("job %s: this worker's claim lapsed and was taken over", self.job_id)
                    return
                self.until = renewed
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self) -> JobClaim:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()
