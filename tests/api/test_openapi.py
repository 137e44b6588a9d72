"""The OpenAPI 3.1 document, and live responses checked against it."""

import re

import pytest
from django.test import Client, override_settings

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


NAMES_EXTENSIONS = {
    ("/v1/api/transcription/{id}/speakers", "post"),
    ("/v1/api/voices", "post"),
    ("/v1/api/voices", "get"),
    ("/v1/api/voices/{id}", "delete"),
}


def test_it_has_exactly_the_contracts_operations_and_marks_every_other_as_an_extension(document):
    found = {
        (path, method): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert {key for key, operation in found.items() if not operation.get("x-extension")} == OPERATIONS
    assert NAMES_EXTENSIONS <= set(found)
    for path, method in NAMES_EXTENSIONS:
        operation = found[(path, method)]
        assert "extension" in operation["description"].lower() and operation["x-extension"] is True
        assert {"401", "422", "429"} <= set(operation["responses"])
        # by id, or a voice's sample by `upload_id`
        assert ("404" in operation["responses"]) == ("{id}" in path or path == "/v1/api/voices" and method == "post")
    assert "## Extensions of this server" in document["info"]["description"]


def test_it_names_the_contracts_schemas(document):
    assert CONTRACT_SCHEMAS <= set(document["components"]["schemas"])


def test_every_operation_uses_the_bearer_scheme_and_lists_its_errors(document):
    schemes = document["components"]["securitySchemes"]
    assert any((s["type"], s["scheme"]) == ("http", "bearer") for s in schemes.values())
    for path, method in OPERATIONS:
        operation = document["paths"][path][method]
        assert any(set(item) & set(schemes) for item in operation["security"])
        codes = set(operation["responses"])
        assert {"200", "401", "422", "429"} <= codes, (path, method)
        # by id, or a queueing POST that names an upload (our extension) by upload_id
        names_an_upload = path.endswith(("/transcribe", "/subtitles", "/burn-subtitles"))
        assert ("404" in codes) == ("{id}" in path or names_an_upload), (path, method)
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


def test_the_enumerations_carry_the_contracts_names(document):
    schemas = document["components"]["schemas"]
    expected = {
        "State": {
            "waiting",
            "preparing",
            "downloading",
            "converting",
            "uploading",
            "processing",
            "merging",
            "aligning",
            "translating",
            "burning",
            "done",
            "failed",
        },
        "TranslationState": {"pending", "translating", "burning", "done", "failed"},
        "TranscriptionType": {"transcript", "subtitles", "burned"},
        "Quality": {"default", "hd", "uhd"},
        "FontSize": {"default", "large", "xl"},
        "SubtitleFormat": {"srt", "webvtt"},
    }
    for name, values in expected.items():
        assert set(schemas[name]["enum"]) == values, name
    assert not [name for name in schemas if name.endswith("Enum")], "no generated enum names are left"
    job = schemas["TranscriptionApiResponse"]["properties"]
    assert job["state"] == {"$ref": "#/components/schemas/State"}
    assert job["type"] == {"$ref": "#/components/schemas/TranscriptionType"}
    assert schemas["TranslationApiResponse"]["properties"]["state"] == {"$ref": "#/components/schemas/TranslationState"}


def test_path_ids_are_uuids_and_urls_are_uris(document):
    for path in ("/v1/api/transcription/{id}", "/v1/api/batch/{id}"):
        (parameter,) = document["paths"][path]["get"]["parameters"]
        assert parameter["in"] == "path" and parameter["schema"] == {"type": "string", "format": "uuid"}
    for name in ("TranscribeRequest", "SubtitlesRequest", "BurnSubtitlesRequest", "TranscribePlaylistRequest"):
        url = document["components"]["schemas"][name]["properties"]["url"]
        assert url["format"] == "uri" and url["maxLength"] == 2048, name
    preview = {p["name"]: p for p in document["paths"]["/v1/api/playlist"]["get"]["parameters"]}
    assert preview["url"]["schema"]["format"] == "uri" and preview["url"]["required"]
    assert preview["type"]["schema"] == {"$ref": "#/components/schemas/TranscriptionType"}


@override_settings(RATE_LIMIT_JOBS_PER_MINUTE=1000)
def test_languages_are_listed_as_the_server_reads_them(document, api, broker):
    import json

    schemas = document["components"]["schemas"]
    codes, names = schemas["LanguageCode"]["enum"], schemas["LanguageName"]["enum"]
    assert "" not in codes and {"en", "es", "haw", "yue"} <= set(codes)
    assert {"Spanish", "English", "Japanese"} <= set(names)
    language_code = schemas["TranscribeRequest"]["properties"]["language_code"]
    assert {"$ref": "#/components/schemas/LanguageCode"} in [
        {"$ref": branch.get("$ref")} for branch in language_code["oneOf"] if "$ref" in branch
    ] and {"type": "null"} in language_code["oneOf"]
    targets = schemas["SubtitlesRequest"]["properties"]["target_languages"]
    assert targets["items"] == {"$ref": "#/components/schemas/LanguageName"} and targets["maxItems"] == 10

    def status(body):
        return api.post("/v1/api/subtitles", data=json.dumps(body), content_type="application/json").status_code

    for code in codes:
        assert status({"url": "https://e.com/v", "language_code": code}) == 200, code
    for start in range(0, len(names), 10):
        assert status({"url": "https://e.com/v", "target_languages": names[start : start + 10]}) == 200
    assert status({"url": "https://e.com/v", "language_code": ""}) == 422


def test_every_operation_is_described_with_an_example(document):
    for path, method in OPERATIONS:
        operation = document["paths"][path][method]
        assert operation["summary"] and len(operation["description"]) > 80, (path, method)
        if method == "post":
            examples = operation["requestBody"]["content"]["application/json"]["examples"]
            assert examples and all(example["value"]["url"].startswith("https://") for example in examples.values())
        else:
            assert operation["parameters"], (path, method)


def test_the_description_has_the_prices_errors_and_polling_advice(document):
    from billing import pricing

    text = document["info"]["description"]
    assert "every 2 to 3 seconds" in text
    for status in ("401", "404", "422", "429"):
        assert f"| {status} |" in text
    burned = f"{pricing.base_multiplier('burned', 'uhd')}× at `uhd` (2160p)"
    assert burned in text and f"+{pricing.translation_multiplier('burned', 'hd')}× at `hd`" in text


def test_the_docs_page_is_served_from_this_server_without_inline_script(client):
    response = client.get("/v1/api/docs")
    page = response.content.decode()
    assert response.status_code == 200
    sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', page)
    assert sources and all(source.startswith("/") for source in sources), sources
    assert any("swagger-ui-bundle.js" in source for source in sources)
    script = client.get(next(source for source in sources if "script" in source))
    assert script.status_code == 200 and b"/v1/api/openapi.json" in script.content
    assert "<style" not in page and not re.search(r"<script(?![^>]*src=)", page)
