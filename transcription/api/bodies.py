"""Request bodies read in the event loop, straight to a file: the doors that take files (uploads,
the OpenAI-compatible endpoints) never hold a body in memory, nor a thread while a slow client
sends it.

The ASGI messages arrive as the socket gives them (tens of KB); they are gathered into
WRITE_BYTES and written by a worker thread, so a disk that stalls the writer (the kernel throttles
a process with too many dirty pages) never stalls the event loop, and each hand-over is worth it.
A multipart body goes through python-multipart's streaming parser (Starlette's): the part named
`file` to the file, the other fields into small buffers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from python_multipart.multipart import MultipartParser, parse_options_header

if TYPE_CHECKING:  # pragma: no cover
    from python_multipart.multipart import MultipartCallbacks  # declared for type checkers only

WRITE_BYTES = 4 * 1024 * 1024
FIELD_MAX_BYTES = 64 * 1024  # a form field beside the file (model, prompt, …)
FIELDS_MAX = 50


class BodyTooLarge(Exception):
    """More bytes than the door allows (a 413)."""


class ClientGone(Exception):
    """The client dropped the connection before the body ended; what arrived is on disk."""


class MalformedBody(Exception):
    """Not the multipart body its Content-Type announces; ``str(error)`` says what is wrong."""


class FileSink:
    """Bytes appended to `path` (created, or opened at its end to resume), buffered and written by a
    worker thread. `written` counts the bytes on disk plus those buffered."""

    def __init__(self, path: Path, limit: int):
        self.path = path
        self.limit = limit
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.written = os.fstat(self.fd).st_size
        self.buffer = bytearray()

    def add(self, data: bytes) -> None:
        if self.written + len(data) > self.limit:
            raise BodyTooLarge
        self.buffer += data
        self.written += len(data)

    @property
    def full(self) -> bool:
        return len(self.buffer) >= WRITE_BYTES

    async def flush(self) -> None:
        if self.buffer:
            chunk, self.buffer = self.buffer, bytearray()
            await anyio.to_thread.run_sync(_write_all, self.fd, chunk)

    async def close(self) -> None:
        """Write what is buffered (also after a dropped connection: a tus client resumes from it)."""
        try:
            await self.flush()
        finally:
            os.close(self.fd)


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
            self.sink.add(data[start:end])
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
