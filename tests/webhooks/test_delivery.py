"""One delivery attempt (webhooks.services.message_deliver) against a real receiver on 127.0.0.1
that verifies every request with the standardwebhooks verifier: signatures and secrets, what
counts as delivered, the limits (redirects, answer size, time, certificates, private addresses),
and what is recorded. The end-to-end tests run the same code in a real `hooks` worker."""

import base64
import json
import time
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from tests.support import SCHEDULING_SLACK_SECONDS, ends_within
from tests.webhooks.receiver import Receiver, self_signed_context
from tests.webhooks.support import fail_job, message_of
from transcription.pipeline import fetch
from webhooks import delivery
from webhooks.models import Endpoint, Message
from webhooks.services import endpoint_rotate_secret, endpoint_set, message_deliver, messages_sweep

pytestmark = pytest.mark.django_db

PRIVATE_OK = override_settings(ALLOW_PRIVATE_URLS=True)


@PRIVATE_OK
def test_it_posts_a_signed_event_that_the_verifier_accepts(account, receiver, secret):
    message = message_of(fail_job(account))
    before = int(time.time())
    attempt = message_deliver(message.id)
    [request] = receiver.wait_for(1)
    assert request.error is None and request.verified_with == secret
    assert request.payload == json.loads(message.body)
    assert request.payload["type"] == "job.failed"
    assert request.headers["webhook-id"] == message.webhook_id == f"msg_{message.id.hex}"
    assert before <= int(request.headers["webhook-timestamp"]) <= time.time()
    assert request.headers["webhook-signature"].startswith("v1,")
    assert request.headers["content-type"] == "application/json"
    assert (attempt.number, attempt.status_code, attempt.error, attempt.response_excerpt) == (1, 200, "", "answer 200")
    message.refresh_from_db()
    assert message.state == Message.State.DELIVERED and message.delivered_at and message.claimed_until is None


@PRIVATE_OK
def test_a_message_another_worker_holds_is_left_alone(account, receiver, secret):
    message = message_of(fail_job(account))
    Message.objects.filter(pk=message.pk).update(claimed_until=timezone.now() + timedelta(seconds=30))
    assert message_deliver(message.id) is None
    assert receiver.requests == [] and not message.attempts.exists()


@PRIVATE_OK
@override_settings(WEBHOOK_RETRY_SECONDS=[0, 0])
def test_it_retries_on_the_schedule_then_gives_up(account, receiver, secret):
    receiver.script = [500, 502, (503, "down for maintenance")]
    message = message_of(fail_job(account))
    outcomes = [message_deliver(message.id).outcome for _ in range(3)]
    assert outcomes == ["HTTP 500", "HTTP 502", "HTTP 503"]
    assert {request.headers["webhook-id"] for request in receiver.wait_for(3)} == {message.webhook_id}
    assert message_deliver(message.id) is None, "no fourth attempt"
    message.refresh_from_db()
    assert message.state == Message.State.FAILED and message.next_attempt_at is None
    assert message.error == "Not delivered after 3 attempts; the last: HTTP 503"
    assert message.attempts.last().response_excerpt == "down for maintenance"


@PRIVATE_OK
def test_a_retry_waits_for_its_time(account, receiver, secret):
    receiver.script = ["drop"]
    message = message_of(fail_job(account))
    assert message_deliver(message.id).outcome == "The connection was closed without an answer."
    message.refresh_from_db()
    assert message.state == Message.State.PENDING
    assert timedelta(seconds=4) < message.next_attempt_at - timezone.now() <= timedelta(seconds=5), (
        "first retry after 5 s"
    )
    assert message_deliver(message.id) is None, "not due yet"


@PRIVATE_OK
def test_a_410_disables_the_webhook(account, receiver, secret):
    receiver.script = [(410, "this hook is gone")]
    first, waiting = message_of(fail_job(account)), message_of(fail_job(account))
    attempt = message_deliver(first.id)
    assert attempt.status_code == 410 and attempt.response_excerpt == "this hook is gone"
    endpoint = Endpoint.objects.get(account=account)
    assert not endpoint.enabled and "410 Gone" in endpoint.disabled_reason
    first.refresh_from_db(), waiting.refresh_from_db()
    assert first.state == waiting.state == Message.State.FAILED
    assert message_deliver(waiting.id) is None and len(receiver.requests) == 1
    assert not Message.objects.filter(job=fail_job(account)).exists(), "a disabled webhook records no new events"
    endpoint_set(account, receiver.url())
    assert Endpoint.objects.get(account=account).enabled, "saving the URL again turns it back on"
    message_deliver(message_of(fail_job(account)).id)
    assert receiver.wait_for(2)[1].payload["type"] == "job.failed"


@PRIVATE_OK
def test_redirects_are_not_followed(account, receiver, secret):
    receiver.script = [302]
    attempt = message_deliver(message_of(fail_job(account)).id)
    assert attempt.status_code == 302
    assert attempt.error == f"Redirects are not followed (Location: {receiver.url('/elsewhere')})."
    assert [request.path for request in receiver.requests] == ["/hook"]


@PRIVATE_OK
def test_only_the_start_of_an_answer_is_read(account, receiver, secret):
    receiver.script = [(200, "x" * 5_000_000)]
    attempt = message_deliver(message_of(fail_job(account)).id)
    assert attempt.status_code == 200 and attempt.response_excerpt == "x" * delivery.READ_LIMIT


@PRIVATE_OK
@override_settings(WEBHOOK_TIMEOUT_SECONDS=1)
@pytest.mark.parametrize("behaviour", ["hold", "trickle"])
def test_a_receiver_that_keeps_the_request_waiting_is_given_up(account, receiver, secret, behaviour):
    receiver.script = [behaviour]
    with ends_within(1, "a delivery past WEBHOOK_TIMEOUT_SECONDS"):
        attempt = message_deliver(message_of(fail_job(account)).id)
    assert attempt.status_code is None and attempt.error == "No answer within 1 s."
    assert 900 <= attempt.duration_ms < (1 + SCHEDULING_SLACK_SECONDS) * 1000


def test_a_private_address_is_refused_without_a_request(account, receiver, secret):
    message = message_of(fail_job(account))  # the webhook was set while private addresses were allowed
    attempt = message_deliver(message.id)
    assert attempt.status_code is None and attempt.error == fetch.MSG_PRIVATE
    assert receiver.requests == []


def test_the_guard_checks_the_address_it_connects_to_as_well():
    answer = delivery.post("http://localhost:9/hook", b"{}", {}, allow_private=False, timeout=2)
    assert answer.status is None and answer.error == fetch.MSG_PRIVATE
    assert delivery.post("ftp://example.com/", b"{}", {}, allow_private=False, timeout=2).error == fetch.MSG_SCHEME


@PRIVATE_OK
def test_a_certificate_nobody_trusts_is_refused(account, tmp_path):
    with Receiver(tls=self_signed_context(tmp_path)) as tls_receiver:
        endpoint_set(account, tls_receiver.url())
        attempt = message_deliver(message_of(fail_job(account)).id)
        assert attempt.status_code is None
        assert attempt.error.startswith("The certificate could not be verified: self-signed certificate")
        assert tls_receiver.requests == []


@PRIVATE_OK
@override_settings(WEBHOOK_TIMEOUT_SECONDS=1)
def test_https_to_a_trusted_certificate_is_delivered_and_timed(account, tmp_path, monkeypatch):
    with Receiver(tls=self_signed_context(tmp_path)) as tls_receiver:
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))  # this machine trusts it now
        tls_receiver.secrets = [endpoint_set(account, tls_receiver.url())]
        tls_receiver.script = [200, "trickle"]
        assert message_deliver(message_of(fail_job(account)).id).status_code == 200
        assert tls_receiver.requests[0].payload["type"] == "job.failed"
        with ends_within(1, "a delivery past WEBHOOK_TIMEOUT_SECONDS"):
            attempt = message_deliver(message_of(fail_job(account)).id)
        assert attempt.error == "No answer within 1 s."


@PRIVATE_OK
def test_a_password_in_the_url_is_sent_as_basic_auth(account, receiver):
    receiver.secrets = [endpoint_set(account, receiver.url().replace("http://", "http://hooks:p%40ss@"))]
    message_deliver(message_of(fail_job(account)).id)
    [request] = receiver.wait_for(1)
    assert request.headers["authorization"] == "Basic " + base64.b64encode(b"hooks:p@ss").decode()
    assert request.payload is not None, "the signature does not depend on the credentials"


@PRIVATE_OK
def test_during_a_rotation_both_secrets_sign_for_24_hours(account, receiver, secret):
    new_secret = endpoint_rotate_secret(account)
    assert new_secret != secret and new_secret.startswith("whsec_")
    assert len(base64.b64decode(new_secret.removeprefix("whsec_"))) == 32
    for only in (secret, new_secret):
        receiver.secrets = [only]
        message_deliver(message_of(fail_job(account)).id)
        assert receiver.requests[-1].verified_with == only
    assert len(receiver.requests[-1].headers["webhook-signature"].split(" ")) == 2

    Endpoint.objects.filter(account=account).update(previous_secret_until=timezone.now() - timedelta(seconds=1))
    receiver.secrets = [secret]
    message_deliver(message_of(fail_job(account)).id)
    assert receiver.requests[-1].payload is None, "after 24 h the old secret signs nothing"
    assert receiver.requests[-1].headers["webhook-signature"].count("v1,") == 1


@PRIVATE_OK
def test_the_sweep_sends_again_what_no_worker_has_or_will_take(account, receiver, secret):
    lost, queued, lapsed, held = (message_of(fail_job(account)) for _ in range(4))
    now = timezone.now()
    Message.objects.filter(pk=lost.pk).update(queued_at=now - timedelta(minutes=6))
    Message.objects.filter(pk=lapsed.pk).update(claimed_until=now - timedelta(seconds=1))
    Message.objects.filter(pk=held.pk).update(
        claimed_until=now + timedelta(seconds=20), queued_at=now - timedelta(minutes=6)
    )
    swept = messages_sweep(now)
    assert swept == {"requeued": [lapsed.id], "queued": [lost.id]}
    assert messages_sweep(now) == {"requeued": [], "queued": []}, "sent once, not on every sweep"
    assert Message.objects.get(pk=queued.pk).queued_at == queued.queued_at


@PRIVATE_OK
@override_settings(WEBHOOK_RETRY_SECONDS=[3600])
def test_a_retry_far_ahead_is_left_to_the_sweep(account, receiver, secret):
    receiver.script = [500]
    message = message_of(fail_job(account))
    message_deliver(message.id)
    message.refresh_from_db()
    assert message.queued_at is None, "not parked in the broker for an hour"
    assert messages_sweep(timezone.now()) == {"requeued": [], "queued": []}
    assert messages_sweep(message.next_attempt_at) == {"requeued": [], "queued": [message.id]}
