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

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from transcription.pipeline import rerender

# jobs whose last render is kept; a 2-hour transcript's render holds some 10 MB
KEPT_JOBS = 4

_lock = threading.Lock()


@dataclass(frozen=True)
class Kept:
    document: list[dict[str, Any]]
    rendered: rerender.Rendered
    encoded: list[str]  # each segment as JSON (what the answer's document is made of)


_kept: OrderedDict[Any, tuple[int, Kept]] = OrderedDict()


def kept(job_id: Any, version: int) -> Kept | None:
    """The document at `version`, its render and JSON, when this process rendered it."""
    with _lock:
        entry = _kept.get(job_id)
        if entry is None or entry[0] != version:
            return None
        _kept.move_to_end(job_id)
        return entry[1]


def encoded(document: list[dict[str, Any]], before: Kept | None) -> list[str]:
    """Each segment of `document` as JSON: those `before` holds unchanged are not written again."""
    if before is None:
        return [_json(segment) for segment in document]
    start, end_old, end_new = rerender.changed_segments(before.document, document)
    return before.encoded[:start] + [_json(segment) for segment in document[start:end_new]] + before.encoded[end_old:]


def _json(value: Any) -> str:
    # as the REST door's renderer writes JSON (DRF's COMPACT_JSON and UNICODE_JSON)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def keep(job_id: Any, version: int, entry: Kept) -> None:
    with _lock:
        _kept[job_id] = (version, entry)
        _kept.move_to_end(job_id)
        while len(_kept) > KEPT_JOBS:
            _kept.popitem(last=False)


def forget() -> None:
    """Nothing kept (the bench's whole-render rounds, and tests)."""
    with _lock:
        _kept.clear()
