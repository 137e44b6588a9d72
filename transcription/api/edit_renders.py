"""The last render of the transcripts edited lately, kept in this process, so that the next edit
of the same version makes again only what it changed (pipeline.rerender: a few cues, milliseconds)
instead of the whole transcript (a second or more for two hours of speech).

Keyed by job and document version: a version is written only by edit_services.segments_edit, under
a lock and raised by one each time, so a kept render of version v is the render of the document the
database holds at v. A miss (another web process took the previous edit, or this one was restarted)
costs one whole render, which is kept for the next edit. The kept document is the one rendered, so
an edit of a kept version needs not read the document's megabytes from the database either.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from transcription.pipeline import rerender

# jobs whose last render is kept; a 2-hour transcript's render holds some 10 MB
KEPT_JOBS = 4

_lock = threading.Lock()
_kept: OrderedDict[Any, tuple[int, list[dict[str, Any]], rerender.Rendered]] = OrderedDict()


def kept(job_id: Any, version: int) -> tuple[list[dict[str, Any]], rerender.Rendered] | None:
    """The document at `version` and its render, when this process rendered it."""
    with _lock:
        entry = _kept.get(job_id)
        if entry is None or entry[0] != version:
            return None
        _kept.move_to_end(job_id)
        return entry[1], entry[2]


def keep(job_id: Any, version: int, document: list[dict[str, Any]], rendered: rerender.Rendered) -> None:
    with _lock:
        _kept[job_id] = (version, document, rendered)
        _kept.move_to_end(job_id)
        while len(_kept) > KEPT_JOBS:
            _kept.popitem(last=False)


def forget() -> None:
    """Nothing kept (the bench's whole-render rounds, and tests)."""
    with _lock:
        _kept.clear()
