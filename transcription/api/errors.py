"""Error bodies exactly as the contract says.

401/404/429 -> {"detail": "..."}; 422 -> {"detail": [{"loc": [...], "msg": "...", "type": "..."}]},
one entry per offending field. DRF's own errors are translated here so no view has to care.
"""

from __future__ import annotations

import logging

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


def exception_handler(exc, context):
    if isinstance(exc, RequestValidationError):
        return Response({"detail": exc.errors}, status=422)
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
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        message = (
            "Missing API token: send 'Authorization: Bearer <token>'."
            if isinstance(exc, exceptions.NotAuthenticated)
            else str(exc.detail)
        )
        return Response({"detail": message}, status=401, headers={"WWW-Authenticate": "Bearer"})
    if isinstance(exc, (Busy, QueueUnavailable)):
        return Response(
            {"detail": str(exc.detail if isinstance(exc, Busy) else exc)},
            status=503,
            headers={"Retry-After": str(exc.retry_after)},
        )
    if isinstance(exc, exceptions.Throttled):
        wait = int(exc.wait or 1)
        return Response(
            {"detail": f"Rate limit exceeded; try again in {wait} seconds."},
            status=429,
            headers={"Retry-After": str(wait)},
        )
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"detail": str(response.data["detail"])}
    return response


def json_not_found(request, exception=None):
    return JsonResponse({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)


def json_server_error(request):
    return JsonResponse({"detail": "Internal error; the team has been told."}, status=500)
