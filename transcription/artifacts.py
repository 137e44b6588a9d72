"""Result files (burned videos) in Django's storage, handed out by signed, expiring links.

A link is `/v1/files/<signed name>`: it works without the bearer token (so a browser or a video
player can open it), cannot be guessed (HMAC with SECRET_KEY over the storage name), and expires
ARTIFACT_LINK_SECONDS after it was made (7 days by default).
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.urls import reverse

_SALT = "transcription.artifacts"


def signed_path(name: str) -> str:
    token = signing.TimestampSigner(salt=_SALT).sign_object(name, compress=False)
    return reverse("artifact", kwargs={"token": token})


def absolute_url(name: str | None, request=None) -> str | None:
    if not name:
        return None
    path = signed_path(name)
    if request is not None:
        return request.build_absolute_uri(path)
    return settings.PUBLIC_BASE_URL.rstrip("/") + path


def unsign(token: str) -> str:
    """The storage name inside a link; raises signing.BadSignature (or SignatureExpired)."""
    return signing.TimestampSigner(salt=_SALT).unsign_object(token, max_age=settings.ARTIFACT_LINK_SECONDS)
