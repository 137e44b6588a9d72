"""A done job's work made again after an edit (issue 46): its translations for the changed cues
only (Apertium, on a real worker), and its burned videos on request (`POST …/burn`: a real worker,
ffmpeg with libass), each charged as the contract charges translations and burns."""

import json
import math
import subprocess

import numpy as np
import pytest
from django.core.files.storage import default_storage

from billing.models import LedgerEntry
from billing.selectors import account_balance
from billing.services import grant_staff_minutes
from harness.processes import running_worker
from tests.factories import done_job_with_segments
from tests.support import wait_for
from transcription.models import Job, Translation
from transcription.pipeline import translate
from transcription.pipeline.transcripts import captions
from transcription.stages.translation import job_cues
from transcription.storage import files

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

KEPT = "GUARDADO {}"  # a translated cue nobody's backend writes: still there = not translated again


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_worker(tmp_path_factory.mktemp("worker") / "worker.log", queues="asr,burn") as process:
        yield process


def segments_url(job) -> str:
    return f"/v1/api/transcription/{job.id}/segments"


def edit(api, job, edits):
    etag = api.get(segments_url(job))["ETag"]
    response = api.patch(
        segments_url(job), data=json.dumps({"edits": edits}), content_type="application/json", HTTP_IF_MATCH=etag
    )
    assert response.status_code == 200, response.json()
    return response


def spanish_job(account, **fields):
    """A done job of the factory's three cues with a Spanish translation made by Apertium, whose
    first and last cues read KEPT: as if they had been corrected by hand."""
    job = done_job_with_segments(account, target_languages=["es"], **fields)
    source = captions.with_voices(captions.from_srt(job.srt), job.webvtt)
    spanish = translate.translate_cues(source, translate.find_translator("en", "es"), language="es")
    marked = [
        cue if index not in (0, len(spanish) - 1) else captions.Cue(cue.start, cue.end, [KEPT.format(index)])
        for index, cue in enumerate(spanish)
    ]
    Translation.objects.filter(job=job).update(
        state="done", srt=captions.to_srt(marked), webvtt=captions.to_webvtt(marked), cues=captions.cue_records(marked)
    )
    return job, source, marked


def texts(srt: str) -> list[str]:
    return [" ".join(cue.lines) for cue in captions.from_srt(srt)]


def test_an_edit_translates_only_the_changed_cues_again_and_charges_them(worker, api, account):
    job, source, before = spanish_job(account, type="subtitles")
    assert len(source) == 3
    balance = account_balance(account.pk)
    edit(api, job, [{"op": "text", "index": 1, "text": "The house is very big and the dog is happy."}])

    translation = wait_for(job.id, lambda j: j.translations.get().state != "translating", "retranslation")
    translation = Translation.objects.get(job=job)
    assert translation.state == "done", translation.error
    after = texts(translation.srt)
    assert after[0] == KEPT.format(0) and after[2] == KEPT.format(2), "unchanged cues are not translated again"
    assert "casa" in after[1].lower() and "perro" in after[1].lower(), after[1]
    assert captions.webvtt_voices(translation.webvtt) == [[1], [2], [1]], "each cue keeps its speaker's voice"
    edited = captions.from_srt(Job.objects.get(pk=job.id).srt)
    assert [(c.start, c.end) for c in captions.from_srt(translation.srt)] == [(c.start, c.end) for c in edited]

    charge = LedgerEntry.objects.get(job_id=job.id, source="retranslate")
    assert charge.seconds == -math.ceil(edited[1].end - edited[1].start), "1x the changed cue's seconds"
    assert account_balance(account.pk) == balance + charge.seconds

    # a times edit alone changes no text: the translation follows the new times, free
    edit(api, job, [{"op": "times", "index": 0, "start": 2.5, "end": 6.4}])
    translation = Translation.objects.get(job=job)
    assert translation.state == "done" and texts(translation.srt)[0] == KEPT.format(0)
    assert captions.from_srt(translation.srt)[0].start == 2.5
    assert LedgerEntry.objects.filter(job_id=job.id, source="retranslate").count() == 1


def test_a_retranslation_that_cannot_be_made_fails_alone_and_is_refunded(worker, api, account):
    job = done_job_with_segments(account, type="subtitles", target_languages=["ja"])
    made = captions.from_srt(job.srt)
    Translation.objects.filter(job=job).update(
        state="done", srt=job.srt, webvtt=job.webvtt, cues=captions.cue_records(job_cues(job))
    )
    balance = account_balance(account.pk)
    edit(api, job, [{"op": "text", "index": 0, "text": "Good evening, how are you today?"}])
    translation = wait_for(job.id, lambda j: j.translations.get().state != "translating", "retranslation")
    translation = Translation.objects.get(job=job)
    assert translation.state == "failed" and "cannot be translated again" in translation.error
    charge = LedgerEntry.objects.get(job_id=job.id, source="retranslate", kind="charge")
    assert charge.seconds == -math.ceil(made[0].end - made[0].start)
    refund = LedgerEntry.objects.get(job_id=job.id, source="retranslate", kind="refund")
    assert refund.seconds == -charge.seconds and account_balance(account.pk) == balance


def test_without_the_minutes_the_edit_is_saved_and_the_translation_says_why(api, account):
    job, _, _ = spanish_job(account, type="subtitles")
    grant = account_balance(account.pk)
    LedgerEntry.objects.create(account=account, kind="charge", source="staff", seconds=-grant, reason="spent")
    response = edit(api, job, [{"op": "text", "index": 1, "text": "The house is very big."}])
    assert response.json()["segments"][1]["text"] == "The house is very big."
    body = api.get(f"/v1/api/transcription/{job.id}").json()
    [spanish] = body["translations"]
    assert spanish["state"] == "failed" and spanish["error"].startswith("Not enough minutes: translating the 1")
    assert not LedgerEntry.objects.filter(job_id=job.id, source="retranslate").exists()
    assert account_balance(account.pk) == 0


def burned_job(account, **fields):
    """A done burned job, as the pipeline leaves one: its timeline ends `done`."""
    done = [["done", "2026-01-01T00:00:00+00:00"]]
    return done_job_with_segments(account, type="burned", timeline=done, **fields)


def _source_video(job, tmp_path) -> None:
    """The 20 s source video a burned job keeps (sources/<id>.video), as the media stage leaves it."""
    path = tmp_path / "source.mp4"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=navy:s=320x180:r=10:d=20"]
        + ["-f", "lavfi", "-i", "sine=frequency=440:duration=20", "-shortest", "-c:v", "libx264"]
        + ["-preset", "ultrafast", "-c:a", "aac", str(path)],
        check=True,
        timeout=120,
    )
    files.store(path, files.source_name(job.id))


def frame(name: str, seconds: float) -> np.ndarray:
    """The burned video's picture at `seconds`, grey, 1280x720."""
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-ss", f"{seconds:.2f}", "-i", default_storage.path(name)]
        + ["-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    return np.frombuffer(raw, np.uint8).reshape(720, 1280).astype(float)


def burn_and_wait(api, job) -> tuple[dict, list]:
    response = api.generic("POST", f"/v1/api/transcription/{job.id}/burn")
    assert response.status_code == 200, response.json()
    assert response.json()["state"] == "burning"
    seen = []

    def ended(row):
        seen.append((row.state, row.progress))
        return row.state == "done"

    wait_for(job.id, ended, "re-burn", timeout=300)
    return api.get(f"/v1/api/transcription/{job.id}").json(), seen


def test_a_burned_job_is_burned_again_from_its_edited_subtitles_and_charged_as_a_burn(worker, api, account, tmp_path):
    grant_staff_minutes(account, 10, reason="two burns")
    job = burned_job(account, background=True, target_languages=["es"])
    # its Spanish translation, with a video made before (the re-burn draws it again)
    Translation.objects.filter(job=job).update(
        state="done",
        srt=job.srt,
        webvtt=job.webvtt,
        cues=captions.cue_records(job_cues(job)),
        burned_video=files.burned_name(job.id, "es"),
    )
    _source_video(job, tmp_path)
    balance = account_balance(account.pk)

    first, _ = burn_and_wait(api, job)
    assert first["error"] is None and first["burned_video_url"]
    [spanish] = first["translations"]
    assert spanish["state"] == "done" and spanish["error"] is None
    assert default_storage.exists(files.burned_name(job.id, "es"))
    old = {t: frame(Job.objects.get(pk=job.id).burned_video, t) for t in (4.5, 13.0)}

    edit(api, job, [{"op": "text", "index": 0, "text": "WWWW MMMM WWWW MMMM WWWW MMMM."}])
    # the Spanish cue is translated again first (a re-burn asked meanwhile is a 409)
    wait_for(job.id, lambda j: j.translations.get().state == "done", "retranslation")
    second, seen = burn_and_wait(api, job)
    assert second["error"] is None and second["state"] == "done"
    assert ("burning", 100) not in seen and any(state == "burning" for state, _ in seen), seen
    name = Job.objects.get(pk=job.id).burned_video
    new = {t: frame(name, t) for t in (4.5, 13.0)}
    assert np.abs(old[4.5][480:] - new[4.5][480:]).mean() > 1.0, "the edited cue is drawn anew"
    assert np.abs(old[4.5][:300] - new[4.5][:300]).mean() < 1.0, "the picture above is the same"
    assert np.abs(old[13.0] - new[13.0]).mean() < 1.0, "an unedited cue looks as before"

    charges = LedgerEntry.objects.filter(job_id=job.id, source="reburn", kind="charge")
    assert [c.seconds for c in charges] == [-2 * 3 * 20] * 2, "3x the length at 720p, each video, each time"
    retranslated = LedgerEntry.objects.get(job_id=job.id, source="retranslate").seconds
    assert account_balance(account.pk) == balance - 2 * 2 * 3 * 20 + retranslated
    timeline = [state for state, _ in Job.objects.get(pk=job.id).timeline]
    assert timeline[-4:] == ["burning", "done", "burning", "done"]


def test_a_reburn_that_cannot_be_drawn_keeps_the_old_video_and_is_refunded(worker, api, account, tmp_path):
    job = burned_job(account, burned_video="burned/x/video.mp4")
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all" * 100)
    files.store(broken, files.source_name(job.id))
    balance = account_balance(account.pk)
    body, _ = burn_and_wait(api, job)
    assert body["state"] == "done" and body["burned_video_url"], "the video made before is still served"
    assert body["error"].startswith("The subtitles could not be burned again (")
    assert "its minutes have been refunded" in body["error"]
    kinds = [(e.kind, e.seconds) for e in LedgerEntry.objects.filter(job_id=job.id, source="reburn")]
    assert sorted(kinds) == [("charge", -60), ("refund", 60)] and account_balance(account.pk) == balance


def test_a_reburn_without_the_minutes_changes_nothing_and_says_why(api, account, tmp_path):
    job = burned_job(account, burned_video="burned/x/video.mp4")
    _source_video(job, tmp_path)
    grant = account_balance(account.pk)
    LedgerEntry.objects.create(account=account, kind="charge", source="staff", seconds=-(grant - 30), reason="spent")
    response = api.generic("POST", f"/v1/api/transcription/{job.id}/burn")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["state"] == "done" and body["burned_video_url"]
    assert (
        body["error"]
        == "Not enough minutes: burning 1 video of 20 s again needs 1 minute and the account has 0.5 minutes left."
    )
    assert not LedgerEntry.objects.filter(job_id=job.id, source="reburn").exists()


def test_who_and_what_may_be_burned_again(api, account, other_account, tmp_path):
    theirs = burned_job(other_account)
    assert api.generic("POST", f"/v1/api/transcription/{theirs.id}/burn").status_code == 404
    failed = burned_job(account, state="failed", error="Refunded.")
    assert api.generic("POST", f"/v1/api/transcription/{failed.id}/burn").status_code == 409
    subtitles = done_job_with_segments(account, type="subtitles")
    answer = api.generic("POST", f"/v1/api/transcription/{subtitles.id}/burn")
    assert answer.status_code == 409 and "Only a burned job" in answer.json()["detail"]
    gone = burned_job(account)
    assert "no longer kept" in api.generic("POST", f"/v1/api/transcription/{gone.id}/burn").json()["detail"]
    _source_video(gone, tmp_path)
    bad = api.post(
        f"/v1/api/transcription/{gone.id}/burn", data=json.dumps({"quality": "hd"}), content_type="application/json"
    )
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "quality"]
    translating = burned_job(account, target_languages=["es"])
    _source_video(translating, tmp_path)
    Translation.objects.filter(job=translating).update(state="translating", redo={"plan": [], "charged": 0})
    answer = api.generic("POST", f"/v1/api/transcription/{translating.id}/burn")
    assert answer.status_code == 409 and "still being made" in answer.json()["detail"]
    assert not LedgerEntry.objects.filter(source="reburn").exists()
    # and while a job is burned again, its transcript cannot be edited
    Job.objects.filter(pk=gone.pk).update(state="burning")
    fix = json.dumps({"edits": [{"op": "text", "index": 0, "text": "Hello."}]})
    refused = api.patch(segments_url(gone), data=fix, content_type="application/json", HTTP_IF_MATCH='"v1"')
    assert refused.status_code == 409 and "burning" in refused.json()["detail"]
