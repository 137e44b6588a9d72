"""Live keys: the short-lived credential the website's Live page opens /v1/realtime with, so that the
holder's API token never goes into a page (docs/decisions/live.md).

A key is `vtl_` and a value signed with SECRET_KEY (django.core.signing, its own salt): the account,
the login and a piece of the login's session hash, with the time it was made. Nothing is stored: a
key is good for LIVE_KEY_SECONDS after it was made, for the login it names while that login is active
and its password unchanged (the session hash moves with the password, as Django's sessions do). It
is checked when a stream opens; a stream opened with it runs to its end, as OpenAI's ephemeral keys
do. Only the live door takes it (transcription.api.front.front_door.LIVE_KEY_DOORS); the other
doors read it as a malformed token.
"""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model
from django.core import signing

from .authentication import DEACTIVATED, TokenHolder, TokenRefused
from .models import Account

LIVE_KEY_PREFIX = "vtl_"
LIVE_KEY_SECONDS = 300  # a page asks for a new one for each stream it opens
SALT = "accounts.live_keys"
HASH_CHARACTERS = 16  # of the login's session hash: enough to tell a changed password


class _Signer(signing.TimestampSigner):
    """Django's timestamp signer with a separator that a WebSocket subprotocol may carry (`:` may
    not), and the time a key was made given (the tests make expired keys with it)."""

    def __init__(self, made_at: float | None = None):
        super().__init__(salt=SALT, sep=".")
        self.made_at = made_at

    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time() if self.made_at is None else self.made_at))


def _session_hash(user) -> str:
    return user.get_session_auth_hash()[:HASH_CHARACTERS]


def new_live_key(account: Account, made_at: float | None = None) -> tuple[str, int]:
    """(key, expires_at in Unix seconds) for `account`'s login."""
    made_at = time.time() if made_at is None else made_at
    payload = {"a": account.pk, "u": account.user_id, "h": _session_hash(account.user)}
    key = LIVE_KEY_PREFIX + _Signer(made_at).sign_object(payload, compress=False)
    return key, int(made_at) + LIVE_KEY_SECONDS


def is_live_key(value: str) -> bool:
    return value.startswith(LIVE_KEY_PREFIX)


def live_key_holder(key: str) -> TokenHolder:
    """Whose live key this is, or TokenRefused: expired, not one of ours, its login deactivated
    or its password changed since, or its account gone."""
    try:
        payload = _Signer().unsign_object(key.removeprefix(LIVE_KEY_PREFIX), max_age=LIVE_KEY_SECONDS)
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
