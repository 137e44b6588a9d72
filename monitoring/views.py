"""What an operator's tools read: `/health` for load balancers, `/metrics` for Prometheus.

`/health` answers 200 when this web process reaches PostgreSQL and Redis, 503 naming the one it
cannot reach; no token (a load balancer has none) and no detail beyond "ok"/"unreachable".
Each check has a short timeout (config.shared_cache's, every Redis client's), so the answer comes
within a second and a half even when a server does not answer at all.

`/metrics` is computed at scrape time from PostgreSQL and Redis (monitoring.metrics), so every
web process answers the same figures however many there are. It is for the operator's Prometheus
only: a request passes with `Authorization: Bearer <METRICS_TOKEN>` (when that is set) or from an
address in METRICS_ALLOWED_NETWORKS (loopback by default; the client's address as
accounts.client reads it, so a forwarded header counts only from TRUSTED_PROXIES); anything else
is a 403.
"""

from __future__ import annotations

import hmac
import ipaddress

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from accounts.client import client_address
from config import shared_cache

from .metrics import registry


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DatabaseError:
        connection.close_if_unusable_or_obsolete()
        return False


def _redis_ok() -> bool:
    try:
        return bool(shared_cache.connect(settings.REDIS_URL).ping())
    except redis.RedisError:
        return False


@never_cache
@require_GET
def health(request):
    checks = {"database": "ok" if _database_ok() else "unreachable"}
    if settings.REDIS_URL:  # the embedded default has no Redis to check
        checks["redis"] = "ok" if _redis_ok() else "unreachable"
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503)


def _allowed(request) -> bool:
    if settings.METRICS_TOKEN:
        header = request.headers.get("Authorization", "")
        if hmac.compare_digest(header.encode(), f"Bearer {settings.METRICS_TOKEN}".encode()):
            return True
    try:
        address = ipaddress.ip_address(client_address(request) or "")
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(network, strict=False) for network in settings.METRICS_ALLOWED_NETWORKS)


@never_cache
@require_GET
def metrics(request):
    if not _allowed(request):
        return JsonResponse(
            {
                "detail": "Metrics are for the operator: send 'Authorization: Bearer <METRICS_TOKEN>' or scrape from an "
                "address in METRICS_ALLOWED_NETWORKS."
            },
            status=403,
        )
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
