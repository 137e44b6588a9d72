"""The client's address: the one rule behind every per-address control (sign-in lockout through
django-axes, the sign-up and confirmation-mail limits, the API's limit on requests without a valid
token, /metrics' allowed networks, and every door that counts by address).

- TRUST_PROXY_HEADERS off (the default): the TCP peer, whatever the request's headers say. bin/web
  runs uvicorn with its proxy-header rewriting off (config.web_worker), so the peer really is the
  peer: X-Forwarded-For is a header the client wrote.
- TRUST_PROXY_HEADERS on: when the peer is one of TRUSTED_PROXIES, X-Forwarded-For is read from
  the right (each proxy appends the address it saw), skipping our own proxies; the first address
  that is not one of them is the client. Entries to its left are the client's own claims and are
  never read. A peer that is not one of our proxies is the client itself, headers ignored.

None when there is no usable address (only requests made in tests lack one).

The limits count a client by `counted`: an IPv4 address as it is, an IPv6 client by its /64 (one
subscriber, host or VM usually holds a whole /64 and can pick any address in it, so counting single
addresses would leave it unlimited), written as that /64's first address so that it still fits an
address column (Signup.client_address, django-axes' ip_address).
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings


def _parsed(address: str | None):
    try:
        return ipaddress.ip_address((address or "").strip())
    except ValueError:
        return None


@lru_cache(maxsize=8)
def _networks(networks: tuple[str, ...]):
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def _trusted(ip, networks) -> bool:
    return any(ip in network for network in networks)


def from_our_proxy(peer: str | None) -> bool:
    """Whether a request's TCP peer is one of our own proxies, whose X-Forwarded-* headers are
    believed (TRUST_PROXY_HEADERS on, the peer in TRUSTED_PROXIES); any other peer wrote its
    headers itself."""
    ip = _parsed(peer)
    return bool(
        settings.TRUST_PROXY_HEADERS and ip is not None and _trusted(ip, _networks(tuple(settings.TRUSTED_PROXIES)))
    )


def address_from(peer: str | None, forwarded_for: str | None) -> str | None:
    """The client's address given the TCP peer and the X-Forwarded-For header (all its values,
    joined with commas), under the current settings. What every door calls."""
    ip = _parsed(peer)
    if ip is None:
        return None
    if not settings.TRUST_PROXY_HEADERS:
        return str(ip)
    proxies = _networks(tuple(settings.TRUSTED_PROXIES))
    for entry in reversed((forwarded_for or "").split(",") if _trusted(ip, proxies) else []):
        hop = _parsed(entry)
        if hop is None:
            break  # not an address our proxy wrote: what lies beyond it cannot be believed
        ip = hop
        if not _trusted(ip, proxies):
            break
    return str(ip)


def counted(address: str | None) -> str | None:
    """The client as the per-address limits count it: IPv4 as is (an IPv4-mapped IPv6 address is
    its IPv4 address), other IPv6 by its /64, e.g. "2001:db8:1:2::"."""
    ip = _parsed(address)
    if ip is None:
        return None
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False).network_address)
    return str(ip)


def client_address(request) -> str | None:
    """The client's address of a Django request."""
    return address_from(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))


def counted_client_address(request) -> str | None:
    """The client of a Django request as the limits count it (sign-up, and django-axes'
    AXES_CLIENT_IP_CALLABLE for the sign-in lockout)."""
    return counted(client_address(request))
