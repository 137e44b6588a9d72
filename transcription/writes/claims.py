"""A worker's claim on the job whose stage it runs, and the heartbeat that renews it.

Progress alone cannot show that a worker is alive: a download, the speech model's translate task
or a 4K encode of a long video can run for many minutes without the bar moving. A claim lapses
after four missed beats, so a worker that dies frees its job for the sweeper. The claim's expiry
is its token: a worker whose claim lapsed and was taken over neither renews nor releases the new
holder's claim (services.job_claim / job_renew_claim / job_release compare it).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from celery import current_task
from django.conf import settings
from django.db import connection

from transcription.writes import chunk_services, services

logger = logging.getLogger(__name__)


class _Claim(ABC):
    """A claim renewed every WORKER_HEARTBEAT_SECONDS by a thread while its holder works (`with
    claim:`); it lapses after BEATS_PER_CLAIM missed beats. Subclasses say what is claimed."""

    BEATS_PER_CLAIM = 4

    def __init__(self, name: str):
        self.name = name
        self.interval = float(settings.WORKER_HEARTBEAT_SECONDS)
        self.seconds = self.interval * self.BEATS_PER_CLAIM
        self.until: datetime | None = None  # the expiry this worker last wrote
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"heartbeat-{name}", daemon=True)

    @abstractmethod
    def _renew(self) -> datetime | None:
        """Extend the claim: the new expiry, or None when it lapsed and was taken over."""

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                try:
                    renewed = self._renew()
                except Exception:  # a lost database connection: try again at the next beat
                    logger.exception("%s: heartbeat failed", self.name)
                    connection.close()
                    continue
                if renewed is None:
                    logger.warning("%s: this worker's claim lapsed and was taken over", self.name)
                    return
                self.until = renewed
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()


class JobClaim(_Claim):
    """Taken before a stage runs; renewed while the stage runs; released when it ends."""

    def __init__(self, job_id):
        super().__init__(f"job {job_id}")
        self.job_id = job_id

    def take(self) -> bool:
        self.until = services.job_claim(self.job_id, self.seconds)
        return self.until is not None

    def release(self) -> None:
        if self.until is not None:
            services.job_release(self.job_id, self.until)

    def _renew(self):
        return services.job_renew_claim(self.job_id, self.until, self.seconds)


class ChunkClaim(_Claim):
    """A worker's claim on one recognition chunk of a long job (stages/spreading.py): taken with
    take() (that chunk) or take_any() (any free one), renewed while the chunk is recognised, ended
    by store() (the result kept, the chunk done) or release() (left for another worker)."""

    def __init__(self, job_id, by: str):
        super().__init__(f"job {job_id} chunk")
        self.job_id, self.by = job_id, by
        self.index: int | None = None

    def take(self, index: int) -> bool:
        self.until = chunk_services.chunk_claim(self.job_id, index, self.by, self.seconds)
        self.index = index if self.until is not None else None
        return self.until is not None

    def take_any(self, *, last_first: bool = False) -> bool:
        taken = chunk_services.chunk_claim_any(self.job_id, self.by, self.seconds, last_first=last_first)
        self.index, self.until = taken or (None, None)
        return taken is not None

    def _renew(self):
        assert self.index is not None and self.until is not None, "renewed only while held"
        return chunk_services.chunk_renew_claim(self.job_id, self.index, self.until, self.seconds)

    def store(self, result: dict[str, Any]) -> bool:
        assert self.index is not None and self.until is not None, "stored only while held"
        return chunk_services.chunk_store(self.job_id, self.index, self.until, result)

    def release(self) -> None:
        """Nothing once stored (the chunk is done) or when nothing was taken."""
        if self.index is not None and self.until is not None:
            chunk_services.chunk_release(self.job_id, self.index, self.until)


def worker_name() -> str:
    """Who holds a chunk, as people read it: the Celery worker's name and the pool process."""
    task = current_task
    hostname = getattr(getattr(task, "request", None), "hostname", None) if task else None
    return f"{hostname or socket.gethostname()}/{os.getpid()}"
