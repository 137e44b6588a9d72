"""OpenAPI 3.1 as the contract describes it: the bearer scheme, and 401/422/429 (plus 404 on the
by-id reads) on every operation with the contract's error schemas."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from . import serializers as s


class ContractAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        error = self._get_response_for_code(s.ErrorResponseSerializer, "401")
        responses.setdefault("401", {**error, "description": "Token missing, malformed or revoked"})
        responses.setdefault(
            "422",
            {**self._get_response_for_code(s.HTTPValidationErrorSerializer, "422"), "description": "Validation Error"},
        )
        responses.setdefault(
            "429",
            {**self._get_response_for_code(s.ErrorResponseSerializer, "429"), "description": "Rate limit exceeded"},
        )
        if self.method == "GET" and "{id}" in self.path:
            responses.setdefault(
                "404", {**self._get_response_for_code(s.ErrorResponseSerializer, "404"), "description": "Not found"}
            )
        return responses

    def get_tags(self):
        return ["v1"]


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerTokenAuthentication"
    name = "HTTPBearer"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer"}
