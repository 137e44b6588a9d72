"""API token format. A token is shown once; only its SHA-256 digest is stored.

SHA-256 without salt is enough here because tokens are 256-bit random strings, not passwords:
there is nothing to guess, and an unsalted digest lets us find the token with one indexed lookup.
"""

import hashlib
import secrets

TOKEN_PREFIX = "vts_"
PREFIX_LENGTH = 12  # what the API page and the admin show: "vts_" + 8 characters


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def looks_like_token(value: str) -> bool:
    return value.startswith(TOKEN_PREFIX) and 20 <= len(value) <= 200 and value.isascii()
