"""Live streams (/v1/realtime) at the front door: a stream is opened, paid as its audio arrives and
settled through here, with the rules of every door (the Caller's token, the job-request limit) and
billing's (the plan's cap of streams at once, the balance; billing.live_services.live_*).

- `open_stream(caller)`: counted as a job request (`admit`), then billing's `live_open`: a
  StreamRefused (429) over the account's cap of streams at once or with no minutes left.
- `pay(stream_id, seconds)`: the stream has received `seconds` whole seconds of audio; balance is
  held for them and HOLD_AHEAD_SECONDS more. Answers the seconds held: fewer than `seconds` when the
  balance ran out.
- `settle(stream_id, seconds, reason)`: the stream's one ledger entry, once.
- `keep(caller, stream_id, language, prompt)`: the job the stream's recording becomes (unless the
  session said not to: `keep_recording`), prepaid by the stream, stored but not queued, and where
  the door writes the recording; quota.StorageFull when the account has no storage left.
  `release(...)` at the stream's end, before `settle`: the recording handed to storage and the job
  queued like a job of an uploaded file (writes.live_job_services).
A stream whose door stopped reporting for STALE_AFTER (its web process died) is settled by the next
opening of its account or by the sweeper, at what it last reported.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from django.conf import settings
from django.utils import timezone

from billing import live_services as billing
from transcription.api.front import ratelimit
from transcription.api.front.caller import Caller
from transcription.api.front.front_door import admit
from transcription.api.wire.error_bodies import StreamRefused
from transcription.storage import files
from transcription.writes import live_job_services

# Balance held ahead of the audio, so that the door asks billing once every few seconds of audio.
HOLD_AHEAD_SECONDS = 5
# A door reports at least this often while its socket is open (the pump's touch); a stream silent
# for STALE_AFTER lost its door.
TOUCH_SECONDS = 20.0
# The storage a kept stream's upload holds while it records: the longest stream at the largest
# rate it may come in (24 kHz PCM16), in a WAV.
RECORDING_BYTES_PER_SECOND = 24000 * 2
WAV_HEADER_BYTES = 44


def stale_after() -> timedelta:
    return timedelta(
        seconds=max(3 * TOUCH_SECONDS, billing.live_stale_after_seconds(settings.LIVE_IDLE_TIMEOUT_SECONDS))
    )


def stale_before() -> datetime:
    return timezone.now() - stale_after()


def open_stream(caller: Caller) -> str:
    admit(caller, ratelimit.JOBS)
    try:
        stream = billing.live_open(caller.account_id, settings.LIVE_STREAMS_PER_ACCOUNT, stale_before())
    except billing.LiveRefused as refused:
        raise StreamRefused(str(refused), refused.code) from None
    return str(stream.id)


def pay(stream_id: str, seconds: int) -> int:
    return billing.live_hold(stream_id, seconds, HOLD_AHEAD_SECONDS)


def settle(stream_id: str, seconds: int | None, reason: str) -> int:
    """Settle the stream; the seconds charged."""
    entry = billing.live_settle(stream_id, seconds, reason)
    return -entry.seconds if entry is not None else 0


def settle_stale() -> int:
    """The sweeper's: settle every stream whose door stopped reporting."""
    return billing.live_settle_stale(stale_before())


class Kept(NamedTuple):
    """A kept stream's job, and where its recording is written (at most `limit` bytes)."""

    job_id: str
    path: Path
    limit: int


def keep(caller: Caller, stream_id: str, language: str | None, prompt: str) -> Kept:
    reserve = settings.LIVE_MAX_STREAM_SECONDS * RECORDING_BYTES_PER_SECOND + WAV_HEADER_BYTES
    job, upload = live_job_services.live_job_open(
        caller.account, stream_id, language=language, prompt=prompt, reserve=reserve
    )
    return Kept(str(job.id), files.incoming_path(upload.id), upload.size)


def release(job_id: str, path: Path, size: int, seconds: float) -> None:
    live_job_services.live_job_release(job_id, path, size=size, seconds=seconds)
