import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.core import signing
from django.utils import timezone
from rest_framework import authentication, exceptions

from config import shared_cache as cache

from .models import Account, ApiToken
from .tokens import looks_like_token, token_digest

# Writing last_used_at on every poll would turn each read into a write; once a minute is enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_CACHE_SECONDS = 300


def token_cache_key(digest: str) -> str:
    # "v3": "<account>:<ms>:<user>", and only for a token whose login is active.
    return f"token:v3:{digest}"


def token_version_key(digest: str) -> str:
    """Moved whenever the token is removed or its login's status changes (accounts.services,
    accounts.signals): a lookup that read the token from the database before that change committed
    cannot cache it afterwards (set_bytes_if_version)."""
    return f"token:version:{digest}"


def encode_cached_token(account_id: int, checked_at, user_id: int) -> bytes:
    """The token cache's value: "<account id>:<unix ms of the last database check>:<user id>".
    Plain text, so the poll path's Lua script (transcription.api.front.polls) reads it in Redis itself."""
    return f"{account_id}:{int(checked_at.timestamp() * 1000)}:{user_id}".encode()


def decode_cached_token(value: bytes | None) -> tuple[int, datetime, int] | None:
    """(account_id, checked_at, user_id) or None for a missing or unreadable value."""
    if value is None:
        return None
    try:
        account_id, checked_ms, user_id = value.decode().split(":")
        return int(account_id), datetime.fromtimestamp(int(checked_ms) / 1000, tz=UTC), int(user_id)
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class TokenHolder:
    account_id: int
    user_id: int
    digest: str


class TokenRefused(Exception):
    """The header names no usable token; `missing` when there was no header at all."""

    def __init__(self, message: str, *, missing: bool = False):
        super().__init__(message)
        self.missing = missing


DEACTIVATED = "This account is deactivated; its API token does not work. Contact support."


def token_from_header(authorization: str | bytes | None) -> str:
    """The token of an `Authorization: Bearer <token>` value, or TokenRefused saying what is wrong."""
    value = _bearer_value(authorization)
    if not looks_like_token(value):
        raise TokenRefused("Malformed API token.")
    return value


def _bearer_value(authorization: str | bytes | None) -> str:
    """What follows `Bearer` in an Authorization value (a token or a live key), or TokenRefused."""
    if not authorization:
        raise TokenRefused("Missing API token.", missing=True)
    if isinstance(authorization, bytes):
        try:
            authorization = authorization.decode("ascii")
        except UnicodeDecodeError:
            raise TokenRefused("Malformed Authorization header.") from None
    if not authorization.isascii():
        raise TokenRefused("Malformed Authorization header.")
    parts = authorization.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        raise TokenRefused("Authorization header must be 'Bearer <token>'.")
    return parts[1]


def token_holder(digest: str) -> TokenHolder:
    """Whose token this is: its account and login, or TokenRefused (unknown, revoked, or its login
    deactivated). Polls authenticate several times a second, so the answer is cached in Redis; the
    entry is deleted whenever the token is replaced or revoked (accounts.services) or its login's
    status changes (accounts.signals), and is re-checked against the database once a minute."""
    value, version = cache.get_bytes_and_version(token_cache_key(digest), token_version_key(digest))
    cached = decode_cached_token(value)
    now = timezone.now()
    if cached is None or now - cached[1] > LAST_USED_RESOLUTION:
        api_token = (
            ApiToken.objects.filter(digest=digest)
            .select_related("account__user")
            .only("id", "account_id", "last_used_at", "account__user_id", "account__user__is_active")
            .first()
        )
        if api_token is None:
            raise TokenRefused("Invalid or revoked API token.")
        if not api_token.account.user.is_active:
            raise TokenRefused(DEACTIVATED)
        if api_token.last_used_at is None or now - api_token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)
        cached = (api_token.account_id, now, api_token.account.user_id)
        cache.set_bytes_if_version(
            token_cache_key(digest),
            encode_cached_token(*cached),
            TOKEN_CACHE_SECONDS,
            token_version_key(digest),
            version,
        )
    return TokenHolder(account_id=cached[0], user_id=cached[2], digest=digest)


def token_holder_for_header(authorization: str | bytes | None, *, live_keys: bool = False) -> TokenHolder:
    """Whose token the header carries; with `live_keys` (the live door), a live key is taken too."""
    if live_keys:
        value = _bearer_value(authorization)
        if is_live_key(value):
            return live_key_holder(value)
    return token_holder(token_digest(token_from_header(authorization)))


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`, for DRF views outside the v1 API's front door (which builds
    its Caller itself, transcription.api.front.front_door; the v1 views name this class only for the
    OpenAPI document). request.user is the Account."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request)
        if not header:
            return None
        try:
            holder = token_holder_for_header(header)
        except TokenRefused as refused:
            raise exceptions.AuthenticationFailed(str(refused)) from None
        account = Account.objects.get(pk=holder.account_id)
        account.is_authenticated = True  # what DRF's IsAuthenticated asks of request.user
        return account, None

    def authenticate_header(self, request):
        return self.keyword


# --- Live keys --------------------------------------------------------------------------------
# The short-lived credential the website's Live page opens /v1/realtime with, so that the
# holder's API token never goes into a page (docs/decisions/live.md).
#
# A key is `vtl_` and a value signed with SECRET_KEY (django.core.signing, its own salt): the account,
# the login and a piece of the login's session hash, with the time it was made. Nothing is stored: a
# key is good for LIVE_KEY_SECONDS after it was made, for the login it names while that login is active
# and its password unchanged (the session hash moves with the password, as Django's sessions do). It
# is checked when a stream opens; a stream opened with it runs to its end, as OpenAI's ephemeral keys
# do. Only the live door takes it (transcription.api.front.front_door.LIVE_KEY_DOORS); the other
# doors read it as a malformed token.

LIVE_KEY_PREFIX = "vtl_"
LIVE_KEY_SECONDS = 300  # a page asks for a new one for each stream it opens
LIVE_KEY_SALT = "accounts.live_keys"
LIVE_KEY_HASH_CHARACTERS = 16  # of the login's session hash: enough to tell a changed password


class _LiveKeySigner(signing.TimestampSigner):
    """Django's timestamp signer with a separator that a WebSocket subprotocol may carry (`:` may
    not), and the time a key was made given (the tests make expired keys with it)."""

    def __init__(self, made_at: float | None = None):
        super().__init__(salt=LIVE_KEY_SALT, sep=".")
        self.made_at = made_at

    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time() if self.made_at is None else self.made_at))


def _session_hash(user) -> str:
    return user.get_session_auth_hash()[:LIVE_KEY_HASH_CHARACTERS]


def new_live_key(account: Account, made_at: float | None = None) -> tuple[str, int]:
    """(key, expires_at in Unix seconds) for `account`'s login."""
    made_at = time.time() if made_at is None else made_at
    payload = {"a": account.pk, "u": account.user_id, "h": _session_hash(account.user)}
    key = LIVE_KEY_PREFIX + _LiveKeySigner(made_at).sign_object(payload, compress=False)
    return key, int(made_at) + LIVE_KEY_SECONDS


def is_live_key(value: str) -> bool:
    return value.startswith(LIVE_KEY_PREFIX)


def live_key_holder(key: str) -> TokenHolder:
    """Whose live key this is, or TokenRefused: expired, not one of ours, its login deactivated
    or its password changed since, or its account gone."""
    try:
        payload = _LiveKeySigner().unsign_object(key.removeprefix(LIVE_KEY_PREFIX), max_age=LIVE_KEY_SECONDS)
    except signing.SignatureExpired:
        raise TokenRefused("This live key has expired; the Live page asks for a new one each time.") from None
    except (signing.BadSignature, ValueError):
        raise TokenRefused("Invalid live key.") from None
    if not isinstance(payload, dict) or not {"a", "u", "h"} <= payload.keys():
        raise TokenRefused("Invalid live key.")
    user = get_user_model().objects.filter(pk=payload["u"]).first()
    if user is None or not Account.objects.filter(pk=payload["a"], user=user).exists():
        raise TokenRefused("Invalid live key.")
    if not user.is_active:
        raise TokenRefused(DEACTIVATED)
    if _session_hash(user) != payload["h"]:
        raise TokenRefused("This live key was made before the password changed; sign in again.")
    return TokenHolder(account_id=payload["a"], user_id=user.pk, digest="")
