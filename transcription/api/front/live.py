"""Live streams (/v1/realtime) at the front door: a stream is opened, paid as its audio arrives and
settled through here, with the rules of every door (the Caller's token, the job-request limit) and
billing's (the plan's cap of streams at once, the balance; billing.live_services.live_*).

- `open_stream(caller)`: counted as a job request (`admit`), then billing's `live_open`: a
  StreamRefused (429) over the account's cap of streams at once or with no minutes left.
- `pay(stream_id, seconds)`: the stream has received `seconds` whole seconds of audio; balance is
  held for them and HOLD_AHEAD_SECONDS more. Answers the seconds held: fewer than `seconds` when the
  balance ran out.
- `settle(stream_id, seconds, reason)`: the stream's one ledger entry, once.
A stream whose door stopped reporting for STALE_AFTER (its web process died) is settled by the next
opening of its account or by the sweeper, at what it last reported.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from billing import live_services as billing
from transcription.api.front import ratelimit
from transcription.api.front.caller import Caller
from transcription.api.front.front_door import admit
from transcription.api.wire.error_bodies import StreamRefused

# Balance held ahead of the audio, so that the door asks billing once every few seconds of audio.
HOLD_AHEAD_SECONDS = 5
# A door reports at least this often while its socket is open (the pump's touch); a stream silent
# for STALE_AFTER lost its door.
TOUCH_SECONDS = 20.0


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
