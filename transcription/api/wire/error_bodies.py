"""Error bodies exactly as the contract says.

401/404/429 -> {"detail": "..."}; 422 -> {"detail": [{"loc": [...], "msg": "...", "type": "..."}]},
one entry per offending field. DRF's own errors are translated here so no view has to care.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from django.http import HttpResponseBase, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from config.error_reporting import REQUEST_ID_HEADER, errors_reported, request_id_of
from transcription.scheduling.dispatch import QueueUnavailable
from transcription.storage import files

logger = logging.getLogger(__name__)

# DRF error codes -> the `type` names clients of pydantic-style APIs know.
_TYPE_BY_CODE = {
    "required": "missing",
    "null": "missing",
    "invalid": "value_error",
    "blank": "string_too_short",
    "max_length": "too_long",
    "min_length": "too_short",
    "invalid_choice": "enum",
    "not_a_list": "list_type",
    "empty": "too_short",
    "not_a_string": "string_type",
    "not_a_boolean": "bool_type",
    "unknown_language": "value_error",
    "not_allowed": "value_error",
    "uuid_parsing": "uuid_parsing",
    "not_a_uri": "url_parsing",
}


class Refusal(exceptions.APIException):
    """A refusal that carries its own answer, as DRF's APIException carries its status: `answer()`
    is the contract's (status, body, headers), which each door renders in its shape (REST as is,
    MCP as a tool error, the website on its form, the OpenAI door in OpenAI's). A new refusal is a
    subclass; no door's code changes."""

    def headers(self) -> dict[str, str]:
        return {}

    def body(self) -> dict:
        return {"detail": str(self.detail)}

    def answer(self) -> ErrorAnswer:
        return ErrorAnswer(self.status_code, self.body(), self.headers())


class Busy(Refusal):
    """A 503 with Retry-After: the work is refused for now, not failed (the client comes back)."""

    status_code = 503

    def __init__(self, detail: str, retry_after: int):
        self.retry_after = retry_after
        super().__init__(detail)

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


# A 422 names at most this many problems: enough for every field of every request, and a body
# that does not grow with what a client sends.
MAX_ERRORS = 20


class RequestValidationError(Refusal):
    """A 422 whose entries already carry their `loc`."""

    status_code = 422

    def __init__(self, errors: list[dict]):
        self.errors = errors[:MAX_ERRORS]
        super().__init__("Validation error")

    def body(self) -> dict:
        return {"detail": self.errors}


def validation_errors(detail, location: str) -> list[dict]:
    """Flatten a DRF ValidationError detail into contract entries under `location` (body/query)."""
    errors: list[dict] = []

    def walk(node, loc):
        if isinstance(node, dict):
            for key, value in node.items():
                key = str(key)
                if key == "non_field_errors":
                    walk(value, loc)
                else:
                    walk(value, [*loc, int(key) if key.isdigit() else key])
        elif isinstance(node, list) and node and all(isinstance(item, exceptions.ErrorDetail) for item in node):
            item = node[0]
            errors.append(
                {"loc": loc, "msg": str(item), "type": _TYPE_BY_CODE.get(item.code, item.code or "value_error")}
            )
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if item:
                    walk(item, [*loc, index])
        elif isinstance(node, exceptions.ErrorDetail):
            errors.append(
                {"loc": loc, "msg": str(node), "type": _TYPE_BY_CODE.get(node.code, node.code or "value_error")}
            )

    walk(detail, [location])
    return errors[:MAX_ERRORS]


MISSING_TOKEN = "Missing API token: send 'Authorization: Bearer <token>'."


class DoorRefusal(Refusal):
    """A refusal of a door's own protocol (tus's 405, 409, 412, 415, 423; a missing CSRF token), with
    the status, message and headers it is raised with."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        self.status_code = status
        self.extra_headers = dict(headers or {})
        super().__init__(message)

    def headers(self) -> dict[str, str]:
        return self.extra_headers


class StreamRefused(Refusal):
    """A live stream (/v1/realtime) refused: the account's cap of streams at once, or no minutes
    left (`code`: "too_many_streams", "no_minutes")."""

    status_code = 429

    def __init__(self, detail: str, code: str):
        self.refusal_code = code
        super().__init__(detail)


class NotAuthenticated(Refusal, exceptions.NotAuthenticated):
    """A 401: no token was sent."""

    def __init__(self):
        super().__init__(MISSING_TOKEN)

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": "Bearer"}


class AuthenticationFailed(Refusal, exceptions.AuthenticationFailed):
    """A 401: the token is malformed, unknown or revoked, or its login deactivated."""

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": "Bearer"}


class NotFound(Refusal, exceptions.NotFound):
    """A 404: no such id on this account (another account's id is one too)."""


class RequestBodyTooLarge(Refusal):
    """A 413: the body is over MAX_REQUEST_BODY_BYTES (transcription.api.front.front_door.body_too_large)."""

    status_code = 413

    def __init__(self, limit: int):
        super().__init__(f"The request body is larger than {_size(limit)}, the most this service accepts.")


def _size(limit: int) -> str:
    megabytes = limit / 1024 / 1024
    return f"{megabytes:.1f} MB" if megabytes >= 0.1 else f"{limit:,} bytes"


class Conflict(Refusal):
    """A 409: the resource is not in a state that allows the request (an upload a running job reads)."""

    status_code = 409


class NotDone(Conflict):
    """409: the job has no text (yet) whose speakers could be named."""

    default_code = "not_done"


class PreconditionFailed(Refusal):
    """412: a change sent without the If-Match of the version it was made on, or with a stale one
    (another editor saved first): the client reads the document again, nothing is overwritten."""

    status_code = 412

    def __init__(self, detail: str, etag: str):
        self.etag = etag
        super().__init__(detail)

    def headers(self) -> dict[str, str]:
        return {"ETag": self.etag}


class RateLimited(Refusal, exceptions.Throttled):
    """A 429: the account's window (or the address's, for requests without a valid token) is full."""

    def __init__(self, state):
        self.state = state
        super().__init__(wait=state.retry_after)

    def body(self) -> dict:
        return {"detail": f"Rate limit exceeded; try again in {self.wait_seconds()} seconds."}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.wait_seconds())}

    def wait_seconds(self) -> int:
        return int(self.wait or 1)  # type: ignore[attr-defined]  # DRF's Throttled sets .wait; its stubs omit it


@dataclass(frozen=True)
class ErrorAnswer:
    status: int
    body: dict
    headers: dict[str, str]


def as_refusal(error: Exception) -> Refusal | None:
    """`error` as the refusal it is: ours carry their answer; the few raised where this module
    cannot be imported (DRF's authentication, the broker check in transcription.scheduling.dispatch) are
    translated once, here. None for anything else: a bug, the door's 500."""
    if isinstance(error, Refusal):
        return error
    if isinstance(error, QueueUnavailable):
        return Busy(str(error), error.retry_after)
    if isinstance(error, files.store_errors()):  # the bucket is down or refuses: nothing was lost
        files.count_error("door")
        return Busy(files.STORE_BUSY, files.STORE_RETRY_AFTER_SECONDS)
    if isinstance(error, exceptions.NotAuthenticated):
        return NotAuthenticated()
    if isinstance(error, exceptions.AuthenticationFailed):
        return AuthenticationFailed(str(error.detail))
    if isinstance(error, exceptions.NotFound):
        return NotFound(str(error.detail))
    return None


def error_answer(error: Exception) -> ErrorAnswer | None:
    """The contract's answer to a refusal of the front door, whatever the door: 401 with
    WWW-Authenticate, 404, 409, 413, 422 (one entry per offending field), 429 and 503 with
    Retry-After. None for an exception that is not a refusal (a bug: the door's 500)."""
    refusal = as_refusal(error)
    return refusal.answer() if refusal is not None else None


def exception_handler(exc, context):
    """REST's answers: the front door's refusals as they answer themselves, and DRF's own parse
    errors as the contract's 422."""
    if isinstance(exc, exceptions.ValidationError):
        return Response({"detail": validation_errors(exc.detail, "body")}, status=422)
    if isinstance(exc, exceptions.ParseError):
        return Response(
            {"detail": [{"loc": ["body"], "msg": f"Malformed JSON: {exc.detail}", "type": "json_invalid"}]}, status=422
        )
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return Response(
            {
                "detail": [
                    {
                        "loc": ["body"],
                        "msg": "The body must be JSON (Content-Type: application/json).",
                        "type": "json_invalid",
                    }
                ]
            },
            status=422,
        )
    answer = error_answer(exc)
    if answer is not None:
        return Response(answer.body, status=answer.status, headers=answer.headers)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"detail": str(response.data["detail"])}
    return response


def json_not_found(request, exception=None):
    return JsonResponse({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)


def json_server_error(request):
    """The 500 of every Django path: a JSON body naming the request's id (config.error_reporting),
    which finds the error's log line; it says the operators were told only when they were."""
    request_id = request_id_of(request)
    told = "the operators have been told" if errors_reported() else "quote it to the operators"
    response = JsonResponse({"detail": f"Internal error (request id {request_id}); {told}."}, status=500)
    response.headers[REQUEST_ID_HEADER] = request_id
    return response


def openai_server_error(response: HttpResponseBase) -> JsonResponse:
    """json_server_error's answer (asgi_door.server_error's, for the OpenAI door) in OpenAI's error
    shape, with its headers (the request id, the protective ones). The SDKs are told not to retry
    (x-should-retry, as for a failed job): a bug fails again, and a retried speech request may
    make and charge a second job."""
    message = json.loads(response.content)["detail"]  # type: ignore[attr-defined]
    error = {"message": message, "type": "server_error", "param": None, "code": "internal_error"}
    shaped = JsonResponse({"error": error}, status=500, headers={"x-should-retry": "false"})
    for name, value in response.items():
        if name.lower() not in ("content-type", "content-length"):
            shaped[name] = value
    return shaped
