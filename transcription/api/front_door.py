"""The front door: every rule a request meets on its way to an operation, written once.

The service has several doors onto one account: the REST API (transcription.api.views), the MCP
server (mcp_server), the website (website.views), the poll fast lane (polls, poll_front) and any
door added later (the OpenAI-compatible endpoints). Each door is an adapter of a few lines:

1. it builds a `Caller` once per request: `caller_from_token` (a bearer token) or
   `caller_from_session` (a signed-in person), with the client's address as the limits count it
   (ratelimit.client_address) and the door's name;
2. it calls `perform(caller, operation, arguments)`, which counts the request in the account's
   limit (`admit`) and runs the operation (transcription.api.operations: argument validation that
   names every offending field, ownership: another account's id is a 404);
3. it answers what came back, or the `Refusal` raised (an APIException: 401, 404, 413, 422, 429,
   503), in its own shape: `error_answer` gives the contract's (status, body, headers), which REST
   sends as is, and which MCP turns into tool errors and the OpenAI endpoints into OpenAI's shape.

The rules, one place each:

- token valid and not revoked, its login active (accounts.authentication.token_holder: the token
  cache holds only active logins and is forgotten when a login's status changes);
- a per-address limit on requests without a valid token (`caller_from_token`: a 401 is counted
  against the address, and once over the limit it is a 429 with Retry-After);
- the job-request and poll limits of the account (`admit`, ratelimit's sliding windows);
- the body limit (`body_too_large`, used by config.middleware for Django and by config.asgi for
  /mcp and chunked bodies);
- the answer's shape (`error_answer`, `rate_limit_headers`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from rest_framework import exceptions

from accounts.authentication import TokenRefused, token_holder_for_header
from accounts.models import Account

from . import operations, ratelimit
from .error_bodies import MISSING_TOKEN, BodyTooLarge, ErrorAnswer, RateLimited, error_answer

__all__ = [
    "OPERATIONS",
    "BodyTooLarge",
    "Caller",
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

# The doors, as a Caller names them (for logs and for the rules a door may bend: docs/decisions.md).
REST = "rest"
MCP = "mcp"
WEBSITE = "website"
POLL_FAST_LANE = "poll"
UPLOADS = "uploads"
OPENAI = "openai"


@dataclass
class Caller:
    """Who calls (the account, its login, the token's digest or None for a signed-in session) and
    from where (the client's address as the limits count it, the door). Built once per request;
    `rate` is the request's count in its account's window, set by `admit`."""

    account_id: int
    user_id: int
    token_digest: str | None
    address: str
    transport: str
    rate: ratelimit.RateState | None = field(default=None, compare=False)

    @property
    def account(self) -> Account:
        return Account(pk=self.account_id)  # operations and services only need the id


def caller_from_token(authorization: str | None, address: str, transport: str) -> Caller:
    """The Caller behind an `Authorization` header, or a refusal: 401 (missing, malformed, unknown,
    revoked token, or a deactivated login), 429 once the address sent too many of those."""
    try:
        holder = token_holder_for_header(authorization)
    except TokenRefused as refused:
        # No valid token: no account to count against, so the client's address is counted
        # (token guessing and floods of anonymous requests are throttled at every door).
        state = ratelimit.hit_address(address)
        if not state.allowed:
            raise RateLimited(state) from None
        if refused.missing:
            raise exceptions.NotAuthenticated(MISSING_TOKEN) from None
        raise exceptions.AuthenticationFailed(str(refused)) from None
    return Caller(holder.account_id, holder.user_id, holder.digest, address, transport)


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


# --- The operations every door may perform ---------------------------------------------------


# What an operation answers: the contract's object, a list (list_voices), or nothing (a 204).
ResponseBody = dict[str, Any] | list[dict[str, Any]] | None


@dataclass(frozen=True)
class Operation:
    bucket: str  # what it counts as: a job request or a poll
    run: Callable[..., ResponseBody]  # (caller, arguments, request) -> the contract's response body


OPERATIONS: dict[str, Operation] = {
    "transcribe": Operation(ratelimit.JOBS, lambda c, a, r: operations.transcribe(c.account, a)),
    "create_subtitles": Operation(ratelimit.JOBS, lambda c, a, r: operations.create_subtitles(c.account, a)),
    "burn_subtitles": Operation(ratelimit.JOBS, lambda c, a, r: operations.burn_subtitles(c.account, a)),
    "transcribe_playlist": Operation(ratelimit.JOBS, lambda c, a, r: operations.transcribe_playlist(c.account, a)),
    # Reads take {"id": …} (any spelling of a UUID; a malformed one is a 422 on ["path", "id"]).
    "get_transcription": Operation(
        ratelimit.POLLS, lambda c, a, r: operations.get_transcription(c.account_id, a.get("id"), r)
    ),
    "get_batch": Operation(ratelimit.POLLS, lambda c, a, r: operations.get_batch(c.account_id, a.get("id"), r)),
    "preview_playlist": Operation(ratelimit.POLLS, lambda c, a, r: operations.preview_playlist(c.account_id, a)),
    "get_balance": Operation(ratelimit.POLLS, lambda c, a, r: operations.get_balance(c.account_id)),
    # Extensions (docs/decisions.md): speakers' names and enrolled voices; writes count as job requests.
    "rename_speakers": Operation(
        ratelimit.JOBS,
        lambda c, a, r: operations.rename_speakers(c.account_id, a.get("id"), _without_id(a), r),
    ),
    "create_voice": Operation(ratelimit.JOBS, lambda c, a, r: operations.create_voice(c.account, a)),
    "list_voices": Operation(ratelimit.POLLS, lambda c, a, r: operations.list_voices(c.account_id)),
    "delete_voice": Operation(ratelimit.JOBS, lambda c, a, r: operations.delete_voice(c.account_id, a.get("id"))),
    # Uploads (transcription.api.uploads streams the bytes of a new one after admit(caller, JOBS)).
    "get_upload": Operation(ratelimit.POLLS, lambda c, a, r: operations.get_upload(c.account_id, a.get("id"))),
    "delete_upload": Operation(ratelimit.POLLS, lambda c, a, r: operations.delete_upload(c.account_id, a.get("id"))),
}


def _without_id(arguments: dict) -> dict:
    """An operation's body when the door passed the path's id beside it."""
    return {name: value for name, value in arguments.items() if name != "id"}


def perform(
    caller: Caller, name: str, arguments: dict | Callable[[], dict] | None = None, request=None
) -> ResponseBody:
    """Count the request (`admit`), then run operation `name` for the caller: its response body,
    or a refusal (RequestValidationError naming every offending field, NotFound for an id of
    another account, Busy, QueueUnavailable). `arguments` may be a function that reads them, for a
    door whose parsing can fail after the count (REST's malformed JSON is a 422 that counts).
    `request` makes links absolute to its host (PUBLIC_BASE_URL without one)."""
    operation = OPERATIONS[name]
    admit(caller, operation.bucket)
    if callable(arguments):
        arguments = arguments()
    return operation.run(caller, arguments if arguments is not None else {}, request)


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


def body_too_large(length: int) -> BodyTooLarge | None:
    """The refusal of a body of `length` bytes, or None when it is within MAX_REQUEST_BODY_BYTES."""
    limit = body_limit()
    if limit is not None and length > limit:
        return BodyTooLarge(limit)
    return None
