"""The OpenAPI 3.1 document, and live responses checked against it."""

import pytest
from django.test import Client

CONTRACT_SCHEMAS = {
    "TranscriptionApiResponse",
    "TranslationApiResponse",
    "QueuedJob",
    "QueuedSubtitlesJob",
    "QueuedBatch",
    "BatchStatus",
    "PlaylistPreview",
    "PlaylistVideo",
    "ErrorResponse",
    "HTTPValidationError",
    "ValidationError",
}
OPERATIONS = {
    ("/v1/api/transcribe", "post"),
    ("/v1/api/subtitles", "post"),
    ("/v1/api/burn-subtitles", "post"),
    ("/v1/api/transcribe-playlist", "post"),
    ("/v1/api/transcription/{id}", "get"),
    ("/v1/api/batch/{id}", "get"),
    ("/v1/api/playlist", "get"),
}


@pytest.fixture(scope="module")
def document():
    response = Client().get("/v1/api/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_it_declares_openapi_3_1_and_version_1_0_0(document):
    assert document["openapi"].startswith("3.1.")
    assert document["info"]["version"] == "1.0.0"


def test_it_has_exactly_the_contracts_operations(document):
    found = {
        (path, method)
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert found == OPERATIONS


def test_it_names_the_contracts_schemas(document):
    assert CONTRACT_SCHEMAS <= set(document["components"]["schemas"])


def test_every_operation_uses_the_bearer_scheme_and_lists_its_errors(document):
    schemes = document["components"]["securitySchemes"]
    assert any(s == {"type": "http", "scheme": "bearer"} for s in schemes.values())
    for path, method in OPERATIONS:
        operation = document["paths"][path][method]
        assert any(set(item) & set(schemes) for item in operation["security"])
        codes = set(operation["responses"])
        assert {"200", "401", "422", "429"} <= codes, (path, method)
        assert ("404" in codes) == ("{id}" in path), (path, method)
        assert operation["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith(
            "/HTTPValidationError"
        )
        assert operation["responses"]["401"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")


def test_the_job_schema_has_every_field_of_the_contract(document):
    job = document["components"]["schemas"]["TranscriptionApiResponse"]
    assert set(job["properties"]) == {
        "id",
        "state",
        "progress",
        "type",
        "verbatim",
        "quality",
        "font_size",
        "background",
        "created_at",
        "updated_at",
        "txt",
        "srt",
        "webvtt",
        "burned_video_url",
        "video_url",
        "duration",
        "error",
        "is_preview",
        "preview_minutes",
        "translations",
    }
    assert set(job["required"]) == {
        "id",
        "state",
        "progress",
        "type",
        "verbatim",
        "quality",
        "font_size",
        "background",
        "created_at",
        "updated_at",
    }


def test_the_docs_page_shows_the_document(client):
    response = client.get("/v1/api/docs")
    assert response.status_code == 200 and b"openapi.json" in response.content
