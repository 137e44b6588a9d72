"""An event is never lost: a `hooks` worker killed (kill -9) in the middle of a delivery, or a
delivery task the broker lost, only delays it. Redis here keeps nothing on disk and a killed
worker's task stays unacknowledged for hours, so it is the sweep (beat, every 30 s) that sends
them again; here the test runs the sweep where beat would.

The worker's attempts time out after 2 s, so a dead worker's claim lapses after 5 s.
In a module of its own: no other worker may take the message instead of the one this test kills.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from harness.processes import kill, running_worker
from tests.webhooks.support import fail_job, message_of, wait_for_message
from webhooks.models import Message
from webhooks.services import RESEND_LOST_AFTER, messages_sweep

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HOOKS_ONLY = {"queues": "hooks", "ALLOW_PRIVATE_URLS": "true", "WEBHOOK_TIMEOUT_SECONDS": "2"}


def delivered(message_id) -> Message:
    return wait_for_message(message_id, lambda m: m.state == Message.State.DELIVERED, "delivery", timeout=30)


def test_a_worker_killed_mid_delivery_delivers_after_a_restart(account, receiver, secret, tmp_path):
    receiver.script = ["hold"]
    with running_worker(tmp_path / "killed.log", **HOOKS_ONLY) as process:
        message = message_of(fail_job(account))
        [interrupted] = receiver.wait_for(1)  # the worker is waiting for the receiver's answer
        kill(process)
    receiver.release()
    stuck = Message.objects.get(pk=message.pk)
    assert stuck.state == Message.State.PENDING and stuck.claimed_until is not None
    assert not stuck.attempts.exists(), "the killed attempt had no outcome to record"
    wait_for_message(message.id, lambda m: m.claimed_until < timezone.now(), "lapsed claim", timeout=15)

    with running_worker(tmp_path / "restarted.log", **HOOKS_ONLY):
        assert messages_sweep() == {"requeued": [message.id], "queued": []}
        done = delivered(message.id)
    retried = receiver.requests[1]
    assert retried.headers["webhook-id"] == interrupted.headers["webhook-id"] == message.webhook_id
    assert retried.payload is not None and retried.payload == interrupted.payload, "verified, the same event"
    assert [attempt.status_code for attempt in done.attempts.all()] == [200]


def test_a_delivery_task_the_broker_lost_is_sent_again(account, receiver, secret, tmp_path):
    message = message_of(fail_job(account))  # its task went to Redis: no worker is running
    with running_worker(tmp_path / "worker.log", **HOOKS_ONLY):  # a fresh worker purges the queues first
        assert messages_sweep() == {"requeued": [], "queued": []}, "a recently queued task may still come"
        later = timezone.now() + RESEND_LOST_AFTER + timedelta(seconds=1)
        assert messages_sweep(later) == {"requeued": [], "queued": [message.id]}
        delivered(message.id)
    [request] = receiver.requests
    assert request.payload is not None and request.headers["webhook-id"] == message.webhook_id
