"""Issue 56: a body nested too deeply for Python's JSON decoder, sent to the website editor's save
(PATCH /jobs/<id>/segments), is the contract's 422 on `body`, as the REST door's parser answers it
(transcription.api.doors.parsers), never a RecursionError's 500; and one just shallow enough to decode is
refused as a bad edit, nothing saved."""

import pytest
from django.test import Client

from tests.factories import done_job_with_segments
from transcription.models import Job

pytestmark = pytest.mark.django_db


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


@pytest.fixture
def signed_in(account):
    client = Client()
    client.force_login(account.user)
    return client


@pytest.mark.parametrize(
    "body",
    [
        nested(100_000),  # the whole body: the decoder gives up
        '{"edits": ' + nested(100_000) + "}",
        '{"edits": [{"op": "text", "index": 0, "text": ' + nested(100_000) + "}]}",
        '{"edits": ' + nested(900) + "}",  # decoded, deep enough to trouble what reads it next
        '{"edits": [{"op": "text", "index": 0, "text": ' + nested(900) + "}]}",
    ],
    ids=["body", "edits", "text", "edits-900", "text-900"],
)
def test_deeply_nested_json_at_the_editor_is_a_422(signed_in, account, body):
    job = done_job_with_segments(account)
    answer = signed_in.patch(f"/jobs/{job.pk}/segments", body, content_type="application/json", HTTP_IF_MATCH='"v1"')
    assert answer.status_code == 422, answer.content[:300]
    assert answer.json()["detail"][0]["loc"][0] == "body"
    assert len(answer.content) < 10_000, "the answer does not echo the nesting back"
    assert Job.objects.get(pk=job.pk).segments.version == 1
