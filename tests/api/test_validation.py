"""422 bodies: {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}, one entry per field."""

import json

import pytest


def post(api, path, body):
    data = body if isinstance(body, str) else json.dumps(body)
    return api.post(path, data=data, content_type="application/json")


def errors(response):
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail
    for entry in detail:
        assert set(entry) == {"loc", "msg", "type"}
        assert isinstance(entry["msg"], str) and entry["msg"] and isinstance(entry["type"], str)
    return {tuple(entry["loc"]): entry for entry in detail}


@pytest.mark.parametrize(
    "path", ["/v1/api/transcribe", "/v1/api/subtitles", "/v1/api/burn-subtitles", "/v1/api/transcribe-playlist"]
)
def test_a_missing_url_is_named(api, path):
    found = errors(post(api, path, {}))
    assert found[("body", "url")]["type"] == "missing"


@pytest.mark.parametrize(
    "path,body,loc",
    [
        ("/v1/api/transcribe", {"url": 123}, ("body", "url")),
        ("/v1/api/transcribe", {"url": "https://x.test/v", "verbatim": "yes"}, ("body", "verbatim")),
        ("/v1/api/transcribe", {"url": "https://x.test/v", "verbatim": 1}, ("body", "verbatim")),
        ("/v1/api/transcribe", {"url": "https://x.test/v", "tag_audio_events": "true"}, ("body", "tag_audio_events")),
        ("/v1/api/transcribe", {"url": "https://x.test/v", "language_code": 5}, ("body", "language_code")),
        ("/v1/api/subtitles", {"url": "https://x.test/v", "format": "ass"}, ("body", "format")),
        ("/v1/api/subtitles", {"url": "https://x.test/v", "target_languages": "es"}, ("body", "target_languages")),
        ("/v1/api/burn-subtitles", {"url": "https://x.test/v", "quality": "8k"}, ("body", "quality")),
        ("/v1/api/burn-subtitles", {"url": "https://x.test/v", "font_size": "huge"}, ("body", "font_size")),
        ("/v1/api/burn-subtitles", {"url": "https://x.test/v", "background": None}, ("body", "background")),
        ("/v1/api/transcribe-playlist", {"url": "https://x.test/p", "type": "video"}, ("body", "type")),
    ],
)
def test_a_wrong_type_or_unknown_enum_value_is_named(api, path, body, loc):
    assert loc in errors(post(api, path, body))


def test_each_offending_field_gets_its_own_entry(api):
    found = errors(post(api, "/v1/api/burn-subtitles", {"quality": "8k", "font_size": "huge", "verbatim": "no"}))
    assert {("body", "url"), ("body", "quality"), ("body", "font_size"), ("body", "verbatim")} <= set(found)


def test_more_than_ten_target_languages_is_a_422_on_the_field(api):
    languages = ["es", "fr", "de", "it", "pt", "ca", "gl", "eo", "nl", "sv", "da"]
    found = errors(post(api, "/v1/api/subtitles", {"url": "https://x.test/v", "target_languages": languages}))
    assert ("body", "target_languages") in found
    assert (
        post(api, "/v1/api/subtitles", {"url": "https://x.test/v", "target_languages": languages[:10]}).status_code
        == 200
    )


def test_an_unknown_language_is_a_422_on_that_item(api):
    found = errors(
        post(api, "/v1/api/subtitles", {"url": "https://x.test/v", "target_languages": ["Spanish", "Elvish-ish", "fr"]})
    )
    assert ("body", "target_languages", 1) in found


def test_an_unknown_language_code_is_a_422(api):
    assert ("body", "language_code") in errors(
        post(api, "/v1/api/transcribe", {"url": "https://x.test/v", "language_code": "xx"})
    )


@pytest.mark.parametrize("code", ["en", "eng", "ES", "spa", "de", None])
def test_iso_639_1_and_639_3_codes_are_accepted(api, code):
    assert post(api, "/v1/api/transcribe", {"url": "https://x.test/v", "language_code": code}).status_code == 200


@pytest.mark.parametrize("body", ["{not json", "", "[1, 2]", '"text"', "null", '{"url": "a",}'])
def test_a_malformed_or_non_object_body_is_a_422(api, body):
    found = errors(post(api, "/v1/api/transcribe", body))
    assert ("body",) in found or ("body", "url") in found


def test_a_non_json_content_type_is_a_422(api):
    response = api.post(
        "/v1/api/transcribe", data="url=https://x.test/v", content_type="application/x-www-form-urlencoded"
    )
    assert ("body",) in errors(response)


@pytest.mark.parametrize("path", ["/v1/api/transcription/not-a-uuid", "/v1/api/batch/123", "/v1/api/transcription/%20"])
def test_a_non_uuid_path_id_is_a_422_on_the_path(api, path):
    assert ("path", "id") in errors(api.get(path))


def test_bad_query_parameters_are_named(api):
    assert ("query", "url") in errors(api.get("/v1/api/playlist"))
    found = errors(api.get("/v1/api/playlist?url=https://x.test/p&type=movie&quality=8k"))
    assert {("query", "type"), ("query", "quality")} <= set(found)
    languages = ",".join(["es", "fr", "de", "it", "pt", "ca", "gl", "eo", "nl", "sv", "da"])
    assert ("query", "target_languages") in errors(
        api.get(f"/v1/api/playlist?url=https://x.test/p&target_languages={languages}")
    )


def test_target_languages_are_refused_for_a_transcript_playlist(api):
    found = errors(post(api, "/v1/api/transcribe-playlist", {"url": "https://x.test/p", "target_languages": ["es"]}))
    assert ("body", "target_languages") in found


@pytest.mark.parametrize("url", ["", "not a url at all", " https://x.test/v", "https://x.test/a b", "http://x:port/"])
def test_a_url_that_is_not_an_absolute_uri_is_a_422_on_the_url(api, url):
    response = post(api, "/v1/api/transcribe", {"url": url})
    assert ("body", "url") in errors(response)
    (entry,) = response.json()["detail"]
    assert entry["type"] in ("url_parsing", "string_too_short")


@pytest.mark.parametrize("url", ["https://x.test/v?a=1#t=30", "http://[::1]:8080/v.mp4", "ftp://x.test/v", "urn:x:y"])
def test_any_absolute_uri_is_queued_and_left_to_the_job(api, url):
    assert post(api, "/v1/api/transcribe", {"url": url}).status_code == 200


def test_more_than_10_target_languages_is_a_422_even_when_they_repeat(api):
    assert ("body", "target_languages") in errors(
        post(api, "/v1/api/subtitles", {"url": "https://x.test/v", "target_languages": ["es"] * 11})
    )
