from rest_framework.throttling import BaseThrottle

from . import ratelimit


class AccountRateThrottle(BaseThrottle):
    """The POSTs (and DELETEs) count as job requests, the GETs as polls (the playlist preview included)."""

    def allow_request(self, request, view):
        bucket = ratelimit.POLLS if request.method in ("GET", "HEAD", "OPTIONS") else ratelimit.JOBS
        state = ratelimit.hit(request.user.pk, bucket)
        request.rate_limit = state
        return state.allowed

    def wait(self):
        return None


def rate_limit_headers(request) -> dict:
    state = getattr(request, "rate_limit", None)
    if state is None:
        return {}
    headers = {"X-RateLimit-Limit": str(state.limit), "X-RateLimit-Remaining": str(state.remaining)}
    if not state.allowed:
        headers["Retry-After"] = str(state.retry_after)
    return headers
