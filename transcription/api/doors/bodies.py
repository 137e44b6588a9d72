"""Request bodies read in the event loop, straight to a file: the doors that take files (uploads,
the OpenAI-compatible endpoints) never hold a body in memory, nor a thread while a slow client
sends it.

The ASGI messages arrive as the socket gives them (tens of KB); they are gathered into
WRITE_BYTES batches and written by a thread of the sink's own, so a disk that stalls the writer (the
kernel throttles a process with too many dirty pages) never stalls the event loop, and each
hand-over is worth it. The loop goes on receiving while a batch is written (waiting for each write
halved the throughput of a 1 GB upload), and the chunks go to the disk with one writev, never
copied into one buffer first. Where the filesystem allows it the writer goes past the page cache
(O_DIRECT, DirectWriter): the batches are copied into one aligned buffer and the disk reads them
from there, which costs the writer a quarter of the CPU of writing through the page cache, the
cost that mattered on a 2-core machine shared with the client. Otherwise (a tus upload resumed at
an odd offset, a filesystem without O_DIRECT) the writer asks the kernel after each batch to start
writing the file's dirty pages out (start_writeback), so the disk works while the rest of the body
arrives instead of 1 GB of dirty pages being left behind for a later sync to wait on.
A multipart body goes through python-multipart's streaming parser (Starlette's): the part named
`file` to the file, the other fields into small buffers.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import functools
import mmap
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from python_multipart.multipart import MultipartParser, parse_options_header

if TYPE_CHECKING:  # pragma: no cover
    from python_multipart.multipart import MultipartCallbacks  # declared for type checkers only

WRITE_BYTES = 4 * 1024 * 1024
WRITES_IN_FLIGHT = 2  # batches handed to the writer and not yet on disk: at most 12 MB per upload
# (and DirectWriter's buffer, 2 x WRITE_BYTES)
WRITEV_MAX = 1024  # IOV_MAX on Linux: the most buffers one writev takes
FIELD_MAX_BYTES = 64 * 1024  # a form field beside the file (model, prompt, …)
FIELDS_MAX = 50


class BodyTooLarge(Exception):
    """More bytes than the door allows (a 413)."""


class ClientGone(Exception):
    """The client dropped the connection before the body ended; what arrived is on disk."""


class MalformedBody(Exception):
    """Not the multipart body its Content-Type announces; ``str(error)`` says what is wrong."""


class FileSink:
    """Bytes appended to `path` (created, or opened at its end to resume), gathered into
    WRITE_BYTES batches and written by the sink's own writer thread while the event loop goes on
    receiving: at most WRITES_IN_FLIGHT batches wait for the disk (a bounded amount of memory), and
    one thread keeps them in order. `written` counts the bytes on disk plus those not yet written."""

    def __init__(self, path: Path, limit: int):
        self.path = path
        self.limit = limit
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.written = os.fstat(self.fd).st_size
        self.batch: list[bytes | memoryview] = []  # the chunks as they came: written with one writev, never copied
        self.batch_bytes = 0
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload-writer")
        self.in_flight: deque[asyncio.Future[None]] = deque()
        self.direct = DirectWriter.open(path, self.fd, self.written)  # None: through the page cache

    def add(self, data: bytes | memoryview) -> None:
        if self.written + len(data) > self.limit:
            raise BodyTooLarge
        self.batch.append(data)
        self.batch_bytes += len(data)
        self.written += len(data)

    @property
    def full(self) -> bool:
        return self.batch_bytes >= WRITE_BYTES

    async def flush(self) -> None:
        """Hand the batch to the writer; wait only when WRITES_IN_FLIGHT batches are already queued
        (a write error surfaces here, or at close)."""
        if self.batch:
            batch, self.batch, self.batch_bytes = self.batch, [], 0
            loop = asyncio.get_running_loop()
            write = self.direct.write if self.direct else functools.partial(_write_all, self.fd)
            self.in_flight.append(loop.run_in_executor(self.writer, write, batch))
        while len(self.in_flight) > WRITES_IN_FLIGHT or (self.in_flight and self.in_flight[0].done()):
            await self.in_flight.popleft()

    async def close(self) -> None:
        """Write what is gathered (also after a dropped connection: a tus client resumes from it)."""
        try:
            await self.flush()
            while self.in_flight:
                await self.in_flight.popleft()
        finally:
            for pending in self.in_flight:  # a write failed: let the others end before the fd closes
                with contextlib.suppress(Exception):
                    await pending
            self.writer.shutdown(wait=True)
            if self.direct:
                self.direct.close()  # the bytes past its last whole block, through self.fd
            os.close(self.fd)


DIRECT_BLOCK = 4096  # what O_DIRECT's offsets, lengths and buffer addresses must be multiples of


class DirectWriter:
    """The writer thread's way to the disk past the page cache (O_DIRECT). Through the page cache,
    1 GB cost the writer thread 0.3-1.0 s of CPU (each page allocated, copied into, dirtied, queued
    for writeback); this way about 0.15 s, the copy of the batches into one page-aligned buffer, and
    the disk reads them from there (bench/uploads). The bytes past the last whole block stay in the
    buffer for the next batch; close() appends the last of them through the sink's own fd. Used
    from the writer thread only."""

    @classmethod
    def open(cls, path: Path, buffered_fd: int, size: int) -> DirectWriter | None:
        """None where O_DIRECT cannot be used: a file that ends mid-block (a tus upload resumed at an
        odd offset) or a filesystem that refuses it. The sink then writes through the page cache."""
        if size % DIRECT_BLOCK or not hasattr(os, "O_DIRECT"):
            return None
        try:
            fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
        except OSError:
            return None
        return cls(fd, buffered_fd, size)

    def __init__(self, fd: int, buffered_fd: int, offset: int):
        self.fd, self.buffered_fd, self.offset = fd, buffered_fd, offset
        self.buffer = mmap.mmap(-1, 2 * WRITE_BYTES)  # anonymous memory: page-aligned
        self.carry = 0  # bytes at the buffer's start, after the last whole block written
        self.failed = False  # after a failed write nothing more is appended (the file ends where the disk said)
        self.refused = False  # the filesystem refused an O_DIRECT write: the page cache from then on

    def write(self, chunks: list[bytes | memoryview]) -> None:
        try:
            if self.refused:
                _write_all(self.buffered_fd, chunks)
            else:
                self._write_direct(chunks)
        except BaseException:
            self.failed = True
            raise

    def _write_direct(self, chunks: list[bytes | memoryview]) -> None:
        end = self.carry + sum(map(len, chunks))
        if end > len(self.buffer):  # a batch larger than usual: a larger buffer, the carry kept
            larger = mmap.mmap(-1, -(-end // DIRECT_BLOCK) * DIRECT_BLOCK)
            larger[: self.carry] = self.buffer[: self.carry]
            self.buffer.close()
            self.buffer = larger
        with memoryview(self.buffer) as view:
            position = self.carry
            for chunk in chunks:
                view[position : position + len(chunk)] = chunk
                position += len(chunk)
            whole = position - position % DIRECT_BLOCK
            try:
                done = 0
                while done < whole:
                    done += os.pwrite(self.fd, view[done:whole], self.offset + done)
            except OSError as error:
                if error.errno != errno.EINVAL:  # EINVAL: this filesystem's O_DIRECT wants other sizes
                    raise
                self.refused = True  # the file ends after the `done` bytes written: the rest appended
                _write_all(self.buffered_fd, [view[done:position]])
                self.carry = 0
                return
            self.offset += whole
            self.carry = position - whole
            if whole:
                view[: self.carry] = view[whole:position]

    def close(self) -> None:
        try:
            if self.carry and not self.failed:
                with memoryview(self.buffer) as view:
                    _write_all(self.buffered_fd, [view[: self.carry]])
        finally:
            self.buffer.close()
            os.close(self.fd)


def _write_all(fd: int, chunks: list[bytes | memoryview]) -> None:
    views = [memoryview(chunk) for chunk in chunks]
    while views:
        done = os.writev(fd, views[:WRITEV_MAX])
        while views and done >= len(views[0]):
            done -= len(views[0])
            views.pop(0)
        if views and done:
            views[0] = views[0][done:]
    start_writeback(fd)


# Linux's sync_file_range(2), which Python's os module lacks; None elsewhere (macOS), where the
# pages are left to the kernel's flusher as before.
_sync_file_range = getattr(ctypes.CDLL(None, use_errno=True), "sync_file_range", None)
if _sync_file_range is not None:
    _sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h>: start writing the dirty pages out, wait for none of them


def start_writeback(fd: int) -> None:
    """Start writing the file's dirty pages to the disk now, without waiting for the disk (the
    pages already on their way are skipped, so this costs little per batch). Without it the bytes of
    a large upload stay dirty in memory until the kernel's flusher or a sync writes them all at
    once: on the bench's disk the sync after a 1 GB upload took 0.4-0.5 s, about a third of the
    upload; with it, a few ms (bench/uploads). Failure changes nothing but when the bytes reach
    the disk, so it is not checked."""
    if _sync_file_range is not None:
        _sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)  # offset 0, length 0: the whole file


async def _chunks(receive):
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        if message.get("body"):
            yield message["body"]
        if not message.get("more_body", False):
            return


async def read_raw(receive, sink: FileSink) -> None:
    """The whole body into `sink` (BodyTooLarge past its limit, ClientGone when the client leaves)."""
    async for chunk in _chunks(receive):
        sink.add(chunk)
        if sink.full:
            await sink.flush()
    await sink.flush()


async def read_multipart(
    receive, content_type: str, sink: FileSink, file_field: str = "file"
) -> tuple[dict, str | None]:
    """A multipart/form-data body: the part named `file_field` into `sink`, the others as
    {name: [values]}. Answers (fields, the file's name as the client gave it, or None when no such
    part came)."""
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise MalformedBody("A multipart body needs a boundary in its Content-Type.")
    reader = _MultipartParts(sink, file_field)
    parser = MultipartParser(boundary, reader.callbacks())
    try:
        async for chunk in _chunks(receive):
            parser.write(chunk)
            if sink.full:
                await sink.flush()
        parser.finalize()
    except (ValueError, LookupError) as error:  # python-multipart's MultipartParseError is a ValueError
        raise MalformedBody(f"The multipart body could not be read: {error}") from None
    await sink.flush()
    return reader.fields, (reader.filename if reader.found_file else None)


class _MultipartParts:
    """python-multipart's callbacks: each part's headers, then its bytes to the sink (the file part)
    or to a form field (the others, each at most FIELD_MAX_BYTES, at most FIELDS_MAX of them)."""

    def __init__(self, sink: FileSink, file_field: str):
        self.sink, self.file_field = sink, file_field
        self.fields: dict[str, list[str]] = {}
        self.found_file = False
        self.filename: str | None = None
        self.name: str | None = None
        self.header = self.value = b""
        self.headers: dict[bytes, bytes] = {}
        self.is_file = False
        self.pending: list[bytes] = []  # a form field's bytes, until its part ends

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self.on_part_begin,
            "on_part_data": self.on_part_data,
            "on_part_end": self.on_part_end,
            "on_header_field": self.on_header_field,
            "on_header_value": self.on_header_value,
            "on_header_end": self.on_header_end,
            "on_headers_finished": self.on_headers_finished,
        }

    def on_part_begin(self) -> None:
        self.headers, self.name = {}, None
        self.pending.clear()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.value += data[start:end]

    def on_header_end(self) -> None:
        self.headers[self.header.lower()] = self.value
        self.header = self.value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.headers.get(b"content-disposition", b""))
        self.name = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        part_filename = None if filename is None else filename.decode("utf-8", "replace")
        self.is_file = self.name == self.file_field and not self.found_file
        if self.is_file:
            self.found_file, self.filename = True, part_filename or ""

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.is_file:
            # A view of the received bytes, not a copy; a buffer that is not immutable bytes is
            # copied, as the parser could change it before the writer has written it.
            self.sink.add(memoryview(data)[start:end] if isinstance(data, bytes) else bytes(data[start:end]))
            return
        self.pending.append(data[start:end])
        if sum(map(len, self.pending)) > FIELD_MAX_BYTES:
            raise MalformedBody(f"The form field {self.name!r} is longer than {FIELD_MAX_BYTES} bytes.")

    def on_part_end(self) -> None:
        if not self.is_file:
            if sum(map(len, self.fields.values()), 0) >= FIELDS_MAX:
                raise MalformedBody(f"A form may carry at most {FIELDS_MAX} fields.")
            self.fields.setdefault(self.name or "", []).append(b"".join(self.pending).decode("utf-8", "replace"))
        self.is_file = False
