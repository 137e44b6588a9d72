"""One long video across the fleet (issue 44): a job longer than SPREAD_ABOVE_SECONDS is recognised
in chunks by every free asr worker. Two real workers ("one" and "two"), the real speech model and
ffmpeg; the chunks made small (SPREAD_CHUNK_SECONDS=16, shorter than one worker's 30, on 50 s of
LibriVox speech, read twice) so that a short recording has several.

In a module of its own: these two workers must be the only ones taking the queues' jobs.
"""

import contextlib
import re
import subprocess

import pytest

from harness.processes import kill, running_worker
from tests.support import normalize, submit, wait_for_job, wait_until, wer

LIBRIVOX = "/usr/share/pocketsphinx/test/data/librivox"
SPREAD = {
    "ALLOW_PRIVATE_URLS": "true",
    "WORKER_HEARTBEAT_SECONDS": "1",  # a killed worker's chunk claim lapses after 4 s
    "RECOGNITION_CHUNK_SECONDS": "30",
    "SPREAD_CHUNK_SECONDS": "16",
    "SPREAD_ABOVE_SECONDS": "20",
}

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def long_speech(media_server):
    """(its URL, the words read): the five LibriVox sentences, twice, one WAV."""
    from pathlib import Path

    names = sorted(p.stem for p in Path(LIBRIVOX).glob("*.wav")) * 2
    listing = media_server.folder / "long.txt"
    listing.write_text("".join(f"file '{LIBRIVOX}/{name}.wav'\n" for name in names))
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", str(listing)]
        + ["-ar", "16000", "-ac", "1", str(media_server.folder / "long.wav")],
        check=True,
        timeout=60,
    )
    lines = {
        m.group(2): m.group(1)
        for m in re.finditer(r"<s> (.*?) </s> \((.*?)\)", (Path(LIBRIVOX) / "transcription").read_text())
    }
    return media_server.url("/files/long.wav"), " ".join(lines[name] for name in names)


@pytest.fixture(scope="module")
def two_workers(django_db_setup, django_db_blocker, tmp_path_factory):
    """{"one": process, "two": process}: two workers of concurrency 1 on every queue, for the
    module (the last test kills one)."""
    logs = tmp_path_factory.mktemp("spread")
    with django_db_blocker.unblock(), contextlib.ExitStack() as stack:
        workers = {
            name: stack.enter_context(
                running_worker(logs / f"{name}.log", hostname=f"{name}@%h", purge=name == "one", **SPREAD)
            )
            for name in ("one", "two")
        }
        yield workers


def chunks_of(job_id):
    from transcription.models import RecognitionChunk

    return list(RecognitionChunk.objects.filter(job_id=job_id).order_by("index"))


def worker(name: str) -> str:
    """The Celery worker in a chunk's claimed_by (`one@host/pid`)."""
    return name.split("@")[0]


def test_two_workers_share_a_long_jobs_chunks_and_no_word_is_lost_or_doubled(api, long_speech, two_workers):
    from transcription.models import JobSegments

    url, reference = long_speech
    job_id = submit(api, "/v1/api/transcribe", {"url": url})
    job = wait_for_job(job_id, timeout=240)
    assert job.state == "done", job.error
    chunks = chunks_of(job_id)
    assert len(chunks) >= 3 and all(chunk.done and chunk.result is None for chunk in chunks)
    assert {worker(chunk.claimed_by) for chunk in chunks} == {"one", "two"}, "both workers recognised chunks"
    assert [c.end for c in chunks[:-1]] == [c.start for c in chunks[1:]], "the chunks cover the audio, end to end"
    assert chunks[0].start == 0 and all(c.end - c.start <= 16.0 for c in chunks), "the spread plan's short chunks"

    spread = " ".join(segment["text"] for segment in JobSegments.objects.get(job_id=job_id).segments)
    # a word cut at a seam, read twice or by neither chunk, would show against the words read
    assert wer(reference, spread) <= 0.12, spread
    assert len(normalize(spread)) == pytest.approx(len(normalize(reference)), abs=3)
    assert job.progress == 100 and "merging" in [state for state, _ in job.timeline]


def test_a_worker_killed_mid_chunk_loses_only_that_chunk(api, long_speech, two_workers):
    from transcription.models import Job, RecognitionChunk

    url, reference = long_speech
    job_id = submit(api, "/v1/api/transcribe", {"url": url})

    def helper_mid_chunk():
        """A chunk held by the worker that is not the job's coordinator."""
        for chunk in RecognitionChunk.objects.filter(job_id=job_id, done=False, lease_until__isnull=False):
            if worker(chunk.claimed_by) != worker(chunk.planned_by):
                return chunk
        return None

    chunk = wait_until(helper_mid_chunk, "the helper worker to hold a chunk", timeout=180, interval=0.02)
    killed = worker(chunk.claimed_by)
    kill(two_workers[killed])
    assert not RecognitionChunk.objects.get(pk=chunk.pk).done, "killed mid-chunk"

    job = wait_for_job(job_id, timeout=240)
    assert job.state == "done", job.error
    redone = RecognitionChunk.objects.get(pk=chunk.pk)
    assert redone.done and worker(redone.claimed_by) != killed, "the survivor recognised the lost chunk again"
    assert Job.objects.get(pk=job_id).attempts == 0, "the job itself never stalled"
    from transcription.models import JobSegments

    spread = " ".join(segment["text"] for segment in JobSegments.objects.get(job_id=job_id).segments)
    assert wer(reference, spread) <= 0.12, spread
