"""The only place that writes webhook endpoints, messages (the outbox) and attempts.

An event is recorded in the database transaction that ends its job (`message_record_job_end`,
which receives transcription.events.signals.job_ended from job_finish / job_fail), and its delivery task is sent once that
transaction has committed. A crash between the commit and the send, a broker that lost the task,
or a worker killed mid-delivery only delays it: `messages_sweep` (beat, every 30 s) sends again
what is due and that no live worker holds.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from standardwebhooks import Webhook

from accounts.models import Account
from audit.models import AuditEvent
from audit.services import Actor, audit_record
from transcription import states
from transcription.api.wire.presenters import batch_payload, job_document, with_links
from transcription.models import Batch, Job
from transcription.pipeline.fetch import FetchError, check_url

from . import delivery
from .models import Attempt, Endpoint, Message

logger = logging.getLogger(__name__)

# After a rotation the old secret signs too for this long, so receivers can switch without a gap.
SECRET_OVERLAP = timedelta(hours=24)
# Retries due within this time are queued at once with a countdown; later ones are left to the
# sweep (a task waiting hours in Redis would be redelivered every visibility timeout).
QUEUE_AHEAD_SECONDS = 60
# A message queued this long ago, due and still not taken by any worker, lost its task.
RESEND_LOST_AFTER = timedelta(minutes=5)
# Fields of a job that carry whole texts: events leave them out (the client GETs the job for them).
TEXT_FIELDS = ("txt", "srt", "webvtt")
MAX_URL_LENGTH = 2048
DELIVER_TASK = "webhooks.tasks.deliver_message"
# A message's id as the task receives it (a string) or as the row has it.
MessageId = UUID | str


class WebhookUrlError(ValueError):
    """A URL the service will not post to; str() is a sentence for the account holder."""


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def endpoint_check_url(url: str) -> str:
    """The URL, stripped, if the address guard of downloads lets it through; else WebhookUrlError."""
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise WebhookUrlError(f"The address is longer than {MAX_URL_LENGTH} characters.")
    try:
        check_url(url, allow_private=settings.ALLOW_PRIVATE_URLS)
    except FetchError as error:
        raise WebhookUrlError(str(error)) from None
    return url


def _lock_account(account: Account) -> None:
    Account.objects.select_for_update().filter(pk=account.pk).first()  # one endpoint change at a time


@transaction.atomic
def endpoint_set(account: Account, url: str, *, by: Actor = None) -> str | None:
    """Set the account's webhook URL (re-enabling an endpoint that a 410 disabled).

    Returns the new signing secret when the endpoint is new (the only time it is shown), None
    when an existing endpoint keeps its secret. Audited as webhook_set.
    """
    url = endpoint_check_url(url)
    _lock_account(account)
    endpoint = Endpoint.objects.filter(account=account).first()
    if endpoint is None:
        secret = new_secret()
        Endpoint.objects.create(account=account, url=url, secret=secret)
        shown = f", signing secret shown to {by.get_username()}" if by is not None and by.pk != account.user_id else ""
        audit_record(account, AuditEvent.Action.WEBHOOK_SET, by=by, detail=f"Webhook URL set to {url}{shown}")
        return secret
    detail = f"Webhook URL changed from {endpoint.url} to {url}" if endpoint.url != url else f"Webhook URL {url} saved"
    if not endpoint.enabled:
        detail += " (re-enabled)"
    endpoint.url, endpoint.disabled_at, endpoint.disabled_reason = url, None, ""
    endpoint.save()
    audit_record(account, AuditEvent.Action.WEBHOOK_SET, by=by, detail=detail)
    return None


@transaction.atomic
def endpoint_rotate_secret(account: Account, *, by: Actor = None) -> str:
    """A new signing secret, returned (shown once). The one it replaces still signs for 24 h;
    one older than that stops at once. Raises Endpoint.DoesNotExist. Audited as webhook_rotated."""
    _lock_account(account)
    endpoint = Endpoint.objects.get(account=account)
    secret = new_secret()
    endpoint.previous_secret, endpoint.previous_secret_until = endpoint.secret, timezone.now() + SECRET_OVERLAP
    endpoint.secret = secret
    endpoint.save()
    audit_record(
        account,
        AuditEvent.Action.WEBHOOK_ROTATED,
        by=by,
        detail=f"Signing secret {endpoint.previous_secret[:10]}… replaced by {secret[:10]}… (both sign for 24 h)"
        + (f", shown to {by.get_username()}" if by is not None and by.pk != account.user_id else ""),
    )
    return secret


@transaction.atomic
def endpoint_remove(account: Account, *, by: Actor = None) -> bool:
    """Delete the account's endpoint; events not delivered yet end undelivered. Returns whether
    there was one (only then is it audited, as webhook_removed)."""
    _lock_account(account)
    endpoint = Endpoint.objects.filter(account=account).first()
    if endpoint is None:
        return False
    endpoint.messages.filter(state=Message.State.PENDING).update(
        state=Message.State.FAILED,
        error="The webhook was removed.",
        next_attempt_at=None,
    )
    endpoint.delete()
    audit_record(account, AuditEvent.Action.WEBHOOK_REMOVED, by=by, detail=f"Webhook {endpoint.url} removed")
    return True


# --- recording events (inside the transaction that ends a job) ----------------------------------


def _timestamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def job_event_data(job: Job) -> dict[str, Any]:
    """The job as GET /v1/api/transcription/{id} answers it, without the whole texts, links absolute."""
    document = with_links(job_document(job, with_text=False), None)
    for name in TEXT_FIELDS:
        del document[name]
    for translation in document["translations"]:
        del translation["srt"], translation["webvtt"]
    return document


def _queue(message_id: MessageId, countdown: float = 0) -> None:
    # Sent by name (the task routes put it on `hooks`), so the services never import the tasks.
    current_app.send_task(DELIVER_TASK, (str(message_id),), countdown=countdown)


def _record(endpoint: Endpoint, event_type: str, data: dict[str, Any], **about: Job | Batch) -> Message:
    now = timezone.now()
    body = json.dumps({"type": event_type, "timestamp": _timestamp(now), "data": data}, separators=(",", ":"))
    message = Message.objects.create(
        account_id=endpoint.account_id,
        endpoint=endpoint,
        event_type=event_type,
        body=body,
        next_attempt_at=now,
        queued_at=now,
        **about,
    )
    # robust: a broker that is down must not undo the job's end; the sweep sends it later.
    transaction.on_commit(lambda: _queue(message.id), robust=True)
    return message


def _batch_ended(batch_id: UUID) -> Batch | None:
    """The batch, if every one of its jobs has ended, else None.

    The caller has just written its own job's end. Locking the batch row first makes the jobs of
    one batch that end at the same moment pass here one after the other: under READ COMMITTED the
    query after the lock sees every job ended by a transaction that held the lock before, so the
    last one to end sees them all ended, and only the last one does.
    """
    batch = Batch.objects.select_for_update().get(pk=batch_id)
    if Job.objects.filter(batch_id=batch_id).exclude(state__in=states.FINAL_STATES).exists():
        return None
    return batch


def message_record_job_end(job: Job, **signal: object) -> None:
    """Record job.done or job.failed for a job that has just ended, and batch.done when it was the
    last of its batch to end. Receives transcription.events.signals.job_ended, inside the transaction that
    ends the job."""
    endpoint = Endpoint.objects.filter(account_id=job.account_id, disabled_at__isnull=True).first()
    if endpoint is None:
        return
    event_type = Message.EventType.JOB_DONE if job.state == states.DONE else Message.EventType.JOB_FAILED
    _record(endpoint, event_type, job_event_data(job), job=job)
    if job.batch_id is not None:
        batch = _batch_ended(job.batch_id)
        if batch is not None:
            _record(endpoint, Message.EventType.BATCH_DONE, batch_payload(batch, None), batch=batch)


# --- delivery -------------------------------------------------------------------------------------


def signed_headers(message: Message, signing_secrets: list[str], now: datetime) -> dict[str, str]:
    """Standard Webhooks headers: the message id (the same in every attempt), the time of this
    attempt, and one `v1,` signature per secret in use (two during a rotation)."""
    moment = datetime.fromtimestamp(math.floor(now.timestamp()), UTC)
    signatures = " ".join(Webhook(secret).sign(message.webhook_id, moment, message.body) for secret in signing_secrets)
    return {
        "content-type": "application/json",
        "webhook-id": message.webhook_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": signatures,
    }


def _claim_seconds() -> float:
    """How long a delivery may hold its message: twice the request's own limit, leaving room for
    the name lookup (which that limit does not cover) and for recording the attempt."""
    request_limit: float = settings.WEBHOOK_TIMEOUT_SECONDS
    return 2 * request_limit + 1


def message_deliver(message_id: MessageId) -> Attempt | None:
    """Post a message that is due and that no other worker holds; record the attempt and what
    follows from it. Returns the attempt, or None when there was nothing to do."""
    now = timezone.now()
    held = now + timedelta(seconds=_claim_seconds())
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    due = Message.objects.filter(free, pk=message_id, state=Message.State.PENDING, next_attempt_at__lte=now)
    if not due.update(claimed_until=held):
        return None
    message = Message.objects.select_related("endpoint").get(pk=message_id)
    endpoint = message.endpoint
    if endpoint is None or not endpoint.enabled:
        Message.objects.filter(pk=message_id, claimed_until=held).update(
            state=Message.State.FAILED,
            next_attempt_at=None,
            claimed_until=None,
            error="The webhook was removed." if endpoint is None else "The webhook is disabled.",
        )
        return None
    started = timezone.now()
    answer = delivery.post(
        endpoint.url,
        message.body.encode(),
        signed_headers(message, endpoint.signing_secrets(started), started),
        allow_private=settings.ALLOW_PRIVATE_URLS,
        timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
    )
    return _attempt_record(message_id, held, endpoint.url, started, answer)


@transaction.atomic
def _attempt_record(
    message_id: MessageId, held: datetime, url: str, started: datetime, answer: delivery.ReceiverAnswer
) -> Attempt:
    message = Message.objects.select_for_update(of=("self",)).select_related("endpoint").get(pk=message_id)
    attempt = Attempt.objects.create(
        message=message,
        number=message.attempts.count() + 1,
        url=url,
        started_at=started,
        duration_ms=round(answer.seconds * 1000),
        status_code=answer.status,
        error=answer.error,
        response_excerpt=answer.excerpt,
    )
    if message.claimed_until != held or message.state != Message.State.PENDING:
        # This worker stalled past its claim and the sweep gave the message to another, or the
        # webhook was removed meanwhile: the attempt happened and is recorded, nothing follows.
        return attempt
    message.claimed_until = None
    now = timezone.now()
    schedule = settings.WEBHOOK_RETRY_SECONDS
    if answer.delivered:
        message.state, message.delivered_at, message.next_attempt_at, message.error = (
            Message.State.DELIVERED,
            now,
            None,
            "",
        )
    elif answer.status == 410:
        reason = f"The receiver answered 410 Gone at {_timestamp(now)}: webhook disabled."
        message.state, message.next_attempt_at, message.error = Message.State.FAILED, None, reason
        if message.endpoint is not None:
            _endpoint_disable(message.endpoint, reason, now)
    elif attempt.number > len(schedule):
        message.state, message.next_attempt_at = Message.State.FAILED, None
        message.error = f"Not delivered after {attempt.number} attempts; the last: {attempt.outcome}"
    else:
        delay = schedule[attempt.number - 1]
        message.next_attempt_at = now + timedelta(seconds=delay)
        message.queued_at = now if delay <= QUEUE_AHEAD_SECONDS else None
        if message.queued_at:
            transaction.on_commit(lambda: _queue(message_id, delay), robust=True)
    message.save()
    return attempt


def _endpoint_disable(endpoint: Endpoint, reason: str, now: datetime) -> None:
    """A 410 says the receiver is gone for good: stop sending it anything until the URL is saved again."""
    endpoint.disabled_at, endpoint.disabled_reason = now, reason
    endpoint.save(update_fields=["disabled_at", "disabled_reason", "updated_at"])
    endpoint.messages.filter(state=Message.State.PENDING).update(
        state=Message.State.FAILED,
        next_attempt_at=None,
        error="The webhook was disabled (410 Gone) before it was sent.",
    )
    logger.info("webhook of account %s disabled: %s", endpoint.account_id, reason)


def messages_sweep(now: datetime | None = None) -> dict[str, list[UUID]]:
    """Send again every due message that no live worker holds and whose task is gone.

    - `requeued`: a worker claimed it and its claim lapsed (the worker died mid-delivery);
    - `queued`: a retry due now that was too far ahead to be queued when it was scheduled, or a
      message whose task has been in the broker for RESEND_LOST_AFTER without being taken (lost,
      e.g. Redis restarted without persistence).
    A message sent twice is harmless: the second task finds it claimed or delivered and stops.
    """
    now = now or timezone.now()
    due = Message.objects.filter(state=Message.State.PENDING, next_attempt_at__lte=now).only(
        "id", "claimed_until", "queued_at"
    )
    requeued: list[UUID] = []
    queued: list[UUID] = []
    for message in due.filter(claimed_until__lt=now)[:1000]:
        if Message.objects.filter(pk=message.id, claimed_until=message.claimed_until).update(
            claimed_until=None, queued_at=now
        ):
            _queue(message.id)
            requeued.append(message.id)
    lost = Q(queued_at__isnull=True) | Q(queued_at__lt=now - RESEND_LOST_AFTER)
    for message in due.filter(lost, claimed_until__isnull=True)[:1000]:
        if Message.objects.filter(pk=message.id, claimed_until__isnull=True, queued_at=message.queued_at).update(
            queued_at=now
        ):
            _queue(message.id)
            queued.append(message.id)
    return {"requeued": requeued, "queued": queued}


@transaction.atomic
def message_resend(message_id: MessageId, *, by: Actor = None) -> Message:
    """Send an event again now, with the same webhook-id and body (support's "send again"), to the
    account's webhook as it is now. It gets one more attempt, and retries after it while the
    schedule has attempts left. Raises ValueError when the account has no enabled webhook.
    Audited as webhook_resent."""
    message = Message.objects.select_for_update().get(pk=message_id)
    endpoint = Endpoint.objects.filter(account_id=message.account_id).first()
    if endpoint is None or not endpoint.enabled:
        raise ValueError("The account has no enabled webhook; save its URL first.")
    now = timezone.now()
    message.endpoint, message.state, message.error, message.delivered_at = endpoint, Message.State.PENDING, "", None
    message.next_attempt_at = message.queued_at = now
    message.save()
    audit_record(
        message.account,
        AuditEvent.Action.WEBHOOK_RESENT,
        by=by,
        detail=f"Event {message.event_type} {message.webhook_id} sent again",
    )
    transaction.on_commit(lambda: _queue(message.id), robust=True)
    return message
