"""Result files (burned videos) in Django's storage, handed out by signed, expiring links.

A link is `/v1/files/<signed name>`: it works without the bearer token (so a browser or a video
player can open it), cannot be guessed (HMAC with SECRET_KEY over the storage name and the moment
the link was made), and expires ARTIFACT_LINK_SECONDS after it was made (7 days by default).

Revocation reaches links (transcription.views.artifact): a link stops working when its job's
account is deactivated, and when the account's token is revoked or replaced after the link was
made (Account.file_links_revoked_at). Links are made per request, so the holder's next poll (with
the new token) or page view hands out working ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.core import signing
from django.urls import reverse

_SALT = "transcription.artifacts"


@dataclass(frozen=True)
class Link:
    name: str  # the storage name
    made_at: datetime


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=_SALT)


def signed_path(name: str) -> str:
    # The moment in milliseconds: a link made just before a revocation must not pass as made after it.
    token = _signer().sign_object({"n": name, "t": int(time.time() * 1000)}, compress=False)
    return reverse("artifact", kwargs={"token": token})


def absolute_url(name: str | None, request=None) -> str | None:
    if not name:
        return None
    path = signed_path(name)
    if request is not None:
        return request.build_absolute_uri(path)
    return settings.PUBLIC_BASE_URL.rstrip("/") + path


def unsign(token: str) -> Link:
    """What a link names and when it was made; raises signing.BadSignature (or SignatureExpired)."""
    value = _signer().unsign_object(token, max_age=settings.ARTIFACT_LINK_SECONDS)
    if isinstance(value, str):  # a link made before links carried their moment: its signing second
        return Link(value, datetime.fromtimestamp(signing.b62_decode(token.split(":")[-2]), tz=UTC))
    try:
        return Link(str(value["n"]), datetime.fromtimestamp(int(value["t"]) / 1000, tz=UTC))
    except (TypeError, KeyError, ValueError):
        raise signing.BadSignature("Not a file link.") from None
