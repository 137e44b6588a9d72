"""One long job's recognition spread over every free asr worker (issue 44: one long video across
the fleet), for audio longer than SPREAD_ABOVE_SECONDS.

The worker running the job's speech stage coordinates: it plans shorter chunks than one worker would
(audio.plan_chunks, cut at the quietest moment before each SPREAD_CHUNK_SECONDS, 180 s: the
coordinator also diarizes the whole file, and with short chunks it takes fewer of them instead of
holding the last long one while the others are idle), writes one
row per chunk (RecognitionChunk, with the speech the job's one VAD pass found in it) and sends one
`recognise_chunk` message per chunk to the asr queue. Then it recognises chunks itself, from the
last one back (the messages offer them from the first: the two seldom reach for the same one), and
once none is free it waits for those claimed elsewhere. A chunk's claim lapses like a job's (four
missed beats), and a lapsed chunk is free again: a worker killed mid-chunk loses only that chunk,
which the coordinator or another worker recognises again. The coordinator's own claim on the job
is renewed all along; should it die, the sweeper gives the job to another worker, which finds the
same plan and keeps the chunks already done.

Diarization stays one pass over the whole file in the coordinator (transcribing.py's
DiarizationApart), so one speaker keeps one number for the whole video. When every chunk is done,
asr.merge joins them in order: each chunk ends where the next begins, at the quiet moment the plan
cut at, so no word is read twice or lost at a seam.

Fairness (docs/decisions/workers-and-operations.md): chunk messages sit outside the fair line, so a
worker takes a chunk only when no other account's job waits in the asr line; otherwise it drops
the message (the coordinator recognises that chunk) and its next message is that job's turn. A
long job thus borrows only idle workers and never jumps another account's waiting job.

A chunk worker reads the stored audio where it lies when storage is a local folder (the workers of
one machine, or a shared mount), or fetches it once, whole, to its scratch folder (S3): only its
span is then read.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from django.conf import settings

from transcription import states
from transcription.pipeline.media import audio
from transcription.pipeline.recognition import asr
from transcription.scheduling import dispatch
from transcription.storage import files
from transcription.writes import chunk_services, services
from transcription.writes.claims import ChunkClaim, worker_name

from ..models import Job, RecognitionChunk
from ..pipeline.types import Transcript, transcript_from_dict, transcript_to_dict
from .pipeline_options import recognition_of, stage_options
from .speech_model import speech_model

logger = logging.getLogger(__name__)

WAIT_SECONDS = 0.5  # how often the coordinator looks at chunks recognised elsewhere


def spreads(chunks: list[tuple[float, float]]) -> bool:
    """Whether a job's audio, planned as `chunks`, is recognised across the fleet."""
    above = stage_options().spread_above_seconds
    return bool(above) and len(chunks) > 1 and chunks[-1][1] > above


def spread_chunks(wav: Path) -> list[tuple[float, float]]:
    """The chunks of a job recognised across the fleet: at most SPREAD_CHUNK_SECONDS each (never
    longer than one worker's), cut at the quietest moment before that."""
    options = stage_options()
    longest = min(options.spread_chunk_seconds, options.recognition_chunk_seconds)
    return audio.plan_chunks(wav, max_chunk=longest)


def transcribe_spread(job: Job, model, wav: Path, speech) -> Transcript:
    """The coordinator's part: the job's transcript, its chunks (spread_chunks) recognised by
    whichever worker was free. Progress counts the chunks done."""
    by = worker_name()
    chunks = spread_chunks(wav)
    speech_in = [[region for region in speech if region[1] > start and region[0] < end] for start, end in chunks]
    chunk_services.chunks_plan(job.id, chunks, speech_in, by)
    left = RecognitionChunk.objects.filter(job_id=job.id, done=False).values_list("index", flat=True)
    dispatch.chunks_send(job.id, list(left))
    total = len(chunks)
    while True:
        claim = ChunkClaim(job.id, by)
        if claim.take_any(last_first=True):
            try:
                recognise(job, model, wav, claim)
            finally:
                claim.release()  # nothing once stored; an error leaves the chunk to another worker
        done = RecognitionChunk.objects.filter(job_id=job.id, done=True).count()
        services.job_progress(job.id, done / total)
        if done == total:
            break
        if claim.index is None:  # none free: the rest are being recognised elsewhere
            if not Job.objects.filter(pk=job.id, state=states.PROCESSING).exists():
                raise states.InvalidTransition(f"job {job.id} ended while its chunks were recognised")
            time.sleep(WAIT_SECONDS)
    results = RecognitionChunk.objects.filter(job_id=job.id).order_by("index").values_list("result", flat=True)
    parts = [transcript_from_dict(result) for result in results if result is not None]  # all done
    services.job_advance(job.id, states.MERGING)
    chunk_services.chunks_merged(job.id)
    return asr.merge(parts)


def recognise(job: Job, model, wav: Path, claim: ChunkClaim) -> bool:
    """Recognise the chunk `claim` holds, its claim renewed meanwhile, and keep the result; False
    when the claim lapsed and another worker took the chunk over."""
    assert claim.index is not None, "a chunk taken"
    chunk = RecognitionChunk.objects.only("start", "end", "speech").get(job_id=job.id, index=claim.index)
    with claim:
        part = asr.transcribe(
            model,
            wav,
            start=chunk.start,
            end=chunk.end,
            options=recognition_of(job),
            speech=[tuple(region) for region in chunk.speech],
        )
    stored = claim.store(transcript_to_dict(part))
    logger.info("job %s: chunk %s recognised by %s%s", job.id, claim.index, claim.by, "" if stored else " (too late)")
    return stored


def run_chunk(job_id, index: int) -> None:
    """A worker's part (the `recognise_chunk` task): chunk `index` of the job, or any other chunk
    still free, unless another account's job waits for the asr workers."""
    job = Job.objects.filter(pk=job_id, state=states.PROCESSING).first()
    if job is None:
        return  # recognised and merged already, or the job ended
    if dispatch.others_waiting("asr", job.account_id):
        logger.info("job %s: chunk %s left to its coordinator (another account's job waits)", job_id, index)
        return
    claim = ChunkClaim(job_id, worker_name())
    if not (claim.take(index) or claim.take_any()):
        return
    directory = Path(settings.WORK_DIR) / f"{job_id}.chunk-{claim.index}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    try:
        wav = files.local_copy(files.audio_name(job_id), directory / "audio.wav")
        model = speech_model()
        recognise(job, model, wav, claim)
    except Exception:  # the coordinator, or another worker, recognises it again; the job goes on
        logger.exception("job %s: chunk %s failed in this worker", job_id, claim.index)
    finally:
        claim.release()  # nothing once stored; else the chunk is free again at once
        shutil.rmtree(directory, ignore_errors=True)
