import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Plan(models.Model):
    name = models.CharField(max_length=100, unique=True)
    monthly_minutes = models.PositiveIntegerField()
    active = models.BooleanField(default=True)
    storage_bytes = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Bytes of uploads an account on this plan may keep at once (the sum of its live uploads). "
        "Empty: one largest upload (UPLOAD_MAX_BYTES), as for an account without a plan.",
    )
    live_streams = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Live streams (/v1/realtime) an account on this plan may hold open at once. "
        "Empty: LIVE_STREAMS_PER_ACCOUNT, as for an account without a plan.",
    )

    def __str__(self):
        return self.name


class AppendOnlyError(Exception):
    pass


class LiveStream(models.Model):
    """The minutes of one live stream (a socket of /v1/realtime), from its opening to its one ledger
    entry. While it runs, `held` seconds of the account's balance are set aside for it (the balance
    selector subtracts them: billing.selectors.account_balance), `seconds` is the whole seconds of
    audio it had received at the last report; settling writes one charge of those seconds (at most
    what was held) and marks it settled, under the account's row lock, once (docs/decisions/live.md)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="live_streams")
    seconds = models.PositiveIntegerField(default=0, help_text="Whole seconds of audio received so far.")
    held = models.PositiveIntegerField(default=0, help_text="Seconds of balance set aside while it runs.")
    started_at = models.DateTimeField(auto_now_add=True)
    touched_at = models.DateTimeField(default=timezone.now, help_text="Its door's last report.")
    settled_at = models.DateTimeField(null=True, blank=True)
    ended = models.CharField(max_length=200, blank=True, help_text="Why it ended.")
    # The job its recording became (issue 52: kept like any other job, unless the session said not
    # to): paid for by this stream, so the job itself is never charged (services.ledger_charge).
    job = models.OneToOneField(
        "transcription.Job",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="live_stream",
        help_text="The job made from the stream's recording, prepaid by the stream.",
    )

    class Meta:
        indexes = [models.Index(fields=["account", "settled_at"], name="live_streams_open")]

    def __str__(self):
        return f"live stream {self.id} ({self.seconds} s)"


class LedgerEntry(models.Model):
    """One movement of an account's minutes, in seconds of video. Never edited, never deleted.

    The balance is the sum of `seconds`: grants and refunds are positive, charges negative.
    """

    class Kind(models.TextChoices):
        GRANT = "grant"
        CHARGE = "charge"
        REFUND = "refund"

    class Source(models.TextChoices):
        SIGNUP = "signup", "Sign-up allowance"
        PLAN = "plan", "Plan renewal"
        STAFF = "staff", "Staff grant"
        JOB = "job", "Job"
        TRANSLATION = "translation", "Translation"
        # The difference between the charge from the file's header and the length decoded (issue 41)
        LENGTH = "length", "Measured length"
        # A done job's work made again on request (issue 46): translations of the cues an edit
        # changed, and burned videos drawn again from the edited subtitles
        RETRANSLATION = "retranslate", "Retranslation of an edit"
        REBURN = "reburn", "Burned again"
        # A live stream's audio (/v1/realtime, issue 52): one entry per stream, at its end
        LIVE = "live", "Live stream"

    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="ledger")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    source = models.CharField(max_length=12, choices=Source.choices)
    seconds = models.IntegerField()
    reason = models.CharField(max_length=300, blank=True)
    job = models.ForeignKey("transcription.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="ledger")
    translation = models.ForeignKey(
        "transcription.Translation", null=True, blank=True, on_delete=models.PROTECT, related_name="ledger"
    )
    live_stream = models.ForeignKey(LiveStream, null=True, blank=True, on_delete=models.PROTECT, related_name="ledger")
    period = models.DateField(null=True, blank=True, help_text="Renewal date a plan grant belongs to.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "ledger entries"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["job"], condition=Q(kind="charge", source="job"), name="one_charge_per_job"
            ),
            models.UniqueConstraint(
                fields=["job"], condition=Q(kind="refund", source="job"), name="one_refund_per_job"
            ),
            models.UniqueConstraint(fields=["job"], condition=Q(source="length"), name="one_settlement_per_job"),
            models.UniqueConstraint(
                fields=["translation"], condition=Q(kind="refund"), name="one_refund_per_translation"
            ),
            models.UniqueConstraint(fields=["live_stream"], name="one_entry_per_live_stream"),
            models.UniqueConstraint(
                fields=["account", "period"], condition=Q(source="plan"), name="one_plan_grant_per_period"
            ),
            models.CheckConstraint(
                condition=Q(kind="charge", seconds__lte=0) | Q(kind__in=["grant", "refund"], seconds__gte=0),
                name="ledger_sign_matches_kind",
            ),
        ]

    def __str__(self):
        return f"{self.kind} {self.seconds:+d}s"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise AppendOnlyError("Ledger entries are never edited.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Ledger entries are never deleted.")
