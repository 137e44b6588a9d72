from django.db.models import Sum

from .models import LedgerEntry


def account_balance(account_id) -> int:
    """Seconds left: the sum of the account's ledger."""
    return LedgerEntry.objects.filter(account_id=account_id).aggregate(total=Sum("seconds"))["total"] or 0
