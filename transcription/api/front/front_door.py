"""The front door: every rule a request meets on its way to an operation, written once.

The service has several doors onto one account: the REST API (transcription.api.doors.views), the MCP
server (mcp_server), the website (website.views), the poll fast lane (polls, poll_front) and any
door added later (the OpenAI-compatible endpoints). Each door is an adapter of a few lines:

1. it builds a `Caller` once per request: `caller_from_token` (a bearer token) or
   `caller_from_session` (a signed-in person), with the client's address as the limits count it
   (ratelimit.client_address) and the door's name;
2. it calls `perform(caller, operation, arguments)`, which counts the request in the account's
   limit (`admit`) and runs the operation (transcription.api.front.operations: argument validation that
   names every offending field, ownership: another account's id is a 404);
3. it answers what came back, or the `Refusal` raised (an APIException: 401, 404, 413, 422, 429,
   503), in its own shape: `error_answer` gives the contract's (status, body, headers), which REST
   sends as is, and which MCP turns into tool errors and the OpenAI endpoints into OpenAI's shape.

The rules, one place each:

- token valid and not revoked, its login active (accounts.authentication.token_holder: the token
  cache holds only active logins and is forgotten when a login's status changes); at the live
  door, a live key instead (accounts.authentication: signed, a few minutes, its login active);
- a per-address limit on requests without a valid token (`caller_from_token`: a 401 is counted
  against the address, and once over the limit it is a 429 with Retry-After);
- the job-request and poll limits of the account (`admit`, ratelimit's sliding windows);
- the body limit (`body_too_large`, used by config.middleware for Django and by config.asgi for
  /mcp and chunked bodies);
- the answer's shape (`error_answer`, `rate_limit_headers`).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from accounts.authentication import TokenRefused, token_holder_for_header
from accounts.models import Account
from transcription.api.front import ratelimit
from transcription.api.front.caller import (  # noqa: F401 (the doors' names)
    MCP,
    OPENAI,
    REALTIME,
    REST,
    UPLOADS,
    WEBSITE,
    Caller,
    Operation,
    ResponseBody,
)
from transcription.api.wire.error_bodies import (
    AuthenticationFailed,
    ErrorAnswer,
    NotAuthenticated,
    RateLimited,
    RequestBodyTooLarge,
    error_answer,
)

__all__ = [
    "RequestBodyTooLarge",
    "Caller",
    "Operation",
    "ErrorAnswer",
    "RateLimited",
    "admit",
    "body_too_large",
    "caller_from_session",
    "caller_from_token",
    "error_answer",
    "perform",
    "rate_limit_headers",
]


# The doors that take a live key (accounts.authentication: the website's Live page) for a token.
LIVE_KEY_DOORS = frozenset({REALTIME})


def caller_from_token(authorization: str | None, address: str, transport: str) -> Caller:
    """The Caller behind an `Authorization` header, or a refusal: 401 (missing, malformed, unknown,
    revoked token, or a deactivated login; at a door of LIVE_KEY_DOORS, a live key expired or of a
    deactivated login), 429 once the address sent too many of those."""
    try:
        holder = token_holder_for_header(authorization, live_keys=transport in LIVE_KEY_DOORS)
    except TokenRefused as refused:
        # No valid token: no account to count against, so the client's address is counted
        # (token guessing and floods of anonymous requests are throttled at every door).
        state = ratelimit.hit_address(address)
        if not state.allowed:
            raise RateLimited(state) from None
        if refused.missing:
            raise NotAuthenticated() from None
        raise AuthenticationFailed(str(refused)) from None
    return Caller(holder.account_id, holder.user_id, holder.digest or None, address, transport)


def caller_from_session(user, address: str, transport: str = WEBSITE) -> Caller | None:
    """The Caller of a signed-in person, or None: not signed in, a deactivated login (Django's
    session middleware drops those already), or a login without an account (staff)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    account_id = Account.objects.filter(user=user).values_list("pk", flat=True).first()
    if account_id is None:
        return None
    return Caller(account_id, user.pk, None, address, transport)


def admit(caller: Caller, bucket: str) -> ratelimit.RateState:
    """Count the request in the account's `bucket` (ratelimit.JOBS or POLLS); a 429 when full.
    A request is counted once: a second call for the same request answers the first count."""
    if caller.rate is None:
        caller.rate = ratelimit.hit(caller.account_id, bucket)
    if not caller.rate.allowed:
        raise RateLimited(caller.rate)
    return caller.rate


def perform(
    caller: Caller, operation: Operation, arguments: dict | Callable[[], dict] | None = None, request=None
) -> ResponseBody:
    """Count the request (`admit`), then run `operation` (one of operations.py's) for the caller:
    its response body, or a refusal (RequestValidationError naming every offending field,
    NotFound for an id of another account, Busy, QueueUnavailable). `arguments` may be a function
    that reads them, for a door whose parsing can fail after the count (REST's malformed JSON is a
    422 that counts). `request` makes links absolute to its host (PUBLIC_BASE_URL without one)."""
    admit(caller, operation.bucket)
    if callable(arguments):
        arguments = arguments()
    return operation(caller, arguments if arguments is not None else {}, request)


# --- The answer's shape (error_bodies.error_answer: the contract's status, body and headers) --------


def rate_limit_headers(state: ratelimit.RateState | None) -> dict[str, str]:
    if state is None:
        return {}
    headers = {"X-RateLimit-Limit": str(state.limit), "X-RateLimit-Remaining": str(state.remaining)}
    if not state.allowed:
        headers["Retry-After"] = str(state.retry_after)
    return headers


# --- Body limit -----------------------------------------------------------------------------


def body_limit() -> int | None:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE  # MAX_REQUEST_BODY_BYTES


def body_too_large(length: int) -> RequestBodyTooLarge | None:
    """The refusal of a body of `length` bytes, or None when it is within MAX_REQUEST_BODY_BYTES."""
    limit = body_limit()
    if limit is not None and length > limit:
        return RequestBodyTooLarge(limit)
    return None
