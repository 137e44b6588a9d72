import json
import uuid

from tests.factories import JobFactory
from tests.support import queued

JOB_FIELDS = {
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
TRANSLATION_FIELDS = {"language", "state", "srt", "webvtt", "burned_video_url", "error"}


def post(api, path, body):
    return api.post(path, data=json.dumps(body), content_type="application/json")


def test_a_transcribe_post_answers_the_id_at_once_and_the_job_waits(api, broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post(api, "/v1/api/transcribe", {"url": "https://example.com/v.mp4"})
        assert queued(broker) == [], "nothing is queued before the commit"
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id"}
    for callback in callbacks:
        callback()
    assert queued(broker) == [("media", "start_job", body["id"])], "the task is queued only once the row is committed"

    job = api.get(f"/v1/api/transcription/{body['id']}").json()
    assert set(job) == JOB_FIELDS
    assert job["id"] == body["id"]
    assert job["state"] == "waiting" and job["progress"] == 0
    assert job["type"] == "transcript" and job["verbatim"] is False
    assert job["quality"] == "default" and job["font_size"] == "default" and job["background"] is False
    assert job["txt"] is None and job["srt"] is None and job["webvtt"] is None and job["burned_video_url"] is None
    assert job["error"] is None and job["duration"] is None
    assert job["is_preview"] is False and job["preview_minutes"] is None and job["translations"] == []
    assert job["video_url"] == "https://example.com/v.mp4"


def test_subtitles_echo_the_format_and_list_translations_as_sent(api):
    response = post(
        api,
        "/v1/api/subtitles",
        {
            "url": "https://example.com/v",
            "format": "webvtt",
            "target_languages": ["Spanish", "es", "CA", "french"],
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert body["format"] == "webvtt" and set(body) == {"id", "format"}
    job = api.get(f"/v1/api/transcription/{body['id']}").json()
    assert [t["language"] for t in job["translations"]] == ["Spanish", "CA", "french"]  # "es" collapsed into Spanish
    for translation in job["translations"]:
        assert set(translation) == TRANSLATION_FIELDS and translation["state"] == "pending"


def test_subtitles_default_to_srt(api):
    assert post(api, "/v1/api/subtitles", {"url": "https://example.com/v"}).json()["format"] == "srt"


def test_burn_subtitles_keep_their_options(api):
    body = post(
        api,
        "/v1/api/burn-subtitles",
        {
            "url": "https://example.com/v",
            "quality": "uhd",
            "font_size": "xl",
            "background": True,
            "verbatim": True,
        },
    ).json()
    job = api.get(f"/v1/api/transcription/{body['id']}").json()
    assert (job["type"], job["quality"], job["font_size"], job["background"], job["verbatim"]) == (
        "burned",
        "uhd",
        "xl",
        True,
        True,
    )


def test_an_unknown_id_is_a_404(api):
    response = api.get(f"/v1/api/transcription/{uuid.uuid4()}")
    assert response.status_code == 404 and set(response.json()) == {"detail"}
    response = api.get(f"/v1/api/batch/{uuid.uuid4()}")
    assert response.status_code == 404 and set(response.json()) == {"detail"}


def test_another_accounts_job_is_a_404_not_a_403(api, other_account):
    job = JobFactory(account=other_account)
    assert api.get(f"/v1/api/transcription/{job.id}").status_code == 404


def test_an_unknown_path_under_the_api_is_a_json_404(api):
    response = api.get("/v1/api/nothing-here")
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}


def test_a_wrong_method_is_a_405_not_a_500(api):
    assert api.get("/v1/api/transcribe").status_code == 405
    assert api.delete(f"/v1/api/transcription/{uuid.uuid4()}").status_code == 405
