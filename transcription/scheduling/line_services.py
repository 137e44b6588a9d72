"""The waiting lines kept in the database, where there is no Redis (no REDIS_URL: the embedded
default that `make run` starts, SQLite and the filesystem broker): the same rule as lines.py's
Redis scripts, start-time fair queuing, line for line, so that every account is served in turn on
every default. tests/transcription/test_lines.py runs one set of tests on both.

A job joining gets the tag max(clock, the account's next tag), and the account's next tag becomes
that + 1; a worker takes the lowest (tag, job id) and moves the clock up to its tag; an account
whose last waiting job leaves loses its next tag (no credit for idle time). Each change is one
transaction that first locks the line's clock row (select_for_update on PostgreSQL; SQLite's
IMMEDIATE transactions take the writer lock at once: config.settings), so two workers never
take the same job and counts never drift. LineEntry and LineTurn hold the strings Redis holds.

Called by lines.py only (which chooses the store); it answers what lines.py's functions answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Min, Q
from django.utils import timezone

from transcription.models import LineEntry, LineTurn

CLOCK = ""  # LineTurn's account for the line's clock


@dataclass(frozen=True)
class TakenEntry:
    job: str
    tag: str
    account: str


def _locked_clock(queue: str) -> LineTurn:
    clock, _ = LineTurn.objects.select_for_update().get_or_create(queue=queue, account=CLOCK)
    return clock


def line_join(queue: str, job: str, account: str, tag: str | None) -> bool:
    """The job in the line at its account's next turn (or at `tag`, given back); False when it
    waits there already (it keeps its place)."""
    with transaction.atomic():
        clock = _locked_clock(queue)
        if LineEntry.objects.filter(queue=queue, job=job).exists():
            return False
        if tag is None:
            turn, _ = LineTurn.objects.select_for_update().get_or_create(queue=queue, account=account)
            start = max(clock.tag, turn.tag)
            turn.tag = start + 1
            turn.save(update_fields=["tag"])
        else:
            start = int(float(tag))
        LineEntry.objects.create(queue=queue, job=job, account=account, tag=start, since=timezone.now())
        return True


def line_take(queue: str) -> TakenEntry | None:
    """The first job of the line, taken out of it; None when it is empty."""
    with transaction.atomic():
        clock = _locked_clock(queue)
        first = LineEntry.objects.filter(queue=queue).order_by("tag", "job").first()
        if first is None:
            return None
        if first.tag > clock.tag:
            clock.tag = first.tag
            clock.save(update_fields=["tag"])
        _leave(first)
        return TakenEntry(first.job, str(first.tag), first.account)


def line_forget(queues: tuple[str, ...], job: str) -> None:
    """The job out of every line (it ended while it waited)."""
    for queue in queues:
        with transaction.atomic():
            _locked_clock(queue)
            entry = LineEntry.objects.filter(queue=queue, job=job).first()
            if entry is not None:
                _leave(entry)


def _leave(entry: LineEntry) -> None:
    entry.delete()
    if not LineEntry.objects.filter(queue=entry.queue, account=entry.account).exists():
        LineTurn.objects.filter(queue=entry.queue, account=entry.account).delete()


def line_others_waiting(queue: str, account: str) -> bool:
    return LineEntry.objects.filter(queue=queue).exclude(account=account).exists()


def line_place(queues: tuple[str, ...], job: str) -> int | None:
    """The job's place in the first line that holds it (1: taken next)."""
    for queue in queues:
        entry = LineEntry.objects.filter(queue=queue, job=job).first()
        if entry is not None:
            ahead = Q(tag__lt=entry.tag) | Q(tag=entry.tag, job__lt=entry.job)
            return LineEntry.objects.filter(ahead, queue=queue).count() + 1
    return None


@dataclass(frozen=True)
class LineFigures:
    waiting: int
    oldest_wait: float
    accounts: list[tuple[str, int, float]]


def line_figures(queue: str, top: int) -> LineFigures:
    """The line's depth and longest wait, and those of its `top` accounts with the most jobs waiting."""
    now = timezone.now()
    entries = LineEntry.objects.filter(queue=queue)
    overall = entries.aggregate(waiting=Count("id"), since=Min("since"))
    rows = (
        entries.values("account")
        .annotate(count=Count("id"), since=Min("since"))
        .order_by("-count", "-account")[:top]  # as Redis's ZREVRANGE: most first, ties by id, last first
    )

    def wait(since) -> float:
        return max(0.0, (now - since).total_seconds()) if since is not None else 0.0

    return LineFigures(
        int(overall["waiting"]),
        wait(overall["since"]),
        [(row["account"], int(row["count"]), wait(row["since"])) for row in rows],
    )
