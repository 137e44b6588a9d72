"""An account's storage quota: the bytes of uploads it may keep at once (issue 41). Its plan's
`storage_bytes`, or one largest upload (UPLOAD_MAX_BYTES) for an account without a plan or a plan
that leaves it empty. Live uploads count by the size announced (tus Upload-Length, a POST's
Content-Length) or, when none was, by the room they were given; checked when an upload is created,
before any byte is written (services.upload_create)."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Sum

from accounts.models import Account

from .models import Upload


class StorageFull(Exception):
    """An upload that would take the account's live uploads past its quota (a 413)."""

    def __init__(self, used: int, quota: int, size: int | None) -> None:
        asked = f"this upload ({format_bytes(size)})" if size else "another upload"
        super().__init__(
            f"Not enough storage: your uploads take {format_bytes(used)} of your {format_bytes(quota)} of storage, "
            f"and {asked} would go past it. Delete uploads you no longer need (DELETE /v1/api/uploads/{{id}}) or "
            "wait until they expire."
        )


def format_bytes(size: int) -> str:
    if size >= 1024**3:
        return f"{size / 1024**3:.1f} GB"
    return f"{size / 1024**2:.1f} MB"


def storage_quota(account: Account) -> int:
    plan = account.plan
    return plan.storage_bytes if plan is not None and plan.storage_bytes is not None else settings.UPLOAD_MAX_BYTES


def storage_used(account_id: int) -> int:
    return Upload.objects.filter(account_id=account_id).aggregate(total=Sum("size"))["total"] or 0
