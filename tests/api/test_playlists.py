"""GET /v1/api/playlist and POST /v1/api/transcribe-playlist on an RSS feed served from 127.0.0.1."""

import json
import math

import pytest
from django.test import override_settings

from billing.models import LedgerEntry
from tests.support import feed

pytestmark = pytest.mark.usefixtures("allow_private")

PREVIEW_FIELDS = {
    "id",
    "title",
    "total",
    "skipped",
    "max_videos",
    "is_channel",
    "tab",
    "videos",
    "needed_seconds",
    "remaining_seconds",
    "fits",
    "unknown_durations",
}
VIDEO_FIELDS = {"id", "title", "duration", "thumbnail", "is_age_restricted", "is_live", "language"}


@pytest.fixture
def allow_private():
    with override_settings(ALLOW_PRIVATE_URLS=True):
        yield


@pytest.fixture
def feed_url(media_server):
    items = [(f"Talk {i}", media_server.url(f"/files/speech.mp4?talk={i}"), 100) for i in range(3)]
    media_server.routes["/feeds/three.xml"] = lambda req: req.send_bytes(
        feed(items, "Three talks"), "application/rss+xml"
    )
    return media_server.url("/feeds/three.xml")


def preview(api, url, **query):
    params = "&".join(f"{k}={v}" for k, v in {"url": url, **query}.items())
    response = api.get(f"/v1/api/playlist?{params}")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_preview_has_every_field_and_costs_from_the_pricing_rules(api, feed_url):
    body = preview(api, feed_url)
    assert set(body) == PREVIEW_FIELDS
    assert all(set(video) == VIDEO_FIELDS for video in body["videos"])
    assert (body["title"], body["total"], body["skipped"], body["max_videos"]) == ("Three talks", 3, 0, 25)
    assert body["is_channel"] is False and body["tab"] == "videos" and body["id"]
    assert body["needed_seconds"] == 300
    assert body["remaining_seconds"] == 600 and body["fits"] is True
    assert preview(api, feed_url, type="subtitles", target_languages="es,fr")["needed_seconds"] == 900
    assert preview(api, feed_url, type="subtitles", target_languages="es&target_languages=fr")["needed_seconds"] == 900
    assert preview(api, feed_url, type="transcript", target_languages="es")["needed_seconds"] == 300
    for quality, multiplier in (("default", 3), ("hd", 4), ("uhd", 5)):
        body = preview(api, feed_url, type="burned", quality=quality)
        assert body["needed_seconds"] == 300 * multiplier
        assert body["fits"] is (300 * multiplier <= 600)


def test_the_preview_follows_the_ledger(api, account, feed_url):
    LedgerEntry.objects.create(account=account, kind="grant", source="staff", seconds=1000, reason="test")
    body = preview(api, feed_url, type="burned", quality="uhd")
    assert body["remaining_seconds"] == 1600 and body["needed_seconds"] == 1500 and body["fits"] is True


def test_a_link_that_is_not_a_playlist_is_a_422_on_the_url(api, media_server):
    response = api.get(f"/v1/api/playlist?url={media_server.url('/files/speech.mp4')}")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "url"]
    response = api.post(
        "/v1/api/transcribe-playlist",
        data=json.dumps({"url": media_server.url("/status/404")}),
        content_type="application/json",
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "url"] and "404" in response.json()["detail"][0]["msg"]


def test_queueing_a_playlist_makes_a_batch_of_jobs_in_order(api, feed_url):
    response = api.post(
        "/v1/api/transcribe-playlist",
        content_type="application/json",
        data=json.dumps(
            {"url": feed_url, "type": "subtitles", "target_languages": ["es"], "key_terms": ["Zorvex", "Quillberry"]}
        ),
    )
    assert response.status_code == 200
    queued = response.json()
    from transcription.models import Batch, Job

    # the key terms kept on the batch and each of its jobs (issue 54, item 4)
    assert Batch.objects.get(pk=queued["batch_id"]).key_terms == ["Zorvex", "Quillberry"]
    assert [job.key_terms for job in Job.objects.filter(batch_id=queued["batch_id"])] == [["Zorvex", "Quillberry"]] * 3
    assert set(queued) == {"batch_id", "title", "count", "skipped", "ids"}
    assert (queued["title"], queued["count"], queued["skipped"], len(queued["ids"])) == ("Three talks", 3, 0, 3)

    batch = api.get(f"/v1/api/batch/{queued['batch_id']}").json()
    assert set(batch) == {"batch_id", "title", "items"}
    assert [item["id"] for item in batch["items"]] == queued["ids"]
    for item in batch["items"]:
        assert item["type"] == "subtitles" and item["state"] == "waiting"
        assert item["txt"] is None and item["srt"] is None and item["webvtt"] is None
        assert [t["language"] for t in item["translations"]] == ["es"]
    assert api.get(f"/v1/api/transcription/{queued['ids'][0]}").json()["video_url"].endswith("talk=0")


def test_another_accounts_batch_is_a_404(api, other_account):
    from transcription.models import Batch

    batch = Batch.objects.create(account=other_account, url="https://e.com/p", type="transcript")
    assert api.get(f"/v1/api/batch/{batch.id}").status_code == 404


def test_a_feed_without_durations_is_measured_from_each_media_header(api, media_server):
    from harness.media_files import media_duration

    items = [(f"Episode {i}", media_server.url(f"/files/speech.mp4?episode={i}"), None) for i in range(2)]
    media_server.routes["/feeds/no-durations.xml"] = lambda req: req.send_bytes(feed(items), "application/rss+xml")
    seconds = math.ceil(media_duration(media_server.folder / "speech.mp4"))

    body = preview(api, media_server.url("/feeds/no-durations.xml"))

    assert [video["duration"] for video in body["videos"]] == [seconds, seconds]
    assert (body["needed_seconds"], body["unknown_durations"], body["fits"]) == (2 * seconds, 0, True)


def test_a_length_that_cannot_be_found_is_said_so_and_never_fits(api, media_server):
    items = [
        ("Known", media_server.url("/files/speech.mp4?known"), 100),
        ("Gone", media_server.url("/status/404"), None),
    ]
    media_server.routes["/feeds/gone.xml"] = lambda req: req.send_bytes(feed(items), "application/rss+xml")

    body = preview(api, media_server.url("/feeds/gone.xml"))

    assert [video["duration"] for video in body["videos"]] == [100, 0]
    assert (body["needed_seconds"], body["unknown_durations"], body["fits"]) == (100, 1, False)
    assert body["remaining_seconds"] == 600, "the balance would cover what is known: still not said to fit"
