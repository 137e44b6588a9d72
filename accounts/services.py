"""Writes for accounts and tokens."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password, make_password
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import Actor, audit_record
from config import shared_cache as cache

from .authentication import TOKEN_CACHE_SECONDS, token_cache_key, token_version_key
from .confirmation import new_secret
from .models import Account, ApiToken, Signup
from .signals import account_opened
from .tokens import PREFIX_LENGTH, new_token, token_digest


def _signups_kept() -> timedelta:
    """Pending sign-ups are the count of confirmation mails (an hour) and hold working links (their
    lifetime): kept for the longer of the two, then deleted by the next sign-up."""
    return max(timedelta(hours=1), timedelta(seconds=settings.EMAIL_CONFIRMATION_SECONDS))


def _serialize_on(*names: str) -> None:
    """Sign-ups for the same recipient or from the same address, one at a time until commit, so
    that concurrent POSTs cannot all pass the count. PostgreSQL's transaction-level advisory
    locks; SQLite (the embedded default) already has one writer at a time."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for name in sorted(set(names)):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"accounts.signup:{name}"])


def _forget_token(digest: str) -> None:
    """A removed token must stop working in every web process at once: drop its cached lookup now
    and again after commit, moving its version each time, so a request that read the token before
    the commit cannot cache it after (BearerTokenAuthentication)."""
    cache.forget(token_cache_key(digest), token_version_key(digest), TOKEN_CACHE_SECONDS)


@transaction.atomic
def account_create(email: str, *, password: str | None = None, minutes: int | None = None) -> Account:
    """An operator's account (`manage.py create_account`, the demo): a login that is ready at once,
    with the sign-up allowance (FREE_MINUTES unless given). Self-service sign-ups go through
    signup_create and signup_confirm instead."""
    User = get_user_model()
    email = User.objects.normalize_email(email).strip()
    user = User(username=email, email=email, is_active=True)
    if password:
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.save()
    account = Account.objects.create(user=user)
    account_opened.send(Account, account=account, minutes=settings.FREE_MINUTES if minutes is None else minutes)
    return account


def login_holding(email: str) -> User | None:
    """The login that holds this address (as its username or its email), active or not."""
    User = get_user_model()
    return User.objects.filter(username__iexact=email).first() or User.objects.filter(email__iexact=email).first()


class SignupRefused(Exception):
    """Why a sign-up or a confirmation does nothing: `status` is the page's HTTP status, `field`
    the form field the message belongs to (None: the whole request)."""

    def __init__(self, message: str, status: int, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


ADDRESS_TAKEN = "An account with this email already exists. Sign in instead."


@transaction.atomic
def signup_create(email: str, password: str, *, client_address: str | None) -> tuple[Signup, str | None]:
    """A pending sign-up and the secret of its link (to mail; stored only as a digest).

    Makes no login. An address that has one (confirmed, made by an operator, or deactivated by
    staff) gets no link: the sign-up is recorded already used, without the password, and the
    secret returned is None (the caller mails the holder a notice instead). The answer is the same
    either way, so sign-up never says whether an address has an account. Limited to
    SIGNUPS_PER_HOUR from one client address (as accounts.client counts it) and
    CONFIRMATION_MAILS_PER_HOUR to one recipient, since each sign-up is a mail."""
    User = get_user_model()
    email = User.objects.normalize_email(email).strip()
    _serialize_on(email.upper(), client_address or "")
    now = timezone.now()
    Signup.objects.filter(created_at__lt=now - _signups_kept()).delete()
    hour_ago = now - timedelta(hours=1)
    if client_address and (
        Signup.objects.filter(client_address=client_address, created_at__gte=hour_ago).count()
        >= settings.SIGNUPS_PER_HOUR
    ):
        raise SignupRefused("Too many sign-ups from your address. Try again in an hour.", 429)
    if (
        Signup.objects.filter(email__iexact=email, created_at__gte=hour_ago).count()
        >= settings.CONFIRMATION_MAILS_PER_HOUR
    ):
        raise SignupRefused(
            "We have sent several links to this address in the last hour: use the latest one, or try again later.",
            429,
        )
    hashed = make_password(password)  # hashed either way: the time taken says nothing either
    taken = login_holding(email) is not None
    secret, digest = new_secret()
    signup = Signup.objects.create(
        email=email,
        password="" if taken else hashed,
        secret_digest=digest,
        client_address=client_address or None,
        used_at=now if taken else None,
    )
    return signup, None if taken else secret


@transaction.atomic
def signup_confirm(signup: Signup, password: str) -> User:
    """The link's button was pressed with `password`: make the login (active, with this sign-up's
    password) and its account with the sign-up allowance, and discard every other pending sign-up
    of the address (their passwords are dropped, their links die). Returns the login.

    Refuses a password other than the one chosen at this sign-up (the holder who opens a link
    someone else asked for does not get that someone's password), and an address a login holds
    by now (confirmed meanwhile, or made by an operator: a deactivated account stays so)."""
    signup = Signup.objects.select_for_update().get(pk=signup.pk)
    if signup.used_at is not None:
        raise SignupRefused("This link has been used already.", 400)
    if not check_password(password, signup.password):
        raise SignupRefused(
            "That is not the password chosen at this sign-up. If you did not sign up, ignore the mail.",
            400,
            "password",
        )
    now = timezone.now()
    if login_holding(signup.email) is not None:
        Signup.objects.filter(pk=signup.pk).update(used_at=now, password="")
        raise SignupRefused(ADDRESS_TAKEN, 400)
    User = get_user_model()
    user = User(username=signup.email, email=signup.email, is_active=True, password=signup.password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:  # the same address confirmed a moment ago, through another link
        raise SignupRefused(ADDRESS_TAKEN, 400) from None
    account = Account.objects.create(user=user, signup_address=signup.client_address)
    account_opened.send(Account, account=account, minutes=settings.FREE_MINUTES)
    Signup.objects.filter(email__iexact=signup.email, used_at__isnull=True).update(used_at=now, password="")
    return user


def signup_pending_with(email: str, password: str) -> bool:
    """Whether someone with this password signed up for this address and has not confirmed yet
    (the sign-in page then says to confirm first). Looks at the latest few only."""
    pending = Signup.objects.filter(
        email__iexact=email.strip(),
        used_at__isnull=True,
        created_at__gte=timezone.now() - timedelta(seconds=settings.EMAIL_CONFIRMATION_SECONDS),
    ).order_by("-created_at")[:5]
    return any(check_password(password, signup.password) for signup in pending)


def file_links_revoke(account: Account) -> None:
    """Every signed file link of the account made until now stops working (transcription.views.artifact);
    the holder's next poll or page view gets new ones. Called when a token is revoked or replaced,
    and by whatever deactivates a login (a re-activated account's old links stay dead)."""
    Account.objects.filter(pk=account.pk).update(file_links_revoked_at=timezone.now())


def _shown_to(account: Account, by: Actor) -> str:
    """For the audit entry of a token someone other than its holder was shown (support staff in
    the admin): who saw it. The holder is told by mail (audit.notices)."""
    if by is None or getattr(by, "pk", None) is None or by.pk == account.user_id:
        return ""
    return f", shown to {by.get_username()}"


@transaction.atomic
def token_issue(account: Account, *, by: Actor = None) -> str:
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
        file_links_revoke(account)
    created = ApiToken.objects.create(account=account, prefix=token[:PREFIX_LENGTH], digest=token_digest(token))
    shown = _shown_to(account, by)
    if previous is None:
        audit_record(account, AuditEvent.Action.TOKEN_ISSUED, by=by, detail=f"New token {created.prefix}…{shown}")
    else:
        audit_record(
            account,
            AuditEvent.Action.TOKEN_REPLACED,
            by=by,
            detail=f"Token {previous.prefix}… replaced by {created.prefix}…{shown}",
        )
    return token


@transaction.atomic
def token_revoke(account: Account, *, by: Actor = None) -> bool:
    """Delete the account's token; returns whether there was one (only then is it audited)."""
    Account.objects.select_for_update().filter(pk=account.pk).first()
    previous = ApiToken.objects.filter(account=account).first()
    if previous is None:
        return False
    previous.delete()
    _forget_token(previous.digest)
    file_links_revoke(account)
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
def account_deactivate(account: Account, *, by: Actor = None, reason: str = "") -> bool:
    """Close every door of the account at once (REST, MCP, the poll fast lane, the website and its
    signed-in sessions); returns whether it was active (only then is it audited)."""
    user = type(account.user).objects.select_for_update().get(pk=account.user_id)
    if not user.is_active:
        return False
    user.is_active = False
    user.save(update_fields=["is_active"])  # accounts.signals forgets the token's cached lookup
    file_links_revoke(account)  # its signed file links stay dead even after a reactivation
    detail = "Login deactivated: API token, MCP and website refused until reactivated."
    audit_record(account, AuditEvent.Action.ACCOUNT_DEACTIVATED, by=by, detail=f"{detail} {reason}".strip())
    return True


@transaction.atomic
def account_reactivate(account: Account, *, by: Actor = None, reason: str = "") -> bool:
    """Open the doors again (the same token works again); returns whether it was inactive."""
    user = type(account.user).objects.select_for_update().get(pk=account.user_id)
    if user.is_active:
        return False
    user.is_active = True
    user.save(update_fields=["is_active"])
    detail = "Login reactivated: API token, MCP and website work again."
    audit_record(account, AuditEvent.Action.ACCOUNT_REACTIVATED, by=by, detail=f"{detail} {reason}".strip())
    return True
