"""Writes for accounts and tokens."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from audit.models import AuditEvent
from audit.services import audit_record
from billing.services import grant_signup_minutes
from config import shared_cache as cache

from .authentication import token_cache_key
from .models import Account, ApiToken
from .tokens import PREFIX_LENGTH, new_token, token_digest


def _forget_token(digest: str) -> None:
    """A removed token must stop working in every web process at once: drop its cached lookup now
    and again after commit (a request racing the transaction may have cached it meanwhile)."""
    cache.delete(token_cache_key(digest))
    transaction.on_commit(lambda: cache.delete(token_cache_key(digest)))


@transaction.atomic
def account_create(email: str, *, password: str | None = None, minutes: int | None = None) -> Account:
    """Create a login and its account, with the sign-up allowance (FREE_MINUTES unless given)."""
    User = get_user_model()
    email = User.objects.normalize_email(email).strip()
    user = User(username=email, email=email)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    account = Account.objects.create(user=user)
    grant_signup_minutes(account, settings.FREE_MINUTES if minutes is None else minutes)
    return account


@transaction.atomic
def token_issue(account: Account, *, by=None) -> str:
    """Create the account's token, or replace the existing one (which stops working at once).

    Returns the token itself: the only time it is ever seen. Audited as token_issued or
    token_replaced, with `by` (the user who asked: staff in the admin, the holder on the API page).
    """
    token = new_token()
    Account.objects.select_for_update().filter(pk=account.pk).first()  # one token change at a time
    previous = ApiToken.objects.filter(account=account).first()
    if previous is not None:
        previous.delete()
        _forget_token(previous.digest)
    created = ApiToken.objects.create(account=account, prefix=token[:PREFIX_LENGTH], digest=token_digest(token))
    if previous is None:
        audit_record(account, AuditEvent.Action.TOKEN_ISSUED, by=by, detail=f"New token {created.prefix}…")
    else:
        audit_record(
            account,
            AuditEvent.Action.TOKEN_REPLACED,
            by=by,
            detail=f"Token {previous.prefix}… replaced by {created.prefix}…",
        )
    return token


@transaction.atomic
def token_revoke(account: Account, *, by=None) -> bool:
    """Delete the account's token; returns whether there was one (only then is it audited)."""
    Account.objects.select_for_update().filter(pk=account.pk).first()
    previous = ApiToken.objects.filter(account=account).first()
    if previous is None:
        return False
    previous.delete()
    _forget_token(previous.digest)
    audit_record(account, AuditEvent.Action.TOKEN_REVOKED, by=by, detail=f"Token {previous.prefix}… revoked")
    return True
