from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Sum

from . import pricing
from .models import LedgerEntry, LiveStream


def account_balance(account_id) -> int:
    """Seconds left: the sum of the account's ledger, less what its running live streams hold."""
    ledger = LedgerEntry.objects.filter(account_id=account_id).aggregate(total=Sum("seconds"))["total"] or 0
    return ledger - live_held(account_id)


def live_held(account_id) -> int:
    """Seconds of balance the account's live streams set aside while they run (none settled yet)."""
    open_streams = LiveStream.objects.filter(account_id=account_id, settled_at__isnull=True)
    return open_streams.aggregate(total=Sum("held"))["total"] or 0


@dataclass(frozen=True)
class Quote:
    """What a set of videos would cost an account, against what it has (seconds of balance)."""

    needed_seconds: int
    remaining_seconds: int

    @property
    def fits(self) -> bool:
        return self.needed_seconds <= self.remaining_seconds


def quote(
    account_id,
    durations: Iterable[int],
    job_type: str,
    quality: str = "default",
    target_languages: Iterable[str] | None = None,
) -> Quote:
    """The quote for queuing videos of these lengths (whole seconds) as jobs of one kind: the one
    rule behind the playlist preview, for every front door (REST, MCP). Target languages count
    only where the job type translates (pricing.translation_multiplier)."""
    translations = len(list(target_languages or []))
    return Quote(
        needed_seconds=pricing.playlist_cost(durations, job_type, quality, translations),
        remaining_seconds=account_balance(account_id),
    )


def charged_seconds(job_ids: Iterable) -> dict:
    """Seconds each job has cost so far (charges less refunds), by job id; jobs never charged are
    left out (they found no minutes, or have not reached `preparing` yet)."""
    rows = (
        LedgerEntry.objects.filter(
            job_id__in=list(job_ids), kind__in=[LedgerEntry.Kind.CHARGE, LedgerEntry.Kind.REFUND]
        )
        .values("job_id")
        .annotate(total=Sum("seconds"))
    )
    return {row["job_id"]: -row["total"] for row in rows}
