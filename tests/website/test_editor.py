"""The job page's transcript editor, server side (issue 46, item 3): the job's media served to its
owner with byte ranges, the segments read and corrected through the API's operations (If-Match,
412, 422 naming every bad edit), the page carrying the subtitle renderer's rules, and the kept
audio swept with the job's other files. The page itself is tested in Chromium:
tests/e2e/test_transcript_editor.py."""

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.utils import timezone

from tests.factories import JobFactory, UploadFactory, done_job_with_segments
from transcription.models import Job
from transcription.pipeline.transcripts import captions
from transcription.storage import files
from transcription.upkeep import retention

AUDIO = b"RIFF" + bytes(range(256)) * 40  # 10,244 bytes: what is served is compared, not decoded


@pytest.fixture
def signed_in(account):
    client = Client()
    client.force_login(account.user)
    return client


@pytest.fixture
def stored():
    names = []

    def store(name, content=AUDIO):
        default_storage.delete(name)
        names.append(default_storage.save(name, ContentFile(content)))
        return names[-1]

    yield store
    for name in names:
        default_storage.delete(name)


def media(job) -> str:
    return f"/jobs/{job.pk}/media"


def segments(job) -> str:
    return f"/jobs/{job.pk}/segments"


def test_the_kept_audio_plays_to_its_owner_with_byte_ranges(signed_in, account, stored):
    job = done_job_with_segments(account)
    stored(files.playback_name(job.pk))

    whole = signed_in.get(media(job))
    assert whole.status_code == 200 and whole["Content-Type"] == "audio/wav"
    assert whole["Accept-Ranges"] == "bytes" and b"".join(whole.streaming_content) == AUDIO

    part = signed_in.get(media(job), HTTP_RANGE="bytes=100-199")
    assert part.status_code == 206
    assert part["Content-Range"] == f"bytes 100-199/{len(AUDIO)}" and part["Content-Length"] == "100"
    assert b"".join(part.streaming_content) == AUDIO[100:200]

    tail = signed_in.get(media(job), HTTP_RANGE="bytes=-44")
    assert tail.status_code == 206 and b"".join(tail.streaming_content) == AUDIO[-44:]
    past = signed_in.get(media(job), HTTP_RANGE=f"bytes={len(AUDIO)}-")
    assert past.status_code == 416 and past["Content-Range"] == f"bytes */{len(AUDIO)}"


def test_an_uploaded_video_is_played_while_it_is_kept_then_the_audio(signed_in, account, stored):
    upload = UploadFactory(account=account, filename="interview.mp4")
    job = done_job_with_segments(account, upload=upload, url=f"upload:{upload.id}")
    stored(files.playback_name(job.pk))
    stored(files.upload_name(upload.pk), b"\x00\x00\x00\x18ftypmp42 the picture")

    page = signed_in.get(f"/jobs/{job.pk}/")
    assert b'<video controls preload="metadata" src="/jobs/' in page.content
    answer = signed_in.get(media(job))
    assert answer["Content-Type"] == "video/mp4" and b"".join(answer.streaming_content).endswith(b"the picture")

    default_storage.delete(files.upload_name(upload.pk))
    page = signed_in.get(f"/jobs/{job.pk}/")
    assert b'<audio controls preload="metadata" src="/jobs/' in page.content
    assert signed_in.get(media(job))["Content-Type"] == "audio/wav"


def test_an_upload_browsers_do_not_play_gives_way_to_the_kept_audio(signed_in, account, stored):
    upload = UploadFactory(account=account, filename="meeting.mkv")
    job = done_job_with_segments(account, upload=upload, url=f"upload:{upload.id}")
    stored(files.playback_name(job.pk))
    stored(files.upload_name(upload.pk), b"\x1aE\xdf\xa3 matroska")
    answer = signed_in.get(media(job))
    assert answer["Content-Type"] == "audio/wav" and b"".join(answer.streaming_content) == AUDIO


def test_another_accounts_media_and_segments_are_not_found(signed_in, other_account, stored):
    theirs = done_job_with_segments(other_account)
    stored(files.playback_name(theirs.pk))
    assert signed_in.get(media(theirs)).status_code == 404
    assert signed_in.get(segments(theirs)).status_code == 404
    answer = signed_in.patch(
        segments(theirs),
        json.dumps({"edits": [{"op": "text", "index": 0, "text": "Mine now."}]}),
        content_type="application/json",
        HTTP_IF_MATCH='"v1"',
    )
    assert answer.status_code == 404
    assert Job.objects.get(pk=theirs.pk).segments.version == 1


def test_media_no_longer_kept_is_a_404_and_the_page_says_so(signed_in, account):
    job = done_job_with_segments(account)
    assert signed_in.get(media(job)).status_code == 404
    page = signed_in.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="editor-no-media"' in page and 'id="editor"' in page


def test_signed_out_the_editor_asks_for_a_login(account):
    job = done_job_with_segments(account)
    for path in (media(job), segments(job)):
        answer = Client().get(path)
        assert answer.status_code == 302 and "/login/" in answer["Location"]


def test_segments_are_read_and_corrected_with_if_match(signed_in, account):
    job = done_job_with_segments(account)
    read = signed_in.get(segments(job))
    assert read.status_code == 200 and read["ETag"] == '"v1"'
    assert [s["speaker"] for s in read.json()["segments"]] == [1, 2, 1]

    edits = [
        {"op": "text", "index": 0, "text": "Good evening, how are you today?"},
        {"op": "speaker", "index": 2, "speaker": 2},
    ]
    saved = signed_in.patch(
        segments(job), json.dumps({"edits": edits}), content_type="application/json", HTTP_IF_MATCH='"v1"'
    )
    assert saved.status_code == 200, saved.json()
    assert saved["ETag"] == saved.json()["etag"] == '"v2"'
    job.refresh_from_db()
    assert "Good evening" in job.srt and job.segments.history[-1]["door"] == "website"
    assert [s["speaker"] for s in job.segments.document()] == [1, 2, 2]

    stale = signed_in.patch(
        segments(job), json.dumps({"edits": edits}), content_type="application/json", HTTP_IF_MATCH='"v1"'
    )
    assert stale.status_code == 412 and stale["ETag"] == '"v2"'
    assert "changed since you read it" in stale.json()["detail"]
    missing = signed_in.patch(segments(job), json.dumps({"edits": edits}), content_type="application/json")
    assert missing.status_code == 412


def test_bad_edits_and_bodies_are_422s_naming_them(signed_in, account):
    job = done_job_with_segments(account)
    bad = [{"op": "text", "index": 0, "text": "a --> b"}, {"op": "speaker", "index": 9, "speaker": 1}]
    answer = signed_in.patch(
        segments(job), json.dumps({"edits": bad}), content_type="application/json", HTTP_IF_MATCH='"v1"'
    )
    assert answer.status_code == 422
    assert [entry["loc"] for entry in answer.json()["detail"]] == [
        ["body", "edits", 0, "text"],
        ["body", "edits", 1, "index"],
    ]
    for body in (b"{not json", b"[1, 2]"):
        answer = signed_in.patch(segments(job), body, content_type="application/json", HTTP_IF_MATCH='"v1"')
        assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["body"]
    assert Job.objects.get(pk=job.pk).segments.version == 1


def test_the_page_carries_the_renderers_rules_and_no_editor_before_the_job_is_done(signed_in, account):
    job = done_job_with_segments(account)
    page = signed_in.get(f"/jobs/{job.pk}/")
    assert page.context["editor"]["limits"] == {
        "maxCps": captions.MAX_CPS,
        "minDuration": captions.MIN_DURATION,
        "maxLineChars": captions.MAX_LINE_CHARS,
        "maxLines": captions.MAX_LINES,
        "doubtBelow": settings.EDITOR_DOUBT_BELOW,  # the words it lists as doubtful (issue 54)
    }
    assert b'id="editor-limits" type="application/json"' in page.content
    assert b"/static/website/editor.js" in page.content

    running = JobFactory(account=account, state="processing")
    page = signed_in.get(f"/jobs/{running.pk}/")
    assert page.context["editor"] is None and b"editor.js" not in page.content
    answer = signed_in.get(segments(running))
    assert answer.status_code == 409


def test_kept_audio_is_swept_with_the_jobs_other_files(account, stored):
    old = done_job_with_segments(account)
    recent = done_job_with_segments(account)
    running = JobFactory(account=account, state="processing")
    names = {job: stored(files.playback_name(job.pk)) for job in (old, recent, running)}
    gone = stored("playback/00000000-0000-0000-0000-000000000000.wav")
    Job.objects.filter(pk__in=[old.pk, running.pk]).update(updated_at=timezone.now() - timedelta(days=31))

    result = retention.delete_expired_artifacts()

    assert result["playback"] >= 2  # and what earlier tests' jobs, now gone, left
    assert not default_storage.exists(names[old]) and not default_storage.exists(gone)
    assert default_storage.exists(names[recent]) and default_storage.exists(names[running])
