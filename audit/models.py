from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """Who did what to an account: token and webhook changes, staff grants, job retries and cancellations.

    Written by the services of every app through audit.services.audit_record, never edited; the
    admin shows them read-only. `actor` is empty for changes made outside a person's session (a
    management command). The table keeps the name it had when the model lived in accounts.
    """

    class Action(models.TextChoices):
        TOKEN_ISSUED = "token_issued", "Token issued"
        TOKEN_REPLACED = "token_replaced", "Token replaced"
        TOKEN_REVOKED = "token_revoked", "Token revoked"
        MINUTES_GRANTED = "minutes_granted", "Minutes granted"
        PLAN_CHANGED = "plan_changed", "Plan changed"
        RENEWAL_DATE_CHANGED = "renewal_changed", "Renewal date changed"
        PLAN_RENEWED = "plan_renewed", "Plan renewed"
        JOB_RETRIED = "job_retried", "Job retried"
        JOB_CANCELLED = "job_cancelled", "Job cancelled"
        WEBHOOK_SET = "webhook_set", "Webhook URL set"
        WEBHOOK_ROTATED = "webhook_rotated", "Webhook secret rotated"
        WEBHOOK_REMOVED = "webhook_removed", "Webhook removed"
        WEBHOOK_RESENT = "webhook_resent", "Webhook event sent again"
        ACCOUNT_DEACTIVATED = "deactivated", "Account deactivated"
        ACCOUNT_REACTIVATED = "reactivated", "Account reactivated"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="audit_events")
    action = models.CharField(max_length=20, choices=Action.choices)
    detail = models.TextField(blank=True)
    # Minutes a staff change lets the plan renewals grant (a plan assigned, a renewal date brought
    # forward, a plan's minutes raised): they count in the person's daily grant total with their
    # direct grants (billing.limits).
    minutes = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "accounts_auditevent"
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.get_action_display()} for {self.account_id}"
