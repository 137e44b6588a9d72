"""Result files behind signed, expiring links, and their deletion after the retention period."""

import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from unittest import mock

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client, override_settings
from django.utils import timezone

from tests.factories import JobFactory, TranslationFactory
from transcription.models import Job
from transcription.storage import files
from transcription.storage.artifacts import absolute_url
from transcription.upkeep import retention
from transcription.writes import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored():
    """A file in storage, as the burn worker leaves one; removed afterwards."""
    names = []

    def store(name, content=b"\x00\x00\x00\x18ftypmp42 not really a video"):
        default_storage.delete(name)
        names.append(default_storage.save(name, ContentFile(content)))
        return names[-1]

    yield store
    for name in names:
        default_storage.delete(name)


def burned_name(account) -> str:
    """The storage name of a new burned job's video (a link works only while its job's account may
    have it)."""
    return files.burned_name(JobFactory.create(account=account, type="burned", state="done").id, None)


def _path(url: str) -> str:
    """The path of an absolute link, for Django's test client."""
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def test_a_signed_link_serves_the_file_without_a_token(client, account, stored):
    name = stored(burned_name(account), b"the burned video")
    url = absolute_url(name)
    assert url.startswith("http") and name not in url.split("/v1/files/")[0]
    response = client.get(_path(url))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"the burned video"
    assert 'filename="video.mp4"' in response["Content-Disposition"]


def test_a_video_player_can_seek_with_byte_ranges(client, account, stored):
    content = bytes(range(256)) * 40  # 10,240 bytes
    path = _path(absolute_url(stored(burned_name(account), content)))
    whole = client.get(path)
    assert whole["Accept-Ranges"] == "bytes"
    for header, first, last in (
        ("bytes=0-1", 0, 1),
        ("bytes=100-", 100, 10239),
        ("bytes=-16", 10224, 10239),
        ("bytes=10000-99999", 10000, 10239),
    ):
        response = client.get(path, HTTP_RANGE=header)
        assert response.status_code == 206, header
        assert response["Content-Range"] == f"bytes {first}-{last}/10240"
        assert response["Content-Type"] == "video/mp4"
        body = b"".join(response.streaming_content)
        assert body == content[first : last + 1] and int(response["Content-Length"]) == len(body)
    for ignored in ("bytes=0-1,5-9", "lines=1-2", "bytes=9-3"):
        response = client.get(path, HTTP_RANGE=ignored)
        assert response.status_code == 200 and b"".join(response.streaming_content) == content, ignored
    beyond = client.get(path, HTTP_RANGE="bytes=10240-")
    assert beyond.status_code == 416 and beyond["Content-Range"] == "bytes */10240"


def test_a_tampered_link_is_refused(client, account, stored):
    name = stored(burned_name(account))
    path = _path(absolute_url(name))
    token = path.rsplit("/", 1)[1]
    signed_value, signature = token.split(":", 1)
    other = stored(burned_name(account))
    forged = f"/v1/files/{absolute_url(other).rsplit('/', 1)[1].split(':', 1)[0]}:{signature}"
    for bad in (path[:-2] + ("AA" if not path.endswith("AA") else "BB"), forged, "/v1/files/burned-video.mp4"):
        response = client.get(bad)
        assert response.status_code == 404, bad
        assert response.json() == {"detail": "Not found."}


def test_an_expired_link_is_refused(client, account, stored):
    name = stored(burned_name(account))
    made_an_hour_ago = time.time() - 3600
    with mock.patch("django.core.signing.time.time", return_value=made_an_hour_ago):
        path = _path(absolute_url(name))
    with override_settings(ARTIFACT_LINK_SECONDS=3599):
        response = client.get(path)
    with override_settings(ARTIFACT_LINK_SECONDS=3601):
        assert client.get(path).status_code == 200, "not yet expired"
    assert response.status_code == 410
    assert response.json() == {"detail": "This link has expired."}
    assert client.get(path).status_code == 200, "the default 7 days have not passed"


def _job(account, state="done", **fields):
    return JobFactory(account=account, type="burned", state=state, **fields)


def test_retention_deletes_old_videos_and_keeps_recent_ones(client, account, stored):
    old = _job(account)
    old_video = stored(f"burned/{old.id}/video.mp4")
    old_translated = stored(f"burned/{old.id}/video.es.mp4")
    Job.objects.filter(pk=old.pk).update(burned_video=old_video)
    old_source = stored(f"sources/{old.id}.video")  # kept to burn again (issue 46), as long as its videos
    TranslationFactory(job=old, state="done", burned_video=old_translated)
    Job.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(days=31))
    recent = _job(account)
    recent_video = stored(f"burned/{recent.id}/video.mp4")
    Job.objects.filter(pk=recent.pk).update(burned_video=recent_video, updated_at=timezone.now() - timedelta(days=29))
    link = _path(absolute_url(old_video))

    result = retention.delete_expired_artifacts()

    assert result["videos"] == 2
    assert not default_storage.exists(old_video) and not default_storage.exists(old_translated)
    assert not default_storage.exists(old_source)
    assert default_storage.exists(recent_video)
    old.refresh_from_db()
    assert old.burned_video is None and old.translations.get().burned_video is None
    assert client.get(link).status_code == 410


def test_audio_and_sources_of_ended_jobs_are_swept_but_not_of_running_ones(account, stored):
    running = _job(account, state="processing")
    ended = _job(account, state="failed")
    # a done burned job's source is kept with its video, to burn it again after an edit (issue 46)
    burned = _job(account, state="done", burned_video="burned/x/video.mp4")
    keep = [
        stored(f"audio/{running.id}.wav"),
        stored(f"sources/{running.id}.video"),
        stored(f"sources/{burned.id}.video"),
    ]
    drop = [stored(f"audio/{ended.id}.wav"), stored(f"sources/{ended.id}.video"), stored(f"audio/{uuid.uuid4()}.wav")]
    drop.append(stored(f"audio/{burned.id}.wav"))
    unrelated = stored("audio/notes.txt")

    retention.delete_expired_artifacts()

    assert all(default_storage.exists(name) for name in keep)
    assert not any(default_storage.exists(name) for name in drop)
    assert default_storage.exists(unrelated), "a file that is not a job's is left alone"


def test_forgetting_artifacts_clears_the_poll_document(api, account, stored):
    job = _job(account)
    name = stored(f"burned/{job.id}/video.mp4")
    Job.objects.filter(pk=job.pk).update(burned_video=name)
    assert (
        api.get(f"/v1/api/transcription/{job.id}").json()["burned_video_url"].startswith("http://testserver/v1/files/")
    )
    services.job_forget_artifacts(job.id)
    assert api.get(f"/v1/api/transcription/{job.id}").json()["burned_video_url"] is None


def test_behind_a_tls_proxy_links_say_https_and_the_public_host(api, account, stored):
    job = _job(account)
    Job.objects.filter(pk=job.pk).update(burned_video=stored(f"burned/{job.id}/video.mp4", b"video"))
    direct = api.get(f"/v1/api/transcription/{job.id}").json()["burned_video_url"]
    assert direct.startswith("http://testserver/v1/files/")

    settings_of = [
        sys.executable,
        "-c",
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
        "'config.settings'); django.setup(); from django.conf import settings as s; "
        "print(getattr(s, 'SECURE_PROXY_SSL_HEADER', None), s.USE_X_FORWARDED_HOST)",
    ]
    trusted = subprocess.run(
        settings_of,
        env={**os.environ, "TRUST_PROXY_HEADERS": "true"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert trusted == ["('HTTP_X_FORWARDED_PROTO',", "'https')", "True"]
    with override_settings(
        SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
        USE_X_FORWARDED_HOST=True,
        ALLOWED_HOSTS=["testserver", "media.example.com"],
    ):
        proxied = api.get(
            f"/v1/api/transcription/{job.id}", HTTP_X_FORWARDED_PROTO="https", HTTP_X_FORWARDED_HOST="media.example.com"
        ).json()["burned_video_url"]
    assert proxied.startswith("https://media.example.com/v1/files/")
    assert api.get(_path(proxied)).status_code == 200


def test_range_values_of_any_length_are_416_or_the_whole_file(client, account, stored):
    content = b"0123456789" * 100
    path = _path(absolute_url(stored(burned_name(account), content)))
    huge = "9" * 5000
    past_the_end = client.get(path, HTTP_RANGE=f"bytes={huge}-")
    assert past_the_end.status_code == 416 and past_the_end["Content-Range"] == "bytes */1000"
    for header in (f"bytes=0-{huge}", f"bytes=-{huge}", f"bytes={'0' * 5000}5-{huge}"):
        response = client.get(path, HTTP_RANGE=header)
        assert response.status_code == 206, header
        first = 5 if header.startswith("bytes=00") else 0
        assert response["Content-Range"] == f"bytes {first}-999/1000"
        assert b"".join(response.streaming_content) == content[first:]


# --- revocation reaches links (issue 32) -----------------------------------------------------------


def _polled_link(api, job) -> str:
    return _path(api.get(f"/v1/api/transcription/{job.id}").json()["burned_video_url"])


def _burned_job(account, stored):
    job = JobFactory(account=account, type="burned", state="done")
    job.burned_video = stored(files.burned_name(job.id, None), b"the burned video")
    job.save(update_fields=["burned_video"])
    return job


def test_a_revoked_tokens_links_stop_working(api, client, account, stored):
    from accounts.services import token_issue, token_revoke

    job = _burned_job(account, stored)
    leaked = _polled_link(api, job)
    assert client.get(leaked).status_code == 200
    token_revoke(account, by=account.user)
    refused = client.get(leaked)
    assert refused.status_code == 410 and refused.json() == {
        "detail": "This link has been revoked. Ask the API for a new one."
    }
    fresh = Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(account, by=account.user)}")
    assert client.get(_polled_link(fresh, job)).status_code == 200, "the new token's links work"


def test_a_replaced_tokens_links_stop_working(api, client, account, stored):
    from accounts.services import token_issue

    job = _burned_job(account, stored)
    leaked = _polled_link(api, job)
    token_issue(account, by=account.user)  # replaces the token `api` uses
    assert client.get(leaked).status_code == 410


def test_a_deactivated_accounts_links_stop_working(api, client, account, stored):
    job = _burned_job(account, stored)
    leaked = _polled_link(api, job)
    account.user.is_active = False
    account.user.save(update_fields=["is_active"])
    assert client.get(leaked).status_code == 410
    account.user.is_active = True
    account.user.save(update_fields=["is_active"])
    assert client.get(leaked).status_code == 200, "re-activated: what was not revoked works again"


def test_links_made_before_links_carried_their_moment_are_revoked_too(client, account, stored, token):
    from django.core import signing
    from django.urls import reverse

    from accounts.services import token_revoke

    name = stored(burned_name(account))
    old = reverse(
        "artifact", kwargs={"token": signing.TimestampSigner(salt="transcription.artifacts").sign_object(name)}
    )
    assert client.get(old).status_code == 200
    token_revoke(account)
    assert client.get(old).status_code == 410


def test_a_link_to_a_file_no_job_holds_is_gone(client, stored):
    name = stored(f"burned/{uuid.uuid4()}/video.mp4")
    assert client.get(_path(absolute_url(name))).status_code == 410


def test_links_of_a_deactivated_account_stay_dead_after_reactivation(api, client, account, stored):
    from accounts.services import account_deactivate, account_reactivate

    job = _burned_job(account, stored)
    leaked = _polled_link(api, job)
    account_deactivate(account)
    assert client.get(leaked).status_code == 410
    account_reactivate(account)
    assert client.get(leaked).status_code == 410
    assert client.get(_polled_link(api, job)).status_code == 200, "the same token's new links work"
