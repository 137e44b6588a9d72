"""Error bodies exactly as the contract says.

401/404/429 -> {"detail": "..."}; 422 -> {"detail": [{"loc": [...], "msg": "...", "type": "..."}]},
one entry per offending field. DRF's own errors are translated here so no view has to care.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.http import JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from transcription.dispatch import QueueUnavailable

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


class Busy(exceptions.APIException):
    """A 503 with Retry-After: the work is refused for now, not failed (the client comes back)."""

    status_code = 503

    def __init__(self, detail: str, retry_after: int):
        self.retry_after = retry_after
        super().__init__(detail)


# A 422 names at most this many problems: enough for every field of every request, and a body
# that does not grow with what a client sends.
MAX_ERRORS = 20


class RequestValidationError(exceptions.APIException):
    """A 422 whose entries already carry their `loc`."""

    status_code = 422

    def __init__(self, errors: list[dict]):
        self.errors = errors[:MAX_ERRORS]
        super().__init__("Validation error")


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


class BodyTooLarge(exceptions.APIException):
    """A 413: the body is over MAX_REQUEST_BODY_BYTES (transcription.api.front_door.body_too_large)."""

    status_code = 413

    def __init__(self, limit: int):
        super().__init__(f"The request body is larger than {_size(limit)}, the most this service accepts.")


def _size(limit: int) -> str:
    megabytes = limit / 1024 / 1024
    return f"{megabytes:.1f} MB" if megabytes >= 0.1 else f"{limit:,} bytes"


class Conflict(exceptions.APIException):
    """A 409: the resource is not in a state that allows the request (an upload a running job reads)."""

    status_code = 409


class RateLimited(exceptions.Throttled):
    """A 429: the account's window (or the address's, for requests without a valid token) is full."""

    def __init__(self, state):
        self.state = state
        super().__init__(wait=state.retry_after)


@dataclass(frozen=True)
class ErrorAnswer:
    status: int
    body: dict
    headers: dict[str, str]


class NotDone(exceptions.APIException):
    """409: the job has no text (yet) whose speakers could be named."""

    status_code = 409
    default_code = "not_done"


def error_answer(error: Exception) -> ErrorAnswer | None:
    """The contract's answer to a refusal of the front door, whatever the door: 401 with
    WWW-Authenticate, 404, 413, 422 (one entry per offending field), 429 and 503 with
    Retry-After. None for an exception that is not a refusal (a bug: the door's 500)."""
    if isinstance(error, RequestValidationError):
        return ErrorAnswer(422, {"detail": error.errors}, {})
    if isinstance(error, exceptions.NotAuthenticated):
        return ErrorAnswer(401, {"detail": MISSING_TOKEN}, {"WWW-Authenticate": "Bearer"})
    if isinstance(error, exceptions.AuthenticationFailed):
        return ErrorAnswer(401, {"detail": str(error.detail)}, {"WWW-Authenticate": "Bearer"})
    if isinstance(error, (Busy, QueueUnavailable)):
        detail = str(error.detail if isinstance(error, Busy) else error)
        return ErrorAnswer(503, {"detail": detail}, {"Retry-After": str(error.retry_after)})
    if isinstance(error, exceptions.Throttled):
        wait = int(error.wait or 1)  # type: ignore[attr-defined]  # DRF's Throttled sets .wait; its stubs omit it
        return ErrorAnswer(
            429, {"detail": f"Rate limit exceeded; try again in {wait} seconds."}, {"Retry-After": str(wait)}
        )
    if isinstance(error, (exceptions.NotFound, BodyTooLarge, NotDone, Conflict)):
        return ErrorAnswer(error.status_code, {"detail": str(error.detail)}, {})
    return None


def exception_handler(exc, context):
    """REST's answers: the front door's refusals as error_answer shapes them, and DRF's own parse
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
    return JsonResponse({"detail": "Internal error; the team has been told."}, status=500)
