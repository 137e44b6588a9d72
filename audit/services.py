"""The one writer of AuditEvent rows (the services of every app call it inside their own transactions).
A change made by someone other than the account's holder is also mailed to the holder (notices)."""

from .models import AuditEvent
from .notices import notify_holder


def audit_record(account, action: str, *, by=None, detail: str = "") -> AuditEvent:
    actor = by if by is not None and getattr(by, "pk", None) is not None else None
    event = AuditEvent.objects.create(account=account, action=action, actor=actor, detail=detail)
    notify_holder(event)
    return event
