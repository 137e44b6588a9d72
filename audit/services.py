"""The one writer of AuditEvent rows (the services of every app call it inside their own transactions)."""

from .models import AuditEvent


def audit_record(account, action: str, *, by=None, detail: str = "") -> AuditEvent:
    actor = by if by is not None and getattr(by, "pk", None) is not None else None
    return AuditEvent.objects.create(account=account, action=action, actor=actor, detail=detail)
