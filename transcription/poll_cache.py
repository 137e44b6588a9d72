"""Cached poll answers: GET /v1/api/transcription/{id} is the hottest path of the service.

The cached document is deleted whenever the job or one of its translations is written: by the
post_save signals below, and explicitly by the two queryset updates that bypass them
(services.job_progress and the sweeper). It is deleted again after the transaction commits, so a
poll racing the write cannot put the old document back for longer than the transaction lasts.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from config import shared_cache as cache

from .models import Job, Translation

TIMEOUT_SECONDS = 600


def _key(job_id) -> str:
    return f"poll:job:{job_id}"


def get(job_id):
    """(account_id, document) or None."""
    return cache.get(_key(job_id))


def put(job_id, account_id, document: dict):
    value = (account_id, document)
    cache.set(_key(job_id), value, TIMEOUT_SECONDS)
    return value


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
