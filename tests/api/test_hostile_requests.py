"""What a hostile client can send: no shape of request is a 500, and no answer grows with the
request (issue 16: deep nesting, huge bodies, endless lists)."""

import json

import pytest
from django.test import override_settings

from transcription.api.wire.fields import TargetLanguageField

JOB_PATHS = ["/v1/api/transcribe", "/v1/api/subtitles", "/v1/api/burn-subtitles", "/v1/api/transcribe-playlist"]


def post(api, path, data: str):
    return api.post(path, data=data, content_type="application/json")


@pytest.mark.parametrize("opening,closing", [("[", "]"), ('{"a":', "}")])
def test_json_nested_1000_deep_is_a_422_on_the_body(api, opening, closing):
    deep = opening * 1000 + "1" + closing * 1000  # about 5 KB
    for body in (deep, json.dumps({"url": "https://x.test/v"})[:-1] + ', "target_languages": ' + deep + "}"):
        response = post(api, "/v1/api/subtitles", body)
        assert response.status_code == 422, response.content[:300]
        detail = response.json()["detail"]
        assert detail[0]["loc"][0] == "body" and detail[0]["type"] == "json_invalid"
        assert "nested" in detail[0]["msg"]


def test_a_body_over_the_limit_is_a_json_413(api, client):
    huge = json.dumps({"url": "https://x.test/v", "padding": "x" * (3 * 1024 * 1024)})
    response = post(api, "/v1/api/transcribe", huge)
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert "detail" in response.json() and "2.5 MB" in response.json()["detail"]
    # The same on the pages' forms (Django alone answers an HTML 400 there).
    form = client.post("/account/signup/", data={"email": "a@example.com", "padding": "x" * (3 * 1024 * 1024)})
    assert form.status_code == 413 and "detail" in form.json()


def test_the_body_limit_is_a_setting(api):
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
        response = post(api, "/v1/api/transcribe", json.dumps({"url": "https://x.test/" + "v" * 1000}))
    assert response.status_code == 413


@pytest.mark.parametrize("path", JOB_PATHS[1:])
def test_more_than_10_target_languages_is_a_422_before_any_lookup(api, path, monkeypatch):
    looked_up = []
    look_up = TargetLanguageField.to_internal_value
    monkeypatch.setattr(TargetLanguageField, "to_internal_value", lambda *args: looked_up.append(1) or look_up(*args))
    body = {"url": "https://x.test/v", "type": "subtitles", "target_languages": ["es"] * 300_000}
    response = post(api, path, json.dumps(body))
    assert looked_up == [], "the list's length is refused before any item is looked up"
    assert response.status_code == 422
    [entry] = response.json()["detail"]
    assert entry["loc"] == ["body", "target_languages"] and entry["type"] == "too_long"
    assert "10" in entry["msg"]
    # Eleven, all the same language, is refused as sent, before collapsing duplicates.
    eleven = post(api, path, json.dumps({**body, "target_languages": ["es"] * 11}))
    assert eleven.status_code == 422 and eleven.json()["detail"][0]["loc"] == ["body", "target_languages"]


def test_100000_unknown_languages_answer_a_small_422(api):
    body = {"url": "https://x.test/v", "target_languages": [f"no-such-language-{n}" for n in range(100_000)]}
    response = post(api, "/v1/api/subtitles", json.dumps(body))
    assert response.status_code == 422
    assert len(response.content) < 2_000


def test_ten_unknown_languages_are_each_named(api):
    body = {"url": "https://x.test/v", "target_languages": [f"no-such-language-{n}" for n in range(10)]}
    detail = post(api, "/v1/api/subtitles", json.dumps(body)).json()["detail"]
    assert [entry["loc"] for entry in detail] == [["body", "target_languages", n] for n in range(10)]


def test_the_playlist_preview_refuses_more_than_10_languages_in_the_query(api):
    query = "&".join(["target_languages=es"] * 500)
    response = api.get(f"/v1/api/playlist?url=https://x.test/list&type=subtitles&{query}")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "target_languages"]


def test_every_422_is_bounded_however_many_fields_fail(api):
    # A body whose every field is wrong names each once; the list never grows past a few dozen.
    body = {
        "url": 1,
        "language_code": 2,
        "verbatim": 3,
        "tag_audio_events": 4,
        "format": 5,
        "target_languages": [7] * 10,
    }
    detail = post(api, "/v1/api/subtitles", json.dumps(body)).json()["detail"]
    assert 5 <= len(detail) <= 30
