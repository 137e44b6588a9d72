"""The three POSTs take an upload's id in place of `url`, and a `prompt` for the recogniser."""

import json
import uuid

from tests.factories import UploadFactory
from transcription.models import Job


def post(api, path, body):
    return api.post(path, data=json.dumps(body), content_type="application/json")


def test_it_queues_a_job_of_an_upload_with_a_prompt(api, account, broker):
    upload = UploadFactory(account=account, has_video=True)
    prompt = "Elinor Dashwood, Barton Cottage, Mrs. Jennings"

    for path in ("/v1/api/transcribe", "/v1/api/subtitles", "/v1/api/burn-subtitles"):
        response = post(api, path, {"upload_id": str(upload.id), "prompt": prompt})
        assert response.status_code == 200, response.json()
        job = Job.objects.get(pk=response.json()["id"])
        assert job.upload == upload and job.url == f"upload:{upload.id}" and job.prompt == prompt
        assert api.get(f"/v1/api/transcription/{job.id}").json()["video_url"] == f"upload:{upload.id}"


def test_an_upload_of_another_account_or_none_is_a_404(api, other_account, broker):
    foreign = UploadFactory(account=other_account)
    for upload_id in (foreign.id, uuid.uuid4()):
        response = post(api, "/v1/api/transcribe", {"upload_id": str(upload_id)})
        assert response.status_code == 404
        assert response.json() == {"detail": "No upload with that id on this account."}
    assert not Job.objects.exists()


def test_an_upload_that_cannot_serve_the_job_is_a_422_on_upload_id(api, account, broker):
    receiving = UploadFactory(account=account, state="receiving", received=1000, duration=None)
    audio_only = UploadFactory(account=account, has_video=False)

    unfinished = post(api, "/v1/api/transcribe", {"upload_id": str(receiving.id)})
    assert unfinished.status_code == 422
    assert unfinished.json()["detail"] == [
        {
            "loc": ["body", "upload_id"],
            "msg": "The upload is not complete: 1000 of 227244 bytes received.",
            "type": "value_error",
        }
    ]
    no_picture = post(api, "/v1/api/burn-subtitles", {"upload_id": str(audio_only.id)})
    assert no_picture.status_code == 422
    assert no_picture.json()["detail"][0]["loc"] == ["body", "upload_id"]
    assert "no picture" in no_picture.json()["detail"][0]["msg"]
    assert not Job.objects.exists()


def test_one_source_exactly_and_every_bad_field_named(api, account, broker):
    upload = UploadFactory(account=account)
    both = post(api, "/v1/api/subtitles", {"upload_id": str(upload.id), "url": "https://example.com/v.mp4"})
    assert both.status_code == 422
    assert [entry["loc"] for entry in both.json()["detail"]] == [["body", "upload_id"]]

    neither = post(api, "/v1/api/transcribe", {"verbatim": "yes", "prompt": "x" * 801})
    assert neither.status_code == 422
    assert {tuple(entry["loc"]) for entry in neither.json()["detail"]} == {
        ("body", "url"),
        ("body", "verbatim"),
        ("body", "prompt"),
    }
    malformed = post(api, "/v1/api/transcribe", {"upload_id": "not-an-id", "prompt": 5})
    assert {tuple(entry["loc"]) for entry in malformed.json()["detail"]} == {("body", "upload_id"), ("body", "prompt")}
    assert not Job.objects.exists()
