"""Charges for work on a done job made again on request (issue 46): the translations of the cues
an edit changed, and burned videos drawn again from the edited subtitles. Apart from services.py,
whose charges are a job's one charge from POST to its end (one per job, by a unique constraint):
these come any number of times in a job's later life, each its own entry, named by its source.

The checks are a job's: the account row is locked, so two requests never spend the same minute,
and a cost above the balance is refused with the figures (nothing is charged; there is no preview
of a retranslation or of a burn).
"""

from __future__ import annotations

from django.db import transaction

from accounts.models import Account

from . import pricing
from .models import LedgerEntry
from .selectors import account_balance
from .services import ChargeResult

SOURCES = (LedgerEntry.Source.RETRANSLATION, LedgerEntry.Source.REBURN)


def rework_charge(account_id: int, job_id, seconds: int, *, source: str, reason: str, what: str) -> ChargeResult:
    """Charge `seconds` for `job_id`'s rework (`source`: one of SOURCES), or refuse when the balance
    does not cover it: ChargeResult(ok=False, error="Not enough minutes: `what` needs …").
    Call inside the transaction that records the work, so a refused or undone work charges nothing."""
    if source not in SOURCES:
        raise ValueError(f"{source!r} is not a rework's source.")
    with transaction.atomic():
        Account.objects.select_for_update().get(pk=account_id)
        balance = account_balance(account_id)
        if seconds > balance:
            return ChargeResult(
                ok=False,
                error=(
                    f"Not enough minutes: {what} needs {pricing.format_minutes(seconds)} "
                    f"and the account has {pricing.format_minutes(max(balance, 0))} left."
                ),
            )
        if seconds > 0:
            LedgerEntry.objects.create(
                account_id=account_id,
                kind=LedgerEntry.Kind.CHARGE,
                source=source,
                seconds=-seconds,
                job_id=job_id,
                reason=reason[:300],
            )
        return ChargeResult(ok=True, charged_seconds=seconds)


def rework_refund(account_id: int, job_id, seconds: int, *, source: str, reason: str) -> LedgerEntry | None:
    """Give back `seconds` of a rework that could not be made. The caller refunds once: it ends the
    work under a row lock, and only the call that ends it refunds."""
    if source not in SOURCES:
        raise ValueError(f"{source!r} is not a rework's source.")
    if seconds <= 0:
        return None
    return LedgerEntry.objects.create(
        account_id=account_id,
        kind=LedgerEntry.Kind.REFUND,
        source=source,
        seconds=seconds,
        job_id=job_id,
        reason=reason[:300],
    )
