"""An account's webhook endpoint, the events waiting for it (the outbox) and every delivery attempt.

Written only by webhooks.services.
"""

import uuid

from django.db import models


class Endpoint(models.Model):
    """Where an account's events go, and the secrets that sign them (Standard Webhooks, `whsec_…`).

    The secret is kept as it is (it must be, to sign) and shown to the account holder once. After a
    rotation the previous secret signs too until `previous_secret_until`, so a receiver can switch
    without losing an event.
    """

    account = models.OneToOneField("accounts.Account", on_delete=models.CASCADE, related_name="webhook_endpoint")
    url = models.URLField(max_length=2048)
    secret = models.CharField(max_length=100)
    previous_secret = models.CharField(max_length=100, blank=True)
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True, help_text="Set when the receiver answered 410 Gone.")
    disabled_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return self.url

    @property
    def enabled(self) -> bool:
        return self.disabled_at is None

    @property
    def secret_prefix(self) -> str:
        """Enough of the secret to tell which one a receiver holds, not enough to sign."""
        return f"{self.secret[:10]}…"

    def signing_secrets(self, now) -> list[str]:
        if self.previous_secret and self.previous_secret_until and now < self.previous_secret_until:
            return [self.secret, self.previous_secret]
        return [self.secret]


class Message(models.Model):
    """One event for one endpoint. Its id is the `webhook-id` of every attempt to deliver it."""

    class EventType(models.TextChoices):
        JOB_DONE = "job.done"
        JOB_FAILED = "job.failed"
        BATCH_DONE = "batch.done"

    class State(models.TextChoices):
        PENDING = "pending", "Being delivered"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Not delivered"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="webhook_messages")
    endpoint = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    event_type = models.CharField(max_length=20, choices=EventType.choices)
    job = models.ForeignKey(
        "transcription.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="webhook_messages"
    )
    batch = models.ForeignKey(
        "transcription.Batch", null=True, blank=True, on_delete=models.PROTECT, related_name="webhook_messages"
    )
    body = models.TextField(help_text="The JSON sent, byte for byte the same in every attempt.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    error = models.TextField(blank=True, help_text="Why it was not delivered.")
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True, help_text="When its delivery task was last sent.")
    # Set while a worker posts it; a lapsed claim means that worker died mid-delivery.
    claimed_until = models.DateTimeField(null=True, blank=True, editable=False)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self):
        return f"{self.event_type} {self.webhook_id}"

    @property
    def webhook_id(self) -> str:
        return f"msg_{self.id.hex}"


class Attempt(models.Model):
    """One POST of a message and what came back."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    url = models.URLField(max_length=2048)
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="What went wrong when there was no 2xx answer.")
    response_excerpt = models.TextField(blank=True, help_text="The start of the receiver's answer.")

    class Meta:
        ordering = ["message", "number"]

    def __str__(self):
        return f"attempt {self.number}: {self.outcome}"

    @property
    def outcome(self) -> str:
        if self.status_code is None:
            return self.error
        return f"HTTP {self.status_code}" + (f": {self.error}" if self.error else "")
