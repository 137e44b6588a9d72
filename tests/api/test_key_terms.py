"""`key_terms` (issue 54, item 4): names and terms recognition is biased towards, a list on every
door, kept on the job, refused with a 422 naming it beyond its limits."""

import json

import pytest

from tests.factories import JobFactory
from transcription.job_options import KEY_TERM_MAX_LENGTH, KEY_TERMS_MAX, KEY_TERMS_MAX_CHARS
from transcription.models import Job
from transcription.stages.pipeline_options import recognition_of
from transcription.writes import services

TERMS = ["Zorvex", "Quillberry", "Mr. Okonkwe-Laddis"]


def post(api, path, body):
    return api.post(path, data=json.dumps(body), content_type="application/json")


def test_every_post_keeps_the_terms_on_the_job_and_recognition_gets_them(api, account, broker):
    for path in ("/v1/api/transcribe", "/v1/api/subtitles", "/v1/api/burn-subtitles"):
        sent = [" Zorvex ", "Quillberry", "Zorvex", "Mr. Okonkwe-Laddis"]  # trimmed, a repeat kept once
        response = post(api, path, {"url": "https://example.com/v.mp4", "key_terms": sent})
        assert response.status_code == 200, response.json()
        job = Job.objects.get(pk=response.json()["id"])
        assert job.key_terms == TERMS
        assert recognition_of(job).key_terms == tuple(TERMS)
    left_out = post(api, "/v1/api/transcribe", {"url": "https://example.com/v.mp4"})
    assert Job.objects.get(pk=left_out.json()["id"]).key_terms == []


def test_a_retried_job_keeps_its_terms(account, broker):
    failed = JobFactory(account=account, state="failed", key_terms=TERMS, prompt="Barton Cottage")
    again = services.job_retry(failed.id)
    assert again.key_terms == TERMS and again.prompt == "Barton Cottage"


@pytest.mark.parametrize(
    "terms, loc, message",
    [
        ("Zorvex, Quillberry", ["body", "key_terms"], "Input should be a valid list."),
        (["Zorvex", 7], ["body", "key_terms", 1], "Input should be a valid string."),
        (["Zorvex", "  "], ["body", "key_terms", 1], "A key term may not be empty."),
        (["Zorvex", "Quill\nberry"], ["body", "key_terms", 1], "A key term may not hold a control character"),
        (["Zor\x00vex"], ["body", "key_terms", 0], "A key term may not hold a control character"),
        (["Zorvex\u2028"], ["body", "key_terms", 0], "A key term may not hold a control character"),
        (
            ["x" * (KEY_TERM_MAX_LENGTH + 1)],
            ["body", "key_terms", 0],
            f"A key term must have at most {KEY_TERM_MAX_LENGTH} characters.",
        ),
        (
            [f"term{k}" for k in range(KEY_TERMS_MAX + 1)],
            ["body", "key_terms"],
            f"At most {KEY_TERMS_MAX} key terms are allowed.",
        ),
        (
            [f"{k:02}" + "y" * 40 for k in range(10)],  # 10 terms of 42 characters: 438 joined
            ["body", "key_terms"],
            f"The key terms may have at most {KEY_TERMS_MAX_CHARS} characters together",
        ),
    ],
)
def test_terms_beyond_the_limits_are_a_422_naming_key_terms(api, account, broker, terms, loc, message):
    response = post(api, "/v1/api/subtitles", {"url": "https://example.com/v.mp4", "key_terms": terms})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert [entry["loc"] for entry in detail] == [loc]
    assert detail[0]["msg"].startswith(message), detail
    assert not Job.objects.exists()


def test_the_limits_themselves_are_taken(api, account, broker):
    most = [f"{k:02}" + "z" * 4 for k in range(KEY_TERMS_MAX)]  # 50 terms of 6: 398 characters joined
    assert len(", ".join(most)) <= KEY_TERMS_MAX_CHARS
    longest = ["w" * KEY_TERM_MAX_LENGTH]
    for terms in (most, longest):
        response = post(api, "/v1/api/transcribe", {"url": "https://example.com/v.mp4", "key_terms": terms})
        assert response.status_code == 200, response.json()


def test_the_published_document_describes_the_field_and_its_limits(db):
    from transcription.api.doors.mcp_schemas import component

    for schema in ("TranscribeRequest", "SubtitlesRequest", "BurnSubtitlesRequest", "TranscribePlaylistRequest"):
        field = component(schema)["properties"]["key_terms"]
        assert field["type"] == "array" and field["maxItems"] == KEY_TERMS_MAX, field
        assert field["items"]["maxLength"] == KEY_TERM_MAX_LENGTH
        assert f"{KEY_TERMS_MAX_CHARS} characters together" in field["description"]
