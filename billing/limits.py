"""What support staff may add to customers' minutes without a superuser (docs/decisions.md, "What
support may do"; issue 41): at most SUPPORT_GRANT_MAX_MINUTES at once, at most
SUPPORT_GRANT_DAILY_MINUTES in 24 hours, counted over every path that adds minutes:

- a direct grant (LedgerEntry, source `staff`, created by them);
- a change that lets plan renewals grant more: a plan assigned, a renewal date brought forward, a
  plan's minutes raised or a plan made active again (AuditEvent.minutes of their events; a plan
  change counts for every account it reaches).

A change with no person (`manage.py grant_minutes`, the operator on a server) and a superuser's
are not limited.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor, person

from .models import LedgerEntry


class GrantNeedsSuperuser(ValueError):
    """A support user's grant above SUPPORT_GRANT_MAX_MINUTES, or one that takes what they granted
    in the last 24 hours above SUPPORT_GRANT_DAILY_MINUTES: only a superuser may make it."""


def minutes_added_since(creator, since) -> int:
    """Minutes `creator` added, directly or through plans, since `since`."""
    granted = LedgerEntry.objects.filter(
        source=LedgerEntry.Source.STAFF, created_by=creator, created_at__gte=since
    ).aggregate(total=Sum("seconds"))["total"]
    through_plans = AuditEvent.objects.filter(actor=creator, created_at__gte=since).aggregate(total=Sum("minutes"))[
        "total"
    ]
    return (granted or 0) // 60 + (through_plans or 0)


def check_grant_limits(each: int, by: Actor, *, total: int | None = None, lock: bool = True) -> None:
    """Raise GrantNeedsSuperuser unless `by` may add `each` minutes to an account (`total` to all
    the accounts a change reaches; `each` by default). `lock`: inside the writing transaction, one
    change at a time per person, so that two at once cannot both pass the daily total (a form's
    early check runs without it; the service checks again)."""
    creator = person(by)
    amount = each if total is None else total
    if creator is None or creator.is_superuser or amount <= 0:
        return
    if each > settings.SUPPORT_GRANT_MAX_MINUTES:
        raise GrantNeedsSuperuser(
            f"A grant above {settings.SUPPORT_GRANT_MAX_MINUTES:,} minutes needs a superuser: ask one to make it."
            + ("" if total is None else f" This change adds {each:,} minutes to each account on the plan.")
        )
    if lock:
        get_user_model().objects.select_for_update().filter(pk=creator.pk).first()
    added = minutes_added_since(creator, timezone.now() - timedelta(hours=24))
    if added + amount > settings.SUPPORT_GRANT_DAILY_MINUTES:
        raise GrantNeedsSuperuser(
            f"You have granted {added:,} minutes in the last 24 hours; support staff may grant at most "
            f"{settings.SUPPORT_GRANT_DAILY_MINUTES:,} a day. A superuser can make this grant."
        )
