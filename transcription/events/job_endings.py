"""A job's end, told in Redis pub/sub to whoever waits for it (the OpenAI-compatible door answers
when the job ends, awaiting this in the event loop). Best effort: a waiter also reads the job's row
every few seconds, so a message lost to a Redis hiccup only delays an answer."""

from __future__ import annotations

from functools import partial

from django.db import transaction

from config import shared_cache


def channel(job_id) -> str:
    return f"job-ended:{job_id}"


def _publish(job_id) -> None:
    client = shared_cache.reachable_client()
    if client is None:
        return
    try:
        client.publish(channel(job_id), b"1")
    except shared_cache.Unavailable as error:
        shared_cache.mark_down(error)


def announce_on_commit(job_id) -> None:
    """Tell the waiters once the transaction that ends the job has committed (they read the row)."""
    transaction.on_commit(partial(_publish, job_id))
