"""Writes to the ledger. Every movement of minutes goes through here.

Charging locks the account row, so two jobs of one account are charged one after the other and
can never spend the same minute; the database's unique constraints make a retried charge or
refund a no-op instead of a second entry.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Account
from audit.models import AuditEvent
from audit.services import Actor, audit_record, person

from . import pricing
from .limits import check_grant_limits
from .models import LedgerEntry, LiveStream, Plan
from .selectors import account_balance


def grant_signup_minutes(account: Account, minutes: int) -> LedgerEntry:
    return LedgerEntry.objects.create(
        account=account,
        kind=LedgerEntry.Kind.GRANT,
        source=LedgerEntry.Source.SIGNUP,
        seconds=minutes * 60,
        reason="Sign-up allowance",
    )


def grant_staff_minutes(account: Account, minutes: int, *, reason: str, by: Actor = None) -> LedgerEntry:
    """Staff's grant of `minutes`, with a reason; recorded as created by `by` and audited (the
    holder is told by mail: audit.notices). Raises ValueError, GrantNeedsSuperuser above a
    support user's limits."""
    if minutes <= 0:
        raise ValueError("A grant must be a positive number of minutes.")
    if not reason.strip():
        raise ValueError("A staff grant needs a reason.")
    if len(reason.strip()) > 300:
        raise ValueError("A reason is at most 300 characters.")
    with transaction.atomic():
        check_grant_limits(minutes, by)
        entry = LedgerEntry.objects.create(
            account=account,
            kind=LedgerEntry.Kind.GRANT,
            source=LedgerEntry.Source.STAFF,
            seconds=minutes * 60,
            reason=reason.strip(),
            created_by=person(by),
        )
        audit_record(
            account,
            AuditEvent.Action.MINUTES_GRANTED,
            by=by,
            detail=f"{minutes} minute{'s' if minutes != 1 else ''}: {reason.strip()}",
        )
    return entry


def grant_plan_minutes(account: Account, period: date) -> LedgerEntry | None:
    """The plan's monthly minutes for the period starting on `period`; None if already granted.

    The entry names the plan, the period and who assigned the plan (also its `created_by`), so a
    grant can always be traced back to a person's decision."""
    plan = account.plan
    if plan is None:
        raise ValueError("Only an account with a plan gets its monthly minutes.")
    assigned = ""
    if account.plan_assigned_on:
        by = (
            f" by {account.plan_assigned_by.email or account.plan_assigned_by.username}"
            if account.plan_assigned_by
            else ""
        )
        assigned = f" (plan assigned {account.plan_assigned_on.isoformat()}{by})"
    try:
        with transaction.atomic():
            return LedgerEntry.objects.create(
                account=account,
                kind=LedgerEntry.Kind.GRANT,
                source=LedgerEntry.Source.PLAN,
                seconds=plan.monthly_minutes * 60,
                period=period,
                reason=f"{plan.name} plan renewal: {plan.monthly_minutes} minutes for the period from "
                f"{period.isoformat()}{assigned}"[:300],
                created_by=account.plan_assigned_by,
            )
    except IntegrityError:
        return None


def _plan_label(plan: Plan | None) -> str:
    return f"{plan.name} ({plan.monthly_minutes} min/month)" if plan else "no plan"


def _plan_change_minutes(current: Account, plan: Plan | None, renews_on: date | None) -> int:
    """The minutes a change of an account's plan or renewal date lets the renewals grant, counted
    as a grant of the person who makes it (billing.limits): a new plan's first period, or one
    period of the plan when its renewal date comes forward (each such move brings a period
    forward). A later date, no plan or an inactive plan adds nothing."""
    if plan is None or not plan.active:
        return 0
    if plan != current.plan:
        return plan.monthly_minutes
    if renews_on is not None and (current.renews_on is None or renews_on < current.renews_on):
        return plan.monthly_minutes
    return 0


def plan_change_check(account: Account, *, plan: Plan | None, renews_on: date | None, by: Actor = None) -> None:
    """The admin form's early answer (GrantNeedsSuperuser) to what plan_change would refuse."""
    current = Account.objects.select_related("plan").get(pk=account.pk)
    check_grant_limits(_plan_change_minutes(current, plan, renews_on), by, lock=False)


def plan_change(
    account: Account, *, plan: Plan | None, renews_on: date | None, by: Actor = None, today: date | None = None
) -> list[AuditEvent]:
    """Set the account's plan and next renewal date, as staff asked; every change is audited
    (who, before, after) and mailed to the holder. A new plan is assigned as of today: renewals
    never grant a period that began before it. A renewal date in the past is refused (ValueError):
    it would grant periods nobody paid for. What the change lets renewals grant is bounded like a
    grant (GrantNeedsSuperuser; billing.limits). Returns the audit events written (none if nothing
    changed)."""
    today = today or timezone.localdate()
    with transaction.atomic():
        current = Account.objects.select_for_update(of=("self",)).select_related("plan").get(pk=account.pk)
        if renews_on != current.renews_on and renews_on is not None and renews_on < today:
            raise ValueError(f"The renewal date cannot be in the past (today is {today.isoformat()}).")
        if plan is not None and renews_on is None:
            raise ValueError("An account with a plan needs a renewal date.")
        minutes = _plan_change_minutes(current, plan, renews_on)
        check_grant_limits(minutes, by)
        events = []
        if plan != current.plan:
            events.append(
                audit_record(
                    current,
                    AuditEvent.Action.PLAN_CHANGED,
                    by=by,
                    detail=f"Plan: {_plan_label(current.plan)} → {_plan_label(plan)}",
                    minutes=minutes,
                )
            )
            current.plan = plan
            current.plan_assigned_on = today if plan else None
            current.plan_assigned_by = person(by) if plan else None
        if renews_on != current.renews_on:
            before = current.renews_on.isoformat() if current.renews_on else "none"
            after = renews_on.isoformat() if renews_on else "none"
            events.append(
                audit_record(
                    current,
                    AuditEvent.Action.RENEWAL_DATE_CHANGED,
                    by=by,
                    detail=f"Renewal date: {before} → {after}",
                    minutes=0 if events else minutes,  # counted once, on the change's first event
                )
            )
            current.renews_on = renews_on
        if events:
            current.save(update_fields=["plan", "renews_on", "plan_assigned_on", "plan_assigned_by"])
        account.plan, account.renews_on = current.plan, current.renews_on
        account.plan_assigned_on, account.plan_assigned_by = current.plan_assigned_on, current.plan_assigned_by
    return events


def _plan_terms(plan: Plan) -> str:
    return f"{plan.monthly_minutes} min/month" + ("" if plan.active else ", inactive")


def _plan_raise(before: Plan | None, plan: Plan) -> int:
    """What an edit adds to each renewal of an account on the plan: its minutes raised, or the
    plan made active again (an inactive plan renews nobody). A new plan reaches no account."""
    if before is None:
        return 0
    return max(0, (plan.monthly_minutes if plan.active else 0) - (before.monthly_minutes if before.active else 0))


def plan_save_check(plan: Plan, *, by: Actor = None) -> None:
    """The admin form's early answer (GrantNeedsSuperuser) to what plan_save would refuse."""
    before = Plan.objects.filter(pk=plan.pk).first() if plan.pk else None
    each = _plan_raise(before, plan)
    check_grant_limits(each, by, total=each * Account.objects.filter(plan_id=plan.pk).count(), lock=False)


def plan_save(plan: Plan, *, by: Actor = None) -> Plan:
    """Save staff's new plan or edit of one. An edit that raises what a plan's renewals grant adds
    that much to every account on it: bounded like a grant to each of them (GrantNeedsSuperuser;
    billing.limits), and audited on each account, whose holder is mailed."""
    with transaction.atomic():
        before = Plan.objects.select_for_update().filter(pk=plan.pk).first() if plan.pk else None
        accounts = list(Account.objects.filter(plan_id=plan.pk).order_by("pk")) if before else []
        each = _plan_raise(before, plan)
        check_grant_limits(each, by, total=each * len(accounts))
        plan.save()
        if before is not None and (before.monthly_minutes, before.active) != (plan.monthly_minutes, plan.active):
            for account in accounts:
                audit_record(
                    account,
                    AuditEvent.Action.PLAN_CHANGED,
                    by=by,
                    detail=f"{plan.name}: {_plan_terms(before)} → {_plan_terms(plan)}",
                    minutes=each,
                )
    return plan


class BilledJob(Protocol):
    """What the ledger reads of a transcription.models.Job. Billing never imports jobs' code, so its
    entries and lookups name the job by id."""

    @property
    def pk(self) -> Any: ...
    @property
    def account_id(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def quality(self) -> str: ...
    @property
    def duration(self) -> int | None: ...
    @property
    def is_preview(self) -> bool: ...
    @property
    def preview_minutes(self) -> int | None: ...
    @property
    def target_languages(self) -> Any: ...
    def refresh_from_db(self, using: str | None = None, fields: list[str] | None = None) -> None: ...


class BilledTranslation(Protocol):
    """What the ledger reads of a transcription.models.Translation."""

    @property
    def pk(self) -> Any: ...
    @property
    def job(self) -> BilledJob: ...


@dataclass
class ChargeResult:
    ok: bool
    charged_seconds: int = 0
    preview_minutes: int | None = None
    error: str | None = None


def _known_duration(job: BilledJob) -> int:
    """A job is priced once its duration is known (transcription.writes.services.job_charge runs after the probe)."""
    if job.duration is None:
        raise ValueError(f"Job {job.pk} has no duration yet: it cannot be priced.")
    return job.duration


def billed_seconds(job: BilledJob) -> int:
    """Seconds of video the job is billed for: the preview's length or the whole video."""
    if job.is_preview and job.preview_minutes:
        return min(job.preview_minutes * 60, _known_duration(job))
    return _known_duration(job)


def ledger_charge(job: BilledJob) -> ChargeResult:
    """The ledger's charge for a job whose `duration` is known: in full, for the whole minutes of
    a preview (ChargeResult.preview_minutes; transcription.writes.services.job_charge records them on the
    job), or not at all.

    Runs in one transaction holding the account row lock. Idempotent: a job already charged
    gets its earlier result back. A live stream's recording (LiveStream.job) was paid by its
    stream, second by second: ok, and nothing written (so nothing to settle or refund either).
    """
    translations = len(job.target_languages or [])
    with transaction.atomic():
        Account.objects.select_for_update().get(pk=job.account_id)
        job.refresh_from_db(fields=["is_preview", "preview_minutes", "duration"])
        if LiveStream.objects.filter(job_id=job.pk).exists():
            return ChargeResult(ok=True)
        existing = LedgerEntry.objects.filter(
            job_id=job.pk, kind=LedgerEntry.Kind.CHARGE, source=LedgerEntry.Source.JOB
        ).first()
        if existing is not None:
            return ChargeResult(ok=True, charged_seconds=-existing.seconds, preview_minutes=job.preview_minutes)

        duration = _known_duration(job)
        cost = pricing.job_cost(job.type, duration, job.quality, translations)
        balance = account_balance(job.account_id)
        preview_minutes = None
        if cost > balance:
            preview_minutes = pricing.affordable_minutes(balance, job.type, job.quality, translations)
            if preview_minutes < 1:
                return ChargeResult(
                    ok=False,
                    error=(
                        f"Not enough minutes: this job needs {pricing.format_minutes(cost)} "
                        f"and the account has {pricing.format_minutes(max(balance, 0))} left."
                    ),
                )
            cost = pricing.job_cost(job.type, preview_minutes * 60, job.quality, translations)
        LedgerEntry.objects.create(
            account_id=job.account_id,
            kind=LedgerEntry.Kind.CHARGE,
            source=LedgerEntry.Source.JOB,
            seconds=-cost,
            job_id=job.pk,
            reason=f"{job.type} of {duration} s" + (" (preview)" if preview_minutes else ""),
        )
        return ChargeResult(ok=True, charged_seconds=cost, preview_minutes=preview_minutes)


_PICTURE = "the video (its picture, longer than its audio)"


def ledger_settle(job: BilledJob, seconds: int, stream: str = "audio") -> ChargeResult:
    """Settle a charged job against `seconds`, the length of the audio actually decoded (whole
    seconds), where its charge came from the file's header: the difference is charged, or refunded
    when shorter, as one entry of source LENGTH whose reason names both lengths (issue 41). With
    `stream` "video", `seconds` is a burned job's picture, which runs longer than its audio and is
    encoded to its end (issue 56); the messages say so.

    When the balance cannot pay the difference, the preview rule of ledger_charge holds over what
    the job paid and the balance together: a preview of the whole minutes they cover
    (ChargeResult.preview_minutes), or, under one minute, not ok (the job fails and job_refund
    returns its charge). Idempotent: a job settled already gets ok with its preview unchanged.
    """
    translations = len(job.target_languages or [])
    with transaction.atomic():
        Account.objects.select_for_update().get(pk=job.account_id)
        job.refresh_from_db(fields=["is_preview", "preview_minutes", "duration"])
        entries = list(LedgerEntry.objects.filter(job_id=job.pk, translation__isnull=True))
        if any(e.source == LedgerEntry.Source.LENGTH for e in entries) or not any(
            e.kind == LedgerEntry.Kind.CHARGE for e in entries
        ):
            return ChargeResult(ok=True, preview_minutes=job.preview_minutes if job.is_preview else None)
        paid = -sum(e.seconds for e in entries)
        measured, read = ("the audio", "the audio decoded") if stream == "audio" else (_PICTURE, _PICTURE)
        cost = pricing.job_cost(job.type, seconds, job.quality, translations)
        balance = account_balance(job.account_id)
        preview_minutes = None
        if cost - paid > balance:
            preview_minutes = pricing.affordable_minutes(paid + balance, job.type, job.quality, translations)
            if preview_minutes < 1:
                return ChargeResult(
                    ok=False,
                    error=(
                        f"Not enough minutes: {measured} is {seconds} s long (its file said {job.duration} s), "
                        f"so this job needs {pricing.format_minutes(cost)} and the account has "
                        f"{pricing.format_minutes(max(paid + balance, 0))} for it."
                    ),
                )
            cost = pricing.job_cost(job.type, preview_minutes * 60, job.quality, translations)
        if cost != paid:
            LedgerEntry.objects.create(
                account_id=job.account_id,
                kind=LedgerEntry.Kind.CHARGE if cost > paid else LedgerEntry.Kind.REFUND,
                source=LedgerEntry.Source.LENGTH,
                seconds=paid - cost,
                job_id=job.pk,
                reason=f"{job.type}: {read} is {seconds} s long, the file said {job.duration} s"
                + (f" (preview of {preview_minutes} min)" if preview_minutes else ""),
            )
        return ChargeResult(ok=True, charged_seconds=cost - paid, preview_minutes=preview_minutes)


def job_refund(job: BilledJob, reason: str = "Job failed") -> LedgerEntry | None:
    """Return everything the job was charged and not yet refunded. None if nothing to return."""
    with transaction.atomic():
        entries = list(LedgerEntry.objects.filter(job_id=job.pk))
        charged = -sum(e.seconds for e in entries if e.kind == LedgerEntry.Kind.CHARGE)
        refunded = sum(e.seconds for e in entries if e.kind == LedgerEntry.Kind.REFUND)
        already = any(e.kind == LedgerEntry.Kind.REFUND and e.source == LedgerEntry.Source.JOB for e in entries)
        amount = charged - refunded
        if amount <= 0 or already:
            return None
        try:
            with transaction.atomic():
                return LedgerEntry.objects.create(
                    account_id=job.account_id,
                    kind=LedgerEntry.Kind.REFUND,
                    source=LedgerEntry.Source.JOB,
                    seconds=amount,
                    job_id=job.pk,
                    reason=reason[:300],
                )
        except IntegrityError:
            return None


def translation_refund(translation: BilledTranslation, reason: str = "Translation failed") -> LedgerEntry | None:
    """Return one translation's share of its job's charge. None if the job was not charged."""
    job = translation.job
    with transaction.atomic():
        if not LedgerEntry.objects.filter(job_id=job.pk, kind=LedgerEntry.Kind.CHARGE).exists():
            return None
        amount = pricing.translation_cost(job.type, billed_seconds(job), job.quality)
        if amount <= 0:
            return None
        try:
            with transaction.atomic():
                return LedgerEntry.objects.create(
                    account_id=job.account_id,
                    kind=LedgerEntry.Kind.REFUND,
                    source=LedgerEntry.Source.TRANSLATION,
                    seconds=amount,
                    job_id=job.pk,
                    translation_id=translation.pk,
                    reason=reason[:300],
                )
        except IntegrityError:
            return None


def next_period(day: date) -> date:
    """The same day next month, clamped to the month's end (Jan 31 -> Feb 28)."""
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return day.replace(year=year, month=month, day=min(day.day, calendar.monthrange(year, month)[1]))


def renew_due_plans(today: date | None = None) -> int:
    """Grant every due account its plan's monthly minutes, at most one period per account per run.

    Only periods that began on or after the day the plan was assigned are granted (a renewal date
    older than that is moved forward without a grant), so a wrong date can never mint a backlog;
    after missed runs the periods truly missed come one per run (hourly). Safe to run any number of
    times, concurrently: each (account, period) is granted once (account row lock + a unique
    constraint on the period). Each grant is audited with the next renewal date. Returns grants made.
    """
    today = today or timezone.localdate()
    granted = 0
    due = Account.objects.filter(plan__active=True, renews_on__lte=today).values_list("pk", flat=True)
    for account_id in due:
        with transaction.atomic():
            account = (
                Account.objects.select_for_update(of=("self",))
                .select_related("plan", "plan_assigned_by")
                .get(pk=account_id)
            )
            if not (account.plan and account.plan.active and account.renews_on and account.renews_on <= today):
                continue
            # Accounts given a plan before plan_assigned_on existed count from their creation.
            assigned_on = account.plan_assigned_on or timezone.localdate(account.created_at)
            while account.renews_on < assigned_on:
                account.renews_on = next_period(account.renews_on)
            if account.renews_on <= today:
                period = account.renews_on
                account.renews_on = next_period(period)
                if grant_plan_minutes(account, period) is not None:
                    granted += 1
                    audit_record(
                        account,
                        AuditEvent.Action.PLAN_RENEWED,
                        detail=f"{account.plan.name} plan: {account.plan.monthly_minutes} minutes for the period "
                        f"from {period.isoformat()}; next renewal {account.renews_on.isoformat()}",
                    )
            account.save(update_fields=["renews_on"])
    return granted
