"""Writes for accounts and tokens."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from audit.models import AuditEvent
from audit.services import audit_record
from billing.services import grant_signup_minutes
from config import shared_cache as cache

from .authentication import TOKEN_CACHE_SECONDS, token_cache_key, token_version_key
from .models import Account, ApiToken
from .tokens import PREFIX_LENGTH, new_token, token_digest


def _forget_token(digest: str) -> None:
    """A removed token must stop working in every web process at once: drop its cached lookup now
    and again after commit, moving its version each time, so a request that read the token before
    the commit cannot cache it after (BearerTokenAuthentication)."""
    cache.forget(token_cache_key(digest), token_version_key(digest), TOKEN_CACHE_SECONDS)


@transaction.atomic
def account_create(
    email: str,
    *,
    password: str | None = None,
    minutes: int | None = None,
    confirmed: bool = True,
    signup_address: str | None = None,
) -> Account:
    """Create a login and its account, with the sign-up allowance (FREE_MINUTES unless given).

    An operator's account (`confirmed`, the default) is ready at once. A self-service sign-up
    (confirmed=False) gets an inactive login and no minutes until its holder follows the link
    mailed to them (account_confirm_email)."""
    User = get_user_model()
    email = User.objects.normalize_email(email).strip()
    user = User(username=email, email=email, is_active=confirmed)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    account = Account.objects.create(user=user, signup_address=signup_address or None)
    if confirmed:
        grant_signup_minutes(account, settings.FREE_MINUTES if minutes is None else minutes)
    return account


@transaction.atomic
def account_confirm_email(user) -> Account:
    """The holder followed the confirmation link: activate the login and grant the sign-up
    allowance, once (a second click finds it granted)."""
    account = Account.objects.select_for_update().get(user=user)
    if not user.is_active:
        user.is_active = True
        user.save(update_fields=["is_active"])
    if not account.ledger.filter(source="signup").exists():
        grant_signup_minutes(account, settings.FREE_MINUTES)
    return account


def signups_from(address: str | None, since) -> int:
    """Self-service sign-ups from one client address since `since`."""
    if not address:
        return 0
    return Account.objects.filter(signup_address=address, created_at__gte=since).count()


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


# --- Deactivation: one switch that closes every door ---------------------------------------------
# The login's is_active is the switch. Every door reads it: the front door's token lookup
# (accounts.authentication.token_holder; the token cache is forgotten by accounts.signals whenever
# the login is saved, so the fast lane's Lua script stops finding it too), and Django's session
# middleware (ModelBackend.get_user drops an inactive login's session on its next request).
# Nothing is deleted: the token, jobs, ledger and webhook stay, and reactivation opens every door
# again with the same token.


@transaction.atomic
def account_deactivate(account: Account, *, by=None, reason: str = "") -> bool:
    """Close every door of the account at once (REST, MCP, the poll fast lane, the website and its
    signed-in sessions); returns whether it was active (only then is it audited)."""
    user = type(account.user).objects.select_for_update().get(pk=account.user_id)
    if not user.is_active:
        return False
    user.is_active = False
    user.save(update_fields=["is_active"])  # accounts.signals forgets the token's cached lookup
    detail = "Login deactivated: API token, MCP and website refused until reactivated."
    audit_record(account, AuditEvent.Action.ACCOUNT_DEACTIVATED, by=by, detail=f"{detail} {reason}".strip())
    return True


@transaction.atomic
def account_reactivate(account: Account, *, by=None, reason: str = "") -> bool:
    """Open the doors again (the same token works again); returns whether it was inactive."""
    user = type(account.user).objects.select_for_update().get(pk=account.user_id)
    if user.is_active:
        return False
    user.is_active = True
    user.save(update_fields=["is_active"])
    detail = "Login reactivated: API token, MCP and website work again."
    audit_record(account, AuditEvent.Action.ACCOUNT_REACTIVATED, by=by, detail=f"{detail} {reason}".strip())
    return True
