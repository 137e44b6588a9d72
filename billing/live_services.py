"""Writes to the ledger for live streams (/v1/realtime, issue 52): one entry per stream, settled at
its end. While a stream runs, its LiveStream row holds the seconds paid for so far (the balance
counts them as spent: billing.selectors.account_balance); its end writes them as one LedgerEntry. The job its recording becomes (LiveStream.job) is prepaid:
services.ledger_charge charges it nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Account

from . import pricing
from .models import LedgerEntry, LiveStream
from .selectors import account_balance


class LiveRefused(Exception):
    """A live stream refused at its opening, or stopped: `code` is "too_many_streams" (the plan's
    cap of streams at once) or "no_minutes" (the balance pays for no more audio)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def live_open(account_id: int, default_cap: int, stale_before: datetime) -> LiveStream:
    """A new live stream of the account, or LiveRefused: over its cap of streams at once
    (Plan.live_streams, `default_cap` without one), or no minutes left. Streams whose door stopped
    reporting before `stale_before` (a web process that died) are settled first, at what they last
    reported, so they neither count against the cap nor hold the balance."""
    with transaction.atomic():
        account = Account.objects.select_for_update(of=("self",)).select_related("plan").get(pk=account_id)
        for stale in LiveStream.objects.filter(
            account_id=account_id, settled_at__isnull=True, touched_at__lt=stale_before
        ).values_list("pk", flat=True):
            live_settle(stale, None, "its door stopped reporting")
        cap = default_cap
        if account.plan is not None and account.plan.live_streams is not None:
            cap = account.plan.live_streams
        running = LiveStream.objects.filter(account_id=account_id, settled_at__isnull=True).count()
        if running >= cap:
            raise LiveRefused(
                "too_many_streams",
                f"This account already has {running} live stream{'s' if running != 1 else ''} open, "
                f"the most it may hold at once ({cap}). Close one first.",
            )
        if pricing.live_seconds(account_balance(account_id)) < 1:
            raise LiveRefused("no_minutes", "Not enough minutes: the account has none left for live audio.")
        return LiveStream.objects.create(account_id=account_id)


def _live_locked(stream_id: Any) -> LiveStream:
    """The stream's row, locked after its account's (the order every write of minutes locks in)."""
    account_id = LiveStream.objects.values_list("account_id", flat=True).get(pk=stream_id)
    Account.objects.select_for_update().get(pk=account_id)
    return LiveStream.objects.select_for_update().get(pk=stream_id)


def live_keep(stream_id: Any, job_id: Any) -> None:
    """The job the stream's recording becomes: prepaid by the stream (ledger_charge charges it
    nothing), so the stream's one entry is all its audio ever costs."""
    LiveStream.objects.filter(pk=stream_id, job__isnull=True).update(job_id=job_id)


def live_hold(stream_id: Any, seconds: int, ahead: int) -> int:
    """Report that the stream has received `seconds` whole seconds of audio, and set aside balance
    for them and up to `ahead` more (so the door asks again only every few seconds). Answers the
    seconds now held: fewer than `seconds` when the balance ran out (the door stops the stream
    there). The balance never goes below zero: only what it has is held."""
    with transaction.atomic():
        stream = _live_locked(stream_id)
        if stream.settled_at is not None:
            return 0
        available = pricing.live_seconds(account_balance(stream.account_id)) + stream.held
        stream.held = max(stream.held, min(seconds + ahead, available))
        stream.seconds = max(stream.seconds, min(seconds, stream.held))
        stream.touched_at = timezone.now()
        stream.save(update_fields=["held", "seconds", "touched_at"])
        return stream.held


def live_settle(stream_id: Any, seconds: int | None, reason: str) -> LedgerEntry | None:
    """End the stream: one charge for its `seconds` of audio (None: what it last reported), at most
    what it held, and its hold released. Once: a stream already settled answers its entry again
    (a second settle, from a door and the sweeper both, charges nothing). None when it cost nothing."""
    with transaction.atomic():
        stream = _live_locked(stream_id)
        if stream.settled_at is not None:
            return LedgerEntry.objects.filter(live_stream_id=stream.pk).first()
        used = min(stream.seconds if seconds is None else seconds, stream.held)
        stream.seconds, stream.held = used, 0
        stream.settled_at = timezone.now()
        stream.ended = reason[:200]
        stream.save(update_fields=["seconds", "held", "settled_at", "ended"])
        cost = pricing.live_cost(used)
        if cost <= 0:
            return None
        return LedgerEntry.objects.create(
            account_id=stream.account_id,
            kind=LedgerEntry.Kind.CHARGE,
            source=LedgerEntry.Source.LIVE,
            seconds=-cost,
            live_stream=stream,
            reason=f"live stream of {used} s ({reason})"[:300],
        )


def live_stale_after_seconds(idle_timeout: float) -> float:
    """How long a stream's door may go without reporting before the stream counts as lost: twice
    the socket's idle timeout, two minutes at least (a door reports every 20 s while it runs)."""
    return max(120.0, 2 * idle_timeout)


def live_settle_stale(stale_before: datetime) -> int:
    """Settle every stream whose door stopped reporting before `stale_before` (the sweeper's)."""
    stale = LiveStream.objects.filter(settled_at__isnull=True, touched_at__lt=stale_before)
    ids = list(stale.values_list("pk", flat=True))
    for stream_id in ids:
        live_settle(stream_id, None, "its door stopped reporting")
    return len(ids)
