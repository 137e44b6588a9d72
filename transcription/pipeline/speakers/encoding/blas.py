"""Threads for diarization: BLAS kept to one thread, and the Python threads that run the models'
batches instead."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import numpy as np

MAX_THREADS = 16  # each holds a batch of windows: memory stays bounded on a many-core machine


def diarization_threads() -> int:
    """How many batches of windows run at once: one per core this process may use. Diarization's
    child runs at the lowest priority while recognition runs, so a thread takes only a core that
    recognition leaves idle: on the 2-core VM that is little, but on a GPU machine nearly every core
    is idle. Capped at 4 until stop 37: on a GPU machine's 16 cores the speech stage then took 1.84-1.95x
    bare recognition, waiting for diarization, against 1.00-1.30x with one thread per core
    (bench/asr/README.md)."""
    return max(1, min(MAX_THREADS, len(os.sched_getaffinity(0))))


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """The LSTM's matrices are small: BLAS threads only spin; parallelism comes from
    running batches in Python threads instead (numpy releases the GIL)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - works, only slower on many-core BLAS
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


class BatchPool:
    """``threads`` threads running batches of windows (each batch one model call, on one core), the
    results kept in the order submitted. ``submit`` waits while two batches per thread are queued,
    so a long file's windows stay on disk rather than in memory."""

    def __init__(self, threads: int):
        self.pool = ThreadPoolExecutor(max_workers=threads)
        self.limit = 2 * threads
        self.futures: list[Future[np.ndarray]] = []
        self.queued: deque[Future[np.ndarray]] = deque()  # submitted, not yet known to be done

    def __enter__(self) -> BatchPool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.pool.shutdown(wait=True, cancel_futures=error is not None)

    def submit(self, run: Callable[..., np.ndarray], *args: Any) -> None:
        future = self.pool.submit(run, *args)
        self.futures.append(future)
        self.queued.append(future)
        while len(self.queued) > self.limit:  # the oldest first: one thread-pool queue, in order
            wait([self.queued.popleft()])

    def results(self) -> list[np.ndarray]:
        return [future.result() for future in self.futures]
