"""The job form queues what the API would: the API's serializers check it (same messages, on the
field they name), the API's rate limit counts it (one counter for both), the same services queue
it, and the worker charges it from the same minutes."""

import json
import re

import pytest
from django.test import override_settings

from accounts.services import account_create
from tests.support import feed, queued
from transcription.models import Batch, Job

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"


@pytest.fixture
def holder(client):
    account = account_create("holder@example.com", password=PASSWORD)
    client.force_login(account.user)
    return account


def post(client, **fields):
    data = {"type": "transcript", "format": "srt", "quality": "default", "font_size": "default", **fields}
    return client.post("/jobs/new/", data)


def test_a_burned_job_with_every_option_is_queued_like_the_apis(
    client, holder, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post(
            client,
            url="https://example.com/talk.mp4",
            type="burned",
            language_code="en",
            target_languages="Spanish, fr",
            quality="hd",
            font_size="large",
            background="on",
            verbatim="on",
            tag_audio_events="on",
            key_terms="Zorvex\r\nFox, Lee & Partners\r\n\r\nMr. Okonkwe-Laddis",
        )
    job = Job.objects.get(account=holder)
    assert job.key_terms == ["Zorvex", "Fox, Lee & Partners", "Mr. Okonkwe-Laddis"]  # one a line
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert (job.type, job.url, job.language_code, job.quality, job.font_size) == (
        "burned",
        "https://example.com/talk.mp4",
        "en",
        "hd",
        "large",
    )
    assert job.background and job.verbatim and job.tag_audio_events
    assert [t.language for t in job.translations.order_by("position")] == ["Spanish", "fr"]
    assert queued(broker) == [("media", "start_job", str(job.pk))]


def test_subtitles_keep_the_chosen_format_and_a_transcript_takes_no_translations(client, holder, broker):
    post(client, url="https://example.com/a.mp4", type="subtitles", format="webvtt")
    assert Job.objects.get().subtitle_format == "webvtt"


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"url": ""}, "url", "This field may not be blank."),
        ({"url": "not a url"}, "url", "Input should be a URL"),
        ({"url": "https://e.com/v", "language_code": "xx"}, "language_code", "not supported by Whisper"),
        (
            {"url": "https://e.com/v", "type": "subtitles", "target_languages": "Spanish, Elvish-ish"},
            "target_languages",
            "Item 2: Unknown language: 'Elvish-ish'",
        ),
        ({"url": "https://e.com/v", "type": "burned", "quality": "8k"}, "quality", "Input should be one of"),
        (
            {"url": "https://e.com/v", "key_terms": "Zorvex\n" + "x" * 21},
            "key_terms",
            "Item 2: A key term must have at most 20 characters.",
        ),
        (
            {"url": "https://e.com/p", "playlist": "on", "target_languages": "es"},
            "target_languages",
            "only allowed for type 'subtitles' or 'burned'",
        ),
    ],
)
def test_a_mistake_gets_the_apis_message_on_its_field(client, holder, broker, api, fields, field, message):
    response = post(client, **fields)
    assert response.status_code == 422
    errors = response.context["form"].errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert not Job.objects.exists() and not Batch.objects.exists()
    if field != "target_languages" or "playlist" not in fields:
        body = {key: value for key, value in fields.items() if key not in ("playlist",)}
        if "target_languages" in body:
            body["target_languages"] = [item.strip() for item in body["target_languages"].split(",")]
        if "key_terms" in body:
            body["key_terms"] = body["key_terms"].splitlines()
        path = {"burned": "/v1/api/burn-subtitles", "subtitles": "/v1/api/subtitles"}.get(
            body.pop("type", ""), "/v1/api/transcribe"
        )
        from_api = api.post(path, data=json.dumps(body), content_type="application/json").json()["detail"]
        api_message = re.sub(r"^Item \d+: ", "", message)  # the form names a list's item by its number
        assert any(api_message in entry["msg"] and entry["loc"][1] == field for entry in from_api), from_api


@override_settings(RATE_LIMIT_JOBS_PER_MINUTE=3)
def test_the_form_and_the_api_share_one_job_request_limit(client, holder, broker):
    from accounts.services import token_issue

    token = token_issue(holder)
    for _ in range(2):
        assert (
            client.post(
                "/v1/api/transcribe",
                data=json.dumps({"url": "https://e.com/v"}),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {token}",
            ).status_code
            == 200
        )
    assert post(client, url="https://e.com/v").status_code == 302
    refused = post(client, url="https://e.com/v")
    assert refused.status_code == 429
    assert "Too many job requests" in html_errors(refused) and "limit is 3 a minute" in html_errors(refused)
    assert Job.objects.count() == 3


def html_errors(response) -> str:
    return " ".join(response.context["form"].non_field_errors())


def test_a_playlist_is_queued_as_a_batch(client, holder, broker, media_server):
    items = [("One", media_server.url("/files/speech.mp4"), 9), ("Two", media_server.url("/files/speech.wav"), 5)]
    media_server.routes["/feeds/form.xml"] = lambda req: req.send_bytes(feed(items, "Form feed"), "application/rss+xml")
    with override_settings(ALLOW_PRIVATE_URLS=True):
        response = post(
            client, url=media_server.url("/feeds/form.xml"), playlist="on", type="subtitles", target_languages="es"
        )
    batch = Batch.objects.get(account=holder)
    assert response.status_code == 302 and response["Location"] == f"/batches/{batch.pk}/"
    assert batch.title == "Form feed" and batch.jobs.count() == 2
    assert all(job.target_languages == ["es"] for job in batch.jobs.all())
    page = client.get(response["Location"]).content.decode()
    assert "Form feed" in page and page.count("data-job-id=") == 2


def test_a_playlist_that_cannot_be_listed_says_why_on_the_url(client, holder):
    response = post(client, url="http://127.0.0.1:9/list", playlist="on")
    assert response.status_code == 422
    assert "private network" in " ".join(response.context["form"].errors["url"])


def test_the_form_shows_the_balance_and_the_prices(client, holder):
    page = client.get("/jobs/new/").content.decode()
    assert "10 minutes" in page and 'id="prices"' in page
    assert '<option value="es">Spanish</option>' in page
