"""`key_terms` (issue 54, item 4): names and terms recognition is biased towards, a list on every
door, kept on the job, refused with a 422 naming it beyond its limits."""

import json

import pytest

from tests.factories import JobFactory
from transcription.api.wire.fields import KEY_TERM_PATTERN
from transcription.job_options import KEY_TERM_MAX_LENGTH, KEY_TERMS_MAX
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
        (["Zor\x85vex"], ["body", "key_terms", 0], "A key term may not hold a control character"),
        (["\ufeff"], ["body", "key_terms", 0], "A key term may not be empty."),
        ([""], ["body", "key_terms", 0], "A key term may not be empty."),
        (None, ["body", "key_terms"], "This field may not be null."),
        (
            ["x" * (KEY_TERM_MAX_LENGTH + 1)],
            ["body", "key_terms", 0],
            f"A key term must have at most {KEY_TERM_MAX_LENGTH} characters.",
        ),
        (  # counted as sent, as the schema counts it: spaces around are no way past the limit
            [" " + "x" * KEY_TERM_MAX_LENGTH],
            ["body", "key_terms", 0],
            f"A key term must have at most {KEY_TERM_MAX_LENGTH} characters.",
        ),
        (
            [f"term{k}" for k in range(KEY_TERMS_MAX + 1)],
            ["body", "key_terms"],
            f"At most {KEY_TERMS_MAX} key terms are allowed.",
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
    most = [f"{k:02}" + "z" * (KEY_TERM_MAX_LENGTH - 2) for k in range(KEY_TERMS_MAX)]  # as many, as long
    for terms in (most, ["Ünïcødé 名前 Zorvex"], ["\u00a0Zorvex\u3000"]):
        response = post(api, "/v1/api/transcribe", {"url": "https://example.com/v.mp4", "key_terms": terms})
        assert response.status_code == 200, response.json()


def test_the_published_document_describes_the_field_and_its_limits(db):
    from transcription.api.doors.mcp_schemas import component

    for schema in ("TranscribeRequest", "SubtitlesRequest", "BurnSubtitlesRequest", "TranscribePlaylistRequest"):
        field = component(schema)["properties"]["key_terms"]
        assert field["type"] == "array" and field["maxItems"] == KEY_TERMS_MAX, field
        assert field["items"]["maxLength"] == KEY_TERM_MAX_LENGTH
        assert field["items"]["minLength"] == 1 and field["items"]["pattern"] == KEY_TERM_PATTERN
        assert f"at most {KEY_TERMS_MAX} terms" in field["description"]
