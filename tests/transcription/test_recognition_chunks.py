"""The chunks of a long job's recognition spread over the asr workers (issue 44): their plan,
claims and leases on the real PostgreSQL, the fairness rule on the real Redis. The workers
themselves (two real ones, one killed mid-chunk) are in tests/e2e/test_spread_recognition.py."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from tests.factories import JobFactory
from tests.support import wait_until
from transcription.models import RecognitionChunk
from transcription.pipeline.types import Segment, Transcript, Word, transcript_from_dict, transcript_to_dict
from transcription.scheduling import dispatch, lines
from transcription.stages import spreading
from transcription.writes import chunk_services
from transcription.writes.claims import ChunkClaim

pytestmark = pytest.mark.django_db

SPANS = [(0.0, 19.5), (19.5, 40.25), (40.25, 61.0)]
SPEECH = [[(0.5, 19.0)], [(20.0, 40.0)], [(41.0, 60.0)]]
RESULT = {"language": "en", "duration": 19.5, "segments": [], "language_probability": 0.9}


def _planned(account, state="processing"):
    job = JobFactory(account=account, state=state)
    chunk_services.chunks_plan(job.id, SPANS, SPEECH, "coordinator")
    return job


def _lapse(job, index):
    RecognitionChunk.objects.filter(job=job, index=index).update(lease_until=timezone.now() - timedelta(seconds=1))


def test_a_plan_is_one_row_per_chunk_with_its_speech(account):
    job = _planned(account)
    rows = list(RecognitionChunk.objects.filter(job=job).order_by("index"))
    assert [(row.index, row.start, row.end) for row in rows] == [(i, *span) for i, span in enumerate(SPANS)]
    assert rows[1].speech == [[20.0, 40.0]] and {row.planned_by for row in rows} == {"coordinator"}
    assert not any(row.done or row.lease_until for row in rows)


def test_a_chunk_is_claimed_by_one_worker_at_a_time(account):
    job = _planned(account)
    held = chunk_services.chunk_claim(job.id, 1, "a", 60)
    assert held is not None
    assert chunk_services.chunk_claim(job.id, 1, "b", 60) is None, "a live claim is not taken"
    assert chunk_services.chunk_renew_claim(job.id, 1, held, 60) is not None
    assert RecognitionChunk.objects.get(job=job, index=1).claimed_by == "a"


def test_a_lapsed_claim_frees_the_chunk_and_its_old_holder_cannot_store_over_the_new_one(account):
    job = _planned(account)
    old = chunk_services.chunk_claim(job.id, 0, "killed", 60)
    _lapse(job, 0)
    lapsed = RecognitionChunk.objects.get(job=job, index=0).lease_until
    new = chunk_services.chunk_claim(job.id, 0, "survivor", 60)
    assert new is not None and new != lapsed
    assert chunk_services.chunk_renew_claim(job.id, 0, lapsed, 60) is None, "the old holder's heartbeat stops"
    assert not chunk_services.chunk_store(job.id, 0, lapsed, RESULT), "the old holder's result is not kept"
    assert old != new
    assert chunk_services.chunk_store(job.id, 0, new, RESULT)
    row = RecognitionChunk.objects.get(job=job, index=0)
    assert (row.done, row.claimed_by, row.lease_until, row.result) == (True, "survivor", None, RESULT)
    assert chunk_services.chunk_claim(job.id, 0, "late", 60) is None, "a done chunk is never recognised again"


def test_a_released_chunk_is_free_at_once(account):
    job = _planned(account)
    held = chunk_services.chunk_claim(job.id, 2, "stopping", 60)
    chunk_services.chunk_release(job.id, 2, held)
    assert chunk_services.chunk_claim(job.id, 2, "next", 60) is not None


def test_any_free_chunk_first_or_last_first(account):
    job = _planned(account)
    assert chunk_services.chunk_claim_any(job.id, "coordinator", 60, last_first=True)[0] == 2
    assert chunk_services.chunk_claim_any(job.id, "helper", 60)[0] == 0
    assert chunk_services.chunk_claim_any(job.id, "helper", 60)[0] == 1
    assert chunk_services.chunk_claim_any(job.id, "helper", 60) is None, "all three are held"


def test_no_chunk_of_a_job_that_stopped_recognising_is_claimed(account):
    job = _planned(account, state="failed")
    assert chunk_services.chunk_claim(job.id, 0, "a", 60) is None
    assert chunk_services.chunk_claim_any(job.id, "a", 60) is None


def test_a_coordinator_run_again_keeps_the_chunks_done_and_another_plan_replaces_them(account):
    job = _planned(account)
    held = chunk_services.chunk_claim(job.id, 1, "a", 60)
    chunk_services.chunk_store(job.id, 1, held, RESULT)
    assert chunk_services.chunks_plan(job.id, SPANS, SPEECH, "second") == 1, "the same plan: chunk 1 kept"
    assert RecognitionChunk.objects.get(job=job, index=1).planned_by == "second"
    chunk_services.chunks_merged(job.id)  # merged, then the run failed: nothing to merge is kept
    assert chunk_services.chunks_plan(job.id, SPANS, SPEECH, "third") == 0
    assert chunk_services.chunks_plan(job.id, SPANS[:2], SPEECH[:2], "fourth") == 0
    assert RecognitionChunk.objects.filter(job=job).count() == 2


@pytest.mark.django_db(transaction=True)
@override_settings(WORKER_HEARTBEAT_SECONDS=0.2)
def test_the_heartbeat_renews_a_chunk_claim_while_it_is_held(account):
    job = _planned(account)
    claim = ChunkClaim(job.id, "worker")
    assert claim.take(0) and claim.seconds == pytest.approx(0.8)
    first = claim.until
    with claim:
        wait_until(lambda: claim.until != first, "a beat", timeout=5)
        assert RecognitionChunk.objects.get(job=job, index=0).lease_until == claim.until
        assert not ChunkClaim(job.id, "other").take(0), "renewed: not free"
    assert claim.store(RESULT)


def test_only_long_audio_with_several_chunks_spreads():
    with override_settings(SPREAD_ABOVE_SECONDS=30):
        assert spreading.spreads(SPANS)
        assert not spreading.spreads([(0.0, 61.0)]), "one chunk: nothing to share"
        assert not spreading.spreads([(0.0, 10.0), (10.0, 20.0)]), "not longer than the setting"
    with override_settings(SPREAD_ABOVE_SECONDS=0):
        assert not spreading.spreads(SPANS), "0: never"


def test_a_spread_job_is_planned_in_shorter_chunks_than_one_workers(tmp_path):
    import subprocess

    wav = tmp_path / "tone.wav"  # 100 s: a tone with a quiet second every 7 s, where the cuts fall
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=100"]
        + ["-af", "volume='if(lt(mod(t,7),1),0,1)':eval=frame", "-ar", "16000", "-ac", "1", str(wav)],
        check=True,
        timeout=60,
    )
    with override_settings(RECOGNITION_CHUNK_SECONDS=60, SPREAD_CHUNK_SECONDS=25):
        chunks = spreading.spread_chunks(wav)
        assert len(chunks) >= 4 and all(end - start <= 25 for start, end in chunks)
        assert chunks[0][0] == 0 and chunks[-1][1] == pytest.approx(100, abs=0.01)
        assert [end for _, end in chunks[:-1]] == [start for start, _ in chunks[1:]], "end to end"
    with override_settings(RECOGNITION_CHUNK_SECONDS=20, SPREAD_CHUNK_SECONDS=180):
        assert all(end - start <= 20 for start, end in spreading.spread_chunks(wav)), "never longer than one worker's"


def test_a_chunk_is_left_to_its_coordinator_while_another_accounts_job_waits(account, other_account):
    lines.join("asr", "own-waiting", account.id)
    assert not dispatch.others_waiting("asr", account.id), "the account's own jobs do not count"
    lines.join("asr", "other-waiting", other_account.id)
    assert dispatch.others_waiting("asr", account.id)
    assert not dispatch.others_waiting("media", account.id), "only the asr line counts"
    lines.forget("other-waiting")
    lines.forget("own-waiting")
    assert not dispatch.others_waiting("asr", account.id)


def test_a_worker_offered_a_chunk_leaves_it_while_another_accounts_job_waits(account, other_account):
    job = _planned(account)
    lines.join("asr", "other-waiting", other_account.id)
    spreading.run_chunk(job.id, 0)  # returns before any model or audio is touched
    # a claim would have named this worker (claimed_by stays after a release)
    assert set(RecognitionChunk.objects.filter(job=job).values_list("claimed_by", flat=True)) == {""}
    lines.forget("other-waiting")
    spreading.run_chunk(job.id, 0)  # now it takes it (and fails here: no audio stored), then lets go
    chunk = RecognitionChunk.objects.get(job=job, index=0)
    assert chunk.claimed_by and chunk.lease_until is None and not chunk.done, "claimed, released on the error"


def test_a_chunk_offered_after_the_job_moved_on_is_dropped(account):
    job = _planned(account, state="aligning")
    spreading.run_chunk(job.id, 0)
    assert set(RecognitionChunk.objects.filter(job=job).values_list("claimed_by", flat=True)) == {""}


def test_a_chunk_transcript_travels_as_json_unchanged():
    transcript = Transcript(
        language="en",
        duration=3.0,
        segments=[Segment(1.0, 2.0, "Hello there", [Word(1.0, 1.4, " Hello", 0.9), Word(1.5, 2.0, " there")])],
        language_probability=0.97,
    )
    assert transcript_from_dict(transcript_to_dict(transcript)) == transcript
