"""Cached poll answers: GET /v1/api/transcription/{id} is the hottest path of the service.

The cached document is deleted whenever the job or one of its translations is written: by the
post_save signals below, and explicitly by the two queryset updates that bypass them
(services.job_progress and the sweeper). It is deleted again after the transaction commits, so a
poll racing the write cannot put the old document back for longer than the transaction lasts.

What is kept is the answer's JSON as bytes (rendered once by the API), behind one line that says
whose job it is and whether it holds storage names that each answer turns into signed links:
b"<account id> <0|1>\n<json>". Plain bytes, so the poll path's Lua script hands them over as they
are (transcription.api.polls) and a poll without links answers them without decoding anything.
"""

from __future__ import annotations

from typing import NamedTuple

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from config import shared_cache as cache

from .models import Job, Translation

TIMEOUT_SECONDS = 600


def _key(job_id) -> str:
    return f"poll:job:{job_id}"


class CachedPoll(NamedTuple):
    account_id: int
    has_links: bool  # the body holds storage names: each answer signs them (with_links)
    body: bytes  # the document's JSON


def redis_key(job_id) -> str:
    """The Redis key of a job's cached poll (for a Lua script that reads it)."""
    return cache.full_key(_key(job_id))


def encode(account_id: int, has_links: bool, body: bytes) -> bytes:
    return b"%d %d\n" % (account_id, has_links) + body


def decode(value: bytes | None) -> CachedPoll | None:
    if not value:
        return None
    head, _, body = value.partition(b"\n")
    try:
        account_id, has_links = head.split(b" ")
        return CachedPoll(int(account_id), has_links == b"1", body)
    except ValueError:
        return None  # an entry of an older format: a miss


def get(job_id) -> CachedPoll | None:
    return decode(cache.get_bytes(_key(job_id)))


def put(job_id, account_id: int, has_links: bool, body: bytes) -> CachedPoll:
    cache.set_bytes(_key(job_id), encode(account_id, has_links, body), TIMEOUT_SECONDS)
    return CachedPoll(account_id, has_links, body)


def forget(job_id) -> None:
    key = _key(job_id)
    cache.delete(key)
    transaction.on_commit(lambda: cache.delete(key))


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
