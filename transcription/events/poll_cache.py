"""Cached poll answers: GET /v1/api/transcription/{id} is the hottest path of the service.

The cached document is deleted whenever the job or one of its translations is written: by the
post_save signals below, and explicitly by the two queryset updates that bypass them
(services.job_progress and the sweeper). It is deleted again after the transaction commits.

A poll that misses reads the job's version key before it reads the row, and its answer is cached
only if the version has not moved since: every delete moves it. Without that, a poll that read the
row just before a write committed, and cached it just after the write's delete, put the old
document back for the whole timeout (a job seen `aligning` for ten minutes after it was `done`:
bench/asr/pipeline.py, polling every 0.1 s, met it in one job of four).

What is kept is the answer's JSON as bytes (rendered once by the API), behind one line that says
whose job it is and whether it holds storage names that each answer turns into signed links:
b"<account id> <0|1> <digest of the json>\n<json>". Plain bytes, so the poll path's Lua script hands
them over as they are (transcription.api.front.polls) and a poll without links answers them without
decoding anything; the digest lets a web process that holds the same answer already be told so
instead of being sent it again.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from django.db.models.signals import post_delete, post_save

from config import shared_cache as cache
from transcription.models import Job, Translation

TIMEOUT_SECONDS = 600


def _key(job_id) -> str:
    return f"poll:job:{job_id}"


class CachedPoll(NamedTuple):
    account_id: int
    has_links: bool  # the body holds storage names: each answer signs them (with_links)
    body: bytes  # the document's JSON
    tag: bytes  # the first line (account, links, digest): equal tags, equal entries


def redis_key(job_id) -> str:
    """The Redis key of a job's cached poll (for a Lua script that reads it)."""
    return cache.full_key(_key(job_id))


def _tag(account_id: int, has_links: bool, body: bytes) -> bytes:
    digest = hashlib.blake2b(body, digest_size=16).hexdigest().encode()
    return b"%d %d %s\n" % (account_id, has_links, digest)


def encode(account_id: int, has_links: bool, body: bytes) -> bytes:
    return _tag(account_id, has_links, body) + body


def decode(value: bytes | None) -> CachedPoll | None:
    if not value:
        return None
    head, _, body = value.partition(b"\n")
    try:
        account_id, has_links, _digest = head.split(b" ")
        return CachedPoll(int(account_id), has_links == b"1", body, head + b"\n")
    except ValueError:
        return None  # an entry of an older format: a miss


def _version_key(job_id) -> str:
    return f"poll:version:{job_id}"


def get(job_id) -> tuple[CachedPoll | None, bytes | None]:
    """The cached poll (None: a miss) and the version to hand to `put` on a miss. Call it before
    reading the job from the database."""
    value, version = cache.get_bytes_and_version(_key(job_id), _version_key(job_id))
    return decode(value), version


def put(job_id, account_id: int, has_links: bool, body: bytes, version: bytes | None) -> CachedPoll:
    """Cache the answer unless the job was written since `get` returned `version`; the entry
    either way (it is this request's answer)."""
    tag = _tag(account_id, has_links, body)
    cache.set_bytes_if_version(_key(job_id), tag + body, TIMEOUT_SECONDS, _version_key(job_id), version)
    return CachedPoll(account_id, has_links, body, tag)  # what decode() reads back from it


def forget(job_id) -> None:
    cache.forget(_key(job_id), _version_key(job_id), TIMEOUT_SECONDS)


def _on_job_saved(sender, instance, **kwargs):
    forget(instance.pk)


def _on_translation_saved(sender, instance, **kwargs):
    forget(instance.job_id)


def connect() -> None:
    """Called once the models are ready (TranscriptionConfig.ready)."""
    post_save.connect(_on_job_saved, sender=Job, dispatch_uid="poll_cache_job")
    post_delete.connect(_on_job_saved, sender=Job, dispatch_uid="poll_cache_job_delete")
    post_save.connect(_on_translation_saved, sender=Translation, dispatch_uid="poll_cache_translation")
    post_delete.connect(_on_translation_saved, sender=Translation, dispatch_uid="poll_cache_translation_delete")
