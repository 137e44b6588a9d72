"""BLAS threads for the small matrices of diarization."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


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
