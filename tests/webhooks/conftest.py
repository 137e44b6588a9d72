"""Webhook fixtures: a receiver on 127.0.0.1 that verifies signatures, an account whose webhook
points at it, and jobs that end through transcription.services (as the runner ends them)."""
import time

import pytest
from django.test import override_settings

from tests.webhooks.receiver import Receiver


@pytest.fixture
def receiver():
    with Receiver() as running:
        yield running


@pytest.fixture
def secret(account, receiver):
    """The account's webhook posts to the receiver, which verifies with the secret it was given."""
    from webhooks.services import endpoint_set

    with override_settings(ALLOW_PRIVATE_URLS=True):
        secret = endpoint_set(account, receiver.url())
    receiver.secrets = [secret]
    return secret


def new_job(account, **fields):
    from transcription.models import Job

    return Job.objects.create(account=account, **{
        "url": "https://example.com/talk.mp4", "type": "transcript", "state": "processing", **fields,
    })


def fail_job(account, error="The page was not found (HTTP 404).", **fields):
    """A job that has just failed, through the service the runner uses."""
    from transcription import services

    return services.job_fail(new_job(account, **fields).id, error)


def message_of(job, event_type=None):
    from webhooks.models import Message

    found = Message.objects.filter(job=job)
    return found.get(event_type=event_type) if event_type else found.get()


def wait_for_message(message_id, ready, what: str, timeout: float = 60):
    """Poll the database until `ready(message)` is true; return the message. Fails after `timeout`
    seconds saying what was awaited and where the message stood."""
    from webhooks.models import Message

    deadline = time.monotonic() + timeout
    while True:
        message = Message.objects.get(pk=message_id)
        if ready(message):
            return message
        if time.monotonic() > deadline:
            outcomes = [attempt.outcome for attempt in message.attempts.all()]
            raise AssertionError(f"message {message.webhook_id}: no {what} after {timeout} s; it is {message.state}, "
                                 f"claimed until {message.claimed_until}, attempts {outcomes}")
        time.sleep(0.2)
