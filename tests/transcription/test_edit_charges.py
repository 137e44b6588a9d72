"""Charges a person can see and trust (issue 56, item 5, the editor's part): an edit of a job with
translations is charged once per change, however often a cue is edited before the retranslation
worker runs; what a save will charge is quoted before (PATCH …/segments with `dry_run`, the
editor's "saving will charge"), and each save says what it charged. No worker runs here: the
retranslation waits, as it does while the worker is busy."""

import json
import math

import pytest
from django.test import Client

from billing.models import LedgerEntry
from tests.factories import done_job_with_segments
from transcription.models import Translation
from transcription.pipeline.transcripts import captions, retranslation

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(account):
    client = Client()
    client.force_login(account.user)
    return client


def job_with_translations(account, languages=("es",)):
    """A done job of the factory's three cues with its translations made (one line per cue)."""
    job = done_job_with_segments(account, target_languages=list(languages))
    source = captions.with_voices(captions.from_srt(job.srt), job.webvtt)
    for language in languages:
        made = [captions.Cue(cue.start, cue.end, [f"{language} {index}"]) for index, cue in enumerate(source)]
        Translation.objects.filter(job=job, language_code=language).update(
            state="done", srt=captions.to_srt(made), webvtt=captions.to_webvtt(made), cues=captions.cue_records(made)
        )
    return job, source


def patch(client, job, edits, dry_run=None):
    etag = client.get(f"/jobs/{job.pk}/segments")["ETag"]
    body = {"edits": edits} | ({} if dry_run is None else {"dry_run": dry_run})
    answer = client.patch(
        f"/jobs/{job.pk}/segments", json.dumps(body), content_type="application/json", HTTP_IF_MATCH=etag
    )
    assert answer.status_code == 200, answer.json()
    return answer.json()


def charges(job) -> list[int]:
    return [-e.seconds for e in LedgerEntry.objects.filter(job_id=job.id, source="retranslate", kind="charge")]


def cue_seconds(cue) -> int:
    return math.ceil(cue.end - cue.start - 1e-9)


def test_a_cue_edited_twice_before_the_worker_runs_is_charged_once(signed_in, account, broker):
    job, source = job_with_translations(account, ("es", "fr"))
    first = patch(signed_in, job, [{"op": "text", "index": 0, "text": "Good evening, how are you today?"}])
    once = cue_seconds(source[0]) * 2  # one cue, two translations
    assert charges(job) == [once]
    assert first["charge"]["seconds"] == once and first["charge"]["languages"] == ["es", "fr"]
    assert first["charge"]["cues"] == 1 and first["charge"]["error"] is None

    # the same cue again, and again, before the worker ran: nothing more
    for text in ("Good night, how are you today?", "Good night, how are you now?"):
        again = patch(signed_in, job, [{"op": "text", "index": 0, "text": text}])
        assert again["charge"]["seconds"] == 0 and again["charge"]["cues"] == 1
    assert charges(job) == [once]
    waiting = Translation.objects.filter(job=job, state="translating")
    assert waiting.count() == 2 and all(t.redo["charged"] == cue_seconds(source[0]) for t in waiting)

    # another cue: only what it adds is charged, and in all the waiting cues' seconds once per language
    other = patch(signed_in, job, [{"op": "text", "index": 2, "text": "Glad to hear it."}])
    plan = Translation.objects.get(job=job, language_code="es").redo["plan"]
    owed = retranslation.seconds_of(plan, retranslation.pending(plan))
    assert len(retranslation.pending(plan)) == 2 == other["charge"]["cues"]
    assert other["charge"]["seconds"] == (owed - cue_seconds(source[0])) * 2 > 0
    assert charges(job) == [once, other["charge"]["seconds"]] and sum(charges(job)) == owed * 2


def test_the_quote_is_what_the_save_then_charges_and_writes_nothing(signed_in, account, broker):
    job, source = job_with_translations(account)
    edits = [{"op": "text", "index": 1, "text": "I am well, thank you very much."}]
    quote = patch(signed_in, job, edits, dry_run=True)
    assert quote["dry_run"] is True and quote["version"] == 1 and quote["etag"] == '"v1"'
    assert quote["segments"][1]["text"] == "I am well, thank you very much."
    assert quote["charge"]["seconds"] == cue_seconds(source[1]) and quote["charge"]["languages"] == ["es"]
    assert charges(job) == [] and not Translation.objects.filter(job=job, state="translating").exists()
    job.refresh_from_db()
    assert "I am fine" in job.srt and job.segments.version == 1

    saved = patch(signed_in, job, edits, dry_run=False)
    assert saved["dry_run"] is False and saved["version"] == 2
    assert saved["charge"] == quote["charge"] and charges(job) == [quote["charge"]["seconds"]]
    # once saved, the same edit is quoted at nothing more
    assert patch(signed_in, job, edits, dry_run=True)["charge"]["seconds"] == 0


def test_a_quote_past_the_balance_says_so_and_a_job_without_translations_costs_nothing(signed_in, account, broker):
    job, _ = job_with_translations(account)
    balance = sum(e.seconds for e in LedgerEntry.objects.filter(account=account))
    LedgerEntry.objects.create(account=account, kind="charge", source="staff", seconds=-balance, reason="spent")
    quote = patch(signed_in, job, [{"op": "text", "index": 0, "text": "Hello there."}], dry_run=True)
    assert quote["charge"]["seconds"] > 0 and "Not enough minutes" in quote["charge"]["error"]

    plain = done_job_with_segments(account)
    free = patch(signed_in, plain, [{"op": "text", "index": 0, "text": "Hello there."}])
    assert free["charge"] == {"seconds": 0, "minutes": "0 minutes", "cues": 0, "languages": [], "error": None}


def test_dry_run_must_be_a_boolean(signed_in, account):
    job, _ = job_with_translations(account)
    answer = signed_in.patch(
        f"/jobs/{job.pk}/segments",
        json.dumps({"edits": [{"op": "text", "index": 0, "text": "Hi."}], "dry_run": "yes"}),
        content_type="application/json",
        HTTP_IF_MATCH='"v1"',
    )
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"][-1] == "dry_run"


def test_the_editor_page_says_what_saving_costs_for_a_job_with_translations(signed_in, account):
    job, _ = job_with_translations(account, ("es", "fr"))
    page = signed_in.get(f"/jobs/{job.pk}/").content.decode()
    assert "free of minutes" not in page
    assert "data-editor-quote" in page and 'data-translations="2"' in page
    assert "translating the changed cues again" in page

    plain = done_job_with_segments(account)
    page = signed_in.get(f"/jobs/{plain.pk}/").content.decode()
    assert "free of minutes" in page and 'data-translations="0"' in page
