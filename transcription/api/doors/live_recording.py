"""A live stream's recording (issue 52: the stream's audio kept as a job): the bytes /v1/realtime
sends its worker, written as they arrive to a WAV file at the upload's incoming path on the door's
machine, as an upload's bytes arrive (bodies.FileSink: a writer thread of its own, the event loop
never waits for the disk but when several batches are queued). At the stream's end the header gets
its lengths and front/live.release hands the file to storage, where the media worker reads it like
any uploaded file.

The audio is kept as the client sent it (PCM16 at 24 or 16 kHz, G.711 at 8 kHz, in a WAV of that
format): the web process converts nothing and never loads the speech stack. One recording has one
format, so the door refuses a change of format once audio is kept (realtime.Socket.update).
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

from transcription.api.doors.bodies import BodyTooLarge, FileSink
from transcription.api.front.live import WAV_HEADER_BYTES

logger = logging.getLogger(__name__)

# (WAV format tag, bits per sample) of each format a stream's audio comes in
WAV_FORMATS = {"pcm16": (1, 16), "pcmu": (7, 8), "pcma": (6, 8)}


def wav_header(kind: str, rate: int, data_bytes: int) -> bytes:
    """A canonical WAV header (WAV_HEADER_BYTES long) for `data_bytes` of mono audio in `kind` at `rate` Hz."""
    tag, bits = WAV_FORMATS[kind]
    block = bits // 8
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        *(b"RIFF", 36 + data_bytes, b"WAVE"),
        *(b"fmt ", 16, tag, 1, rate, rate * block, block, bits),
        *(b"data", data_bytes),
    )


def bytes_per_second(kind: str, rate: int) -> int:
    return rate * WAV_FORMATS[kind][1] // 8


class Recording:
    """One stream's audio, appended as it goes to its worker; `limit` bytes at most (the storage
    the upload holds: past it the recording stops growing and the job has what came before)."""

    def __init__(self, job_id: str, path: Path, limit: int, kind: str, rate: int):
        self.job_id, self.path, self.kind, self.rate = job_id, path, kind, rate
        path.unlink(missing_ok=True)
        self.sink = FileSink(path, limit)
        self.sink.add(wav_header(kind, rate, 0))
        self.data_bytes = 0
        self.full = False

    def reformat(self, kind: str, rate: int) -> bool:
        """Take the session's new format: only while no audio is kept (False once some is)."""
        if self.data_bytes and (kind, rate) != (self.kind, self.rate):
            return False
        self.kind, self.rate = kind, rate
        return True

    async def add(self, data: bytes) -> None:
        if self.full:
            return
        try:
            self.sink.add(data)
        except BodyTooLarge:
            self.full = True
            logger.warning("live recording of job %s: its storage is full, the rest is not kept", self.job_id)
            return
        self.data_bytes += len(data)
        if self.sink.full:
            await self.sink.flush()

    @property
    def seconds(self) -> float:
        return self.data_bytes / bytes_per_second(self.kind, self.rate)

    async def close(self) -> int:
        """Write what is gathered and the header's lengths; the file's size."""
        await self.sink.close()
        header = wav_header(self.kind, self.rate, self.data_bytes)
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.pwrite(fd, header, 0)
        finally:
            os.close(fd)
        return WAV_HEADER_BYTES + self.data_bytes
