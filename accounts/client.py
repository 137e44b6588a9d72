"""The client's address, for the per-address limits on sign-ups and sign-ins.

REMOTE_ADDR, unless TRUST_PROXY_HEADERS says a proxy in front rewrites X-Forwarded-For: then the
address that proxy saw, the last one it appended (earlier entries are the client's own claims).
None when there is no address (only requests made in tests lack one)."""

import ipaddress

from django.conf import settings


def _valid(address: str) -> str | None:
    try:
        return str(ipaddress.ip_address(address.strip()))
    except ValueError:
        return None


def client_address(request) -> str | None:
    if settings.TRUST_PROXY_HEADERS:
        forwarded = _valid(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")[-1])
        if forwarded:
            return forwarded
    return _valid(request.META.get("REMOTE_ADDR") or "")
