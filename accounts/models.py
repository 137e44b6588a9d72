from django.conf import settings
from django.db import models


class Account(models.Model):
    """A paying customer: one login (Django user), one API token, one minute balance."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="account")
    plan = models.ForeignKey("billing.Plan", null=True, blank=True, on_delete=models.PROTECT, related_name="accounts")
    renews_on = models.DateField(null=True, blank=True, help_text="Next date the plan's monthly minutes are granted.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.email

    @property
    def email(self) -> str:
        return self.user.email


class ApiToken(models.Model):
    """The account's one API token. Only a SHA-256 digest is stored; the token is shown once."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="api_token")
    prefix = models.CharField(max_length=16, help_text="First characters of the token, for recognising it.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.prefix}…"


class AuditEvent(models.Model):
    """Who did what to an account: token and webhook changes, staff grants, job retries and cancellations.

    Written by the services (accounts.services, billing.services, transcription.services), never
    edited; the admin shows them read-only. `actor` is empty for changes made outside a person's
    session (a management command).
    """

    class Action(models.TextChoices):
        TOKEN_ISSUED = "token_issued", "Token issued"
        TOKEN_REPLACED = "token_replaced", "Token replaced"
        TOKEN_REVOKED = "token_revoked", "Token revoked"
        MINUTES_GRANTED = "minutes_granted", "Minutes granted"
        JOB_RETRIED = "job_retried", "Job retried"
        JOB_CANCELLED = "job_cancelled", "Job cancelled"
        WEBHOOK_SET = "webhook_set", "Webhook URL set"
        WEBHOOK_ROTATED = "webhook_rotated", "Webhook secret rotated"
        WEBHOOK_REMOVED = "webhook_removed", "Webhook removed"
        WEBHOOK_RESENT = "webhook_resent", "Webhook event sent again"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="audit_events")
    action = models.CharField(max_length=20, choices=Action.choices)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.get_action_display()} for {self.account_id}"
