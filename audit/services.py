"""The one writer of AuditEvent rows (the services of every app call it inside their own transactions).
A change made by someone other than the account's holder is also mailed to the holder (notices)."""

from __future__ import annotations

from typing import TypeAlias

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Model

from .models import AuditEvent
from .notices import notify_holder

# Who made a change: the login of the request that asked (request.user, which Django types as possibly
# anonymous), or None for a change made outside a person's session (a management command, a task).
Actor: TypeAlias = User | AnonymousUser | None


def person(by: Actor) -> User | None:
    """The saved login behind `by`; None for no one (a command) and for an anonymous visitor."""
    return None if by is None or isinstance(by, AnonymousUser) or by.pk is None else by


def audit_record(account: Model, action: str, *, by: Actor = None, detail: str = "", minutes: int = 0) -> AuditEvent:
    """Record `action` on `account`, by `by`, and tell the holder when it was someone else. The account
    is an accounts.Account, taken as any row and stored by id: the audit log imports no other app.
    `minutes`: what the change lets plan renewals grant (AuditEvent.minutes)."""
    event = AuditEvent.objects.create(
        account_id=account.pk, action=action, actor=person(by), detail=detail, minutes=minutes
    )
    notify_holder(event)
    return event
