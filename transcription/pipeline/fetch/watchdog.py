"""Every probe and download runs in a worker thread watched from the caller's: past its deadline,
or with no activity for its stall time, its session is aborted (sockets shut down, subprocesses
killed), so no fetch hangs a worker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import FetchError, map_error
from .guard import Session

T = TypeVar("T")


def run_watched(
    session: Session,
    fn: Callable[[], T],
    *,
    deadline: float,
    on_deadline: FetchError,
    stall: float | None = None,
    on_stall: FetchError | None = None,
    grace: float = 5.0,
) -> T:
    """Run ``fn`` in a worker thread; stop it (sockets shut down, subprocesses
    killed) when it runs past ``deadline`` seconds or shows no activity for
    ``stall`` seconds.  A worker that does not unwind within ``grace`` seconds is
    abandoned (it is a daemon thread and can only finish with an error)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            outcome["error"] = e

    worker = threading.Thread(target=target, name="fetch-worker", daemon=True)
    start = time.monotonic()
    session.touch()
    worker.start()
    while worker.is_alive():
        worker.join(0.2)
        if not worker.is_alive():
            break
        now = time.monotonic()
        if now - start > deadline:
            session.abort(on_deadline)
            break
        if stall is not None and now - session.last_activity > stall:
            session.abort(on_stall)
            break
    worker.join(grace)
    if session.failure is not None:
        raise session.failure
    if "error" in outcome:
        raise map_error(outcome["error"], session) from outcome["error"]
    if "value" not in outcome:  # abandoned without a recorded reason (should not happen)
        raise on_deadline
    value: T = outcome["value"]
    return value
