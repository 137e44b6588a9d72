"""The live worker role (bin/live, issue 52 item 7): holds the speech model and serves live streams,
LIVE_STREAMS_PER_WORKER at once, each in a thread of its own running the engine
(transcription.pipeline.live.LiveTranscriber) over the audio its door sends through the transport
(transcription.events.live_streams: Redis streams, or queues in one process without REDIS_URL).

A slot takes a waiting stream only when it is free (so a busy worker leaves new streams to the
others), answers `accepted` with its name, then reads the stream's messages: audio is converted to
16 kHz and fed to the engine (all the audio that arrived since the last read in one feed, so a worker
that fell behind catches up), commit/clear/finish passed on, the session's new options applied from
the next utterance on; every batch of events goes back with a `progress` (ms of audio recognised:
the door's bound on how far ahead its client may run). A stream whose door sent nothing for
LIVE_IDLE_TIMEOUT_SECONDS and a margin is dropped (its door is gone). The heartbeat (`beat`) runs
in a thread of its own; a worker that stops (SIGTERM) tells its streams, and one that dies stops
beating, which their doors notice (docs/decisions/live.md).

The engine and numpy are imported only when a worker starts: the web process that imports this for
the one-process fallback (`local_worker`) loads them with its first stream, never before.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from typing import Any

from django.conf import settings

from transcription.events import live_streams

logger = logging.getLogger(__name__)

READ_SECONDS = 0.5


def worker_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def new_item_id() -> str:
    return "item_" + secrets.token_hex(10)


def _transcriber(model: Any, options: dict[str, Any]) -> Any:
    from transcription.pipeline.live.transcriber import LiveOptions, LiveTranscriber

    return LiveTranscriber(model, LiveOptions(**options), new_item_id)


def _resampler(kind: str, rate: int) -> Any:
    from transcription.pipeline.live.formats import AudioFormat, Resampler

    return Resampler(AudioFormat(kind, rate))  # type: ignore[arg-type]


def _to_json(events: list[Any]) -> list[dict[str, Any]]:
    from transcription.pipeline.live.events import to_json

    return [to_json(event) for event in events]


class StreamServer:
    """One stream, served by one slot's thread until it ends."""

    def __init__(self, link: Any, model: Any, stream_id: str, options: dict[str, Any], stop: threading.Event):
        self.link, self.model, self.stream_id, self.stop = link, model, stream_id, stop
        self.transcriber = _transcriber(model, options)
        self.resampler: Any = None
        self.format: tuple[str, int] | None = None
        self.heard_ms = 0.0
        self.last = "0-0"

    def serve(self) -> None:
        self.link.publish(self.stream_id, [{"type": "accepted", "worker": self.link.name}])
        quiet_since = time.monotonic()
        idle = settings.LIVE_IDLE_TIMEOUT_SECONDS + 30
        while not self.stop.is_set():
            self.last, messages = self.link.read(self.stream_id, self.last, READ_SECONDS)
            if not messages:
                if time.monotonic() - quiet_since > idle:
                    logger.info("live stream %s: its door went quiet, dropped", self.stream_id)
                    return
                continue
            quiet_since = time.monotonic()
            events, finished = self.handle(messages)
            self.link.publish(self.stream_id, [*_to_json(events), {"type": "progress", "heard_ms": int(self.heard_ms)}])
            if finished:
                self.link.publish(self.stream_id, [{"type": "ended"}])
                return
        self.link.publish(self.stream_id, [{"type": "failed_stream", "message": "The live worker is stopping."}])

    def handle(self, messages: list[dict[str, Any]]) -> tuple[list[Any], bool]:
        events: list[Any] = []
        pending: list[Any] = []
        for message in messages:
            kind = message.get("kind")
            if kind == "audio":
                pending.append(self.convert(message))
                continue
            events += self.feed(pending)
            pending = []
            if kind == "commit":
                events += self.transcriber.commit()
            elif kind == "clear":
                events += self.transcriber.clear()
            elif kind == "options":
                events += self.transcriber.finish()
                self.transcriber = _transcriber(self.model, message["options"])
            elif kind == "finish":
                return events + self.transcriber.finish(), True
        return events + self.feed(pending), False

    def convert(self, message: dict[str, Any]) -> Any:
        fmt = (message["format"], int(message["rate"]))
        if fmt != self.format:
            self.format, self.resampler = fmt, _resampler(*fmt)
        width = 2 if fmt[0] == "pcm16" else 1
        self.heard_ms += len(message["data"]) / width / fmt[1] * 1000
        return self.resampler.convert(message["data"])

    def feed(self, pending: list[Any]) -> list[Any]:
        if not pending:
            return []
        import numpy as np

        return list(self.transcriber.feed(np.concatenate(pending)))


def serve_slot(link: Any, model: Any, stop: threading.Event) -> None:
    """One slot: take a waiting stream, serve it to its end, again, until `stop`."""
    while not stop.is_set():
        try:
            taken = link.take(1.0)
            if taken is None:
                continue
            stream_id, options = taken
            server = StreamServer(link, model, stream_id, options, stop)
        except Exception:
            logger.exception("live worker %s: taking a stream failed", link.name)
            time.sleep(1.0)
            continue
        try:
            server.serve()
        except Exception as error:
            logger.exception("live stream %s failed", stream_id)
            message = f"The live worker failed on this stream: {type(error).__name__}."
            try:
                link.publish(stream_id, [{"type": "failed_stream", "message": message}])
            except Exception:
                logger.exception("live stream %s: could not say it failed", stream_id)


def beat_forever(link: Any, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            link.beat()
        except Exception:
            logger.exception("live worker %s: heartbeat failed", link.name)
        stop.wait(live_streams.BEAT_SECONDS)
    try:
        link.gone()
    except Exception:
        logger.exception("live worker %s: could not say it stopped", link.name)


def live_model(slots: int) -> Any:
    from transcription.pipeline.recognition import whisper_model

    return whisper_model.load_model(settings.WHISPER_MODEL, settings.MODEL_CACHE_DIR, jobs_at_once=slots)


def start(link: Any, slots: int, stop: threading.Event) -> list[threading.Thread]:
    """The heartbeat and `slots` serving threads over `link`, the model loaded once first."""
    model = live_model(slots)
    threads = [threading.Thread(target=beat_forever, args=(link, stop), name="live-beat", daemon=True)]
    threads += [
        threading.Thread(target=serve_slot, args=(link, model, stop), name=f"live-slot-{n}", daemon=True)
        for n in range(slots)
    ]
    for thread in threads:
        thread.start()
    return threads


def redis_worker(url: str) -> live_streams.RedisWorker:
    return live_streams.RedisWorker(url, worker_name())


# --- One process, no Redis (make run's embedded default) ---------------------------------------

_local: dict[str, Any] = {}
_local_lock = threading.Lock()


def local_hub() -> live_streams.LocalHub:
    """The process's hub, its worker started in threads on first use (the model loads then)."""
    with _local_lock:
        if "hub" not in _local:
            hub = live_streams.LocalHub()
            link = live_streams.LocalWorker(hub, worker_name())
            stop = threading.Event()
            _local.update(hub=hub, link=link, stop=stop)
            threading.Thread(
                target=start, args=(link, settings.LIVE_STREAMS_PER_WORKER, stop), name="live-start", daemon=True
            ).start()
        return _local["hub"]
