"""The last render of the transcripts edited lately, kept in this process, so that the next edit
of the same version makes again only what it changed (pipeline.transcripts.rerender: a few cues, milliseconds)
instead of the whole transcript (a second or more for two hours of speech). A copy goes to Redis
(config.shared_cache), written by a thread of its own after the answer, so that the next edit
landing on another web process loads it (some 50 ms for two hours) instead of rendering whole.

Keyed by job and document version: a version is written only by edit_services.segments_edit, under
a lock and raised by one each time, so a kept render of version v is the render of the document the
database holds at v. A miss (another web process took the previous edit, or this one was restarted)
(nothing in this process nor in Redis: the first edit, a copy not written yet, Redis down) costs
one whole render, which is kept for the next edit. The kept document is the one rendered, so
an edit of a kept version needs not read the document's megabytes from the database either.

The copy in Redis is JSON (config.shared_cache: nothing read from Redis is unpickled), under a
version made from the names of every field it holds, so a release whose render holds other fields
reads the older release's copies as misses (one whole render) rather than as the wrong shape.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from config import shared_cache
from transcription.pipeline.transcripts import cue_tokens, replan, rerender

# jobs whose last render is kept; a 2-hour transcript's render holds some 10 MB
KEPT_JOBS = 4
SHARED_SECONDS = 3600  # how long Redis keeps a copy: an editing session's pauses
COPY_DELAY_SECONDS = 0.2

# one writer: copies are written in order, off the request's thread
_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edit-renders")

_lock = threading.Lock()


@dataclass(frozen=True)
class Kept:
    document: list[dict[str, Any]]
    rendered: rerender.Rendered
    encoded: list[str]  # each segment as JSON (what the answer's document is made of)


_kept: OrderedDict[Any, tuple[int, Kept]] = OrderedDict()


def _dump(value: tuple[int, Kept]) -> dict[str, Any]:
    version, entry = value
    return {
        "version": version,
        "document": entry.document,
        "rendered": rerender.as_json(entry.rendered),
        "encoded": entry.encoded,
    }


def _load(data: dict[str, Any]) -> tuple[int, Kept]:
    document, encoded = data["document"], data["encoded"]
    if not (isinstance(document, list) and isinstance(encoded, list) and len(document) == len(encoded)):
        raise ValueError("a document and its segments' JSON, one for each segment")
    if not all(isinstance(segment, dict) for segment in document) or not all(isinstance(e, str) for e in encoded):
        raise TypeError("segments are objects, their JSON strings")
    return int(data["version"]), Kept(document, rerender.from_json(data["rendered"]), encoded)


def _fields_digest() -> str:
    # every field of what is kept: a field added, dropped or renamed is another version
    names = [
        f"{kind.__name__}.{field.name}"
        for kind in (Kept, rerender.Rendered, replan.Tokens, replan.Plan, cue_tokens.Tok)
        for field in dataclasses.fields(kind)
    ]
    return hashlib.blake2b(" ".join(names).encode(), digest_size=6).hexdigest()


SHAPE = shared_cache.Shape("edit-render", f"1.{_fields_digest()}", _dump, _load)


def kept(job_id: Any, version: int) -> Kept | None:
    """The document at `version`, its render and JSON, when this process rendered it."""
    with _lock:
        entry = _kept.get(job_id)
        if entry is not None and entry[0] == version:
            _kept.move_to_end(job_id)
            return entry[1]
    shared = shared_cache.get(_key(job_id), SHAPE)
    if shared is None or shared[0] != version:
        return None
    _keep_here(job_id, version, shared[1])
    return shared[1]


def _key(job_id: Any) -> str:
    return f"edit-render:{job_id}"


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
    """`entry` is what `version` of the job's document renders to: kept here, and copied to Redis."""
    _keep_here(job_id, version, entry)
    _writer.submit(_copy, job_id, version, entry)


def _copy(job_id: Any, version: int, entry: Kept) -> None:
    # writing the JSON holds the interpreter for tens of ms: after the answer has gone, not while it is written
    time.sleep(COPY_DELAY_SECONDS)
    shared_cache.set(_key(job_id), (version, entry), SHARED_SECONDS, SHAPE)


def _keep_here(job_id: Any, version: int, entry: Kept) -> None:
    with _lock:
        _kept[job_id] = (version, entry)
        _kept.move_to_end(job_id)
        while len(_kept) > KEPT_JOBS:
            _kept.popitem(last=False)


def forget(job_id: Any = None) -> None:
    """Nothing kept in this process (as in another one); with `job_id`, that job's copy in Redis
    dropped too (the bench's whole-render rounds)."""
    with _lock:
        _kept.clear()
    if job_id is not None:
        _writer.submit(lambda: None).result()  # the copies on their way are written first
        shared_cache.delete(_key(job_id))


def written() -> None:
    """Returns once the copies on their way to Redis are written (tests)."""
    _writer.submit(lambda: None).result()
