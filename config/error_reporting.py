"""What happens to an error nobody handled: it is logged with the request's id, mailed to `ADMINS`
(Django's own mail_admins handler, when ADMINS is set) and sent to a Sentry-compatible receiver
(when SENTRY_DSN is set: Sentry, GlitchTip, Bugsink...), so the 500's body can say the operators
were told, and quote the id that finds the log line.

The request id is the client's `X-Request-ID` when it is a plain token (a proxy's), else a new one;
every answer carries it back in `X-Request-ID`, and every log line of the request names it."""

from __future__ import annotations

import logging
import re
import uuid

from django.conf import settings

REQUEST_ID_HEADER = "X-Request-ID"
_PLAIN_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def request_id_of(request) -> str:
    """The request's id (set by RequestIdMiddleware; a fresh one for a request it did not see)."""
    found = getattr(request, "request_id", None)
    if found is None:
        found = plain_request_id(request.headers.get(REQUEST_ID_HEADER, "") if hasattr(request, "headers") else "")
        request.request_id = found
    return found


def plain_request_id(sent: str) -> str:
    """`sent` (a client's or proxy's X-Request-ID) when it is a plain token, else a new id."""
    return sent if _PLAIN_ID.fullmatch(sent) else uuid.uuid4().hex


class RequestIdMiddleware:
    """Gives each request its id before anything can fail, and sends it back on the answer."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_of(request)
        response = self.get_response(request)
        response.headers.setdefault(REQUEST_ID_HEADER, request_id)
        return response


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record: the request's, for Django's request logging (which passes
    the request along), else "-"."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        record.request_id = request_id_of(request) if request is not None else "-"
        return True


def errors_reported() -> bool:
    """Whether an unhandled error reaches someone beyond the log: mailed to ADMINS or sent to a DSN."""
    return bool(settings.ADMINS or settings.SENTRY_DSN)


def start_sentry(dsn: str, environment: str) -> None:
    """Send unhandled errors (and ERROR log records, such as a job's internal error in a worker) to
    the Sentry-compatible receiver at `dsn`. No performance tracing; the SDK's default of sending no
    personal data (no cookies, no user) is kept."""
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        traces_sample_rate=0.0,
    )
