from datetime import UTC, datetime, timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from config import shared_cache as cache

from .models import Account, ApiToken
from .tokens import looks_like_token, token_digest

# Writing last_used_at on every poll would turn each read into a write; once a minute is enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_CACHE_SECONDS = 300


def token_cache_key(digest: str) -> str:
    # "v2": the value is plain text now (encode_cached_token), not a pickle.
    return f"token:v2:{digest}"


def token_version_key(digest: str) -> str:
    """Moved whenever the token is removed (accounts.services): a lookup that read the token from
    the database before the removal committed cannot cache it afterwards (set_bytes_if_version)."""
    return f"token:version:{digest}"


def encode_cached_token(account_id: int, checked_at) -> bytes:
    """The token cache's value: "<account id>:<unix ms of the last database check>". Plain text,
    so the poll path's Lua script (transcription.api.polls) reads it in Redis itself."""
    return f"{account_id}:{int(checked_at.timestamp() * 1000)}".encode()


def decode_cached_token(value: bytes | None):
    """(account_id, checked_at) or None for a missing or unreadable value."""
    try:
        account_id, checked_ms = value.decode().split(":")
        return int(account_id), datetime.fromtimestamp(int(checked_ms) / 1000, tz=UTC)
    except (AttributeError, ValueError, UnicodeDecodeError):
        return None


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`. request.user is the Account."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request)
        if not header:
            return None
        try:
            parts = header.decode("ascii").split()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.") from None
        if len(parts) != 2 or parts[0].lower() != self.keyword.lower():
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        token = parts[1]
        if not looks_like_token(token):
            raise exceptions.AuthenticationFailed("Malformed API token.")
        digest = token_digest(token)
        # Polls authenticate several times a second; the token's account is cached in Redis and
        # the cache entry is deleted whenever the token is replaced or revoked (accounts.services).
        value, version = cache.get_bytes_and_version(token_cache_key(digest), token_version_key(digest))
        cached = decode_cached_token(value)
        now = timezone.now()
        if cached is None or now - cached[1] > LAST_USED_RESOLUTION:
            api_token = ApiToken.objects.filter(digest=digest).only("id", "account_id", "last_used_at").first()
            if api_token is None:
                raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
            if api_token.last_used_at is None or now - api_token.last_used_at > LAST_USED_RESOLUTION:
                ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)
            cached = (api_token.account_id, now)
            cache.set_bytes_if_version(
                token_cache_key(digest),
                encode_cached_token(*cached),
                TOKEN_CACHE_SECONDS,
                token_version_key(digest),
                version,
            )
        account = Account(pk=cached[0])  # views only need the account's id
        account.is_authenticated = True  # what DRF's IsAuthenticated asks of request.user
        return account, None

    def authenticate_header(self, request):
        return self.keyword
