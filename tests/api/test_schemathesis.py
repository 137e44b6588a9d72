"""A property-based run generated from our own OpenAPI document over every endpoint: no 5xx,
and every response (200, 401, 404, 422, 429) matches the document."""

import pytest
import schemathesis
from django.test import override_settings
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application

schema = schemathesis.openapi.from_wsgi("/v1/api/openapi.json", application)


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """Like Django's test Client: a request must not close the test's database connection."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@override_settings(RATE_LIMIT_JOBS_PER_MINUTE=100000, RATE_LIMIT_POLLS_PER_MINUTE=100000, FETCH_TIMEOUT_SECONDS=5)
@pytest.mark.django_db
def test_every_endpoint_keeps_to_the_document(case, token):
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)


@schema.parametrize()
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@pytest.mark.django_db
def test_without_a_token_every_endpoint_answers_a_documented_401(case):
    response = case.call_and_validate(checks=CHECKS)
    assert response.status_code == 401
