"""The body readers of the doors that take files (transcription.api.bodies), driven as uvicorn
drives them: ASGI messages of any size, the multipart parser the service uses, a real file."""

import asyncio
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcription.api import bodies

BOUNDARY = b"----boundary7MA4YWxkTrZu0gW"


def _messages(body: bytes, cuts: list[int]) -> list[dict]:
    edges = sorted({0, len(body), *(cut % (len(body) + 1) for cut in cuts)})
    pieces = [body[a:b] for a, b in zip(edges, edges[1:], strict=False)]
    return [{"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1} for i, piece in enumerate(pieces)]


def _receiver(messages: list[dict]):
    queue = list(messages)

    async def receive():
        return queue.pop(0)

    return receive


def _multipart(content: bytes, note: str = "hello") -> bytes:
    return (
        b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="note"\r\n\r\n' + note.encode() + b"\r\n"
        b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
        b"Content-Type: audio/wav\r\n\r\n" + content + b"\r\n--" + BOUNDARY + b"--\r\n"
    )


# file bytes that look like the boundary's beginnings, so the parser's lookbehind path is taken
CONTENT = st.lists(
    st.sampled_from([b"\r", b"\r\n", b"\r\n--", b"\r\n--" + BOUNDARY[:9], b"x" * 70, os.urandom(33), b"\0" * 512]),
    max_size=40,
).map(b"".join)


@settings(max_examples=60, deadline=None)
@given(content=CONTENT, cuts=st.lists(st.integers(min_value=0, max_value=10**6), max_size=30))
def test_a_multipart_file_arrives_byte_for_byte_however_the_body_is_cut(tmp_path_factory, content, cuts):
    path = tmp_path_factory.mktemp("sink") / "upload.part"
    body = _multipart(content)

    async def read():
        sink = bodies.FileSink(path, limit=10**9)
        try:
            return await bodies.read_multipart(
                _receiver(_messages(body, cuts)), f"multipart/form-data; boundary={BOUNDARY.decode()}", sink
            )
        finally:
            await sink.close()

    fields, filename = asyncio.run(read())
    assert path.read_bytes() == content
    assert (fields, filename) == ({"note": ["hello"]}, "a.wav")


def test_a_raw_body_of_many_batches_is_written_in_order(tmp_path, monkeypatch):
    """More batches than may wait for the disk at once: every byte lands, in the order sent."""
    monkeypatch.setattr(bodies, "WRITE_BYTES", 4096)
    chunks = [os.urandom(1000 + i) for i in range(400)]  # about 100 batches of 4 KB
    path = tmp_path / "raw.part"

    async def read():
        sink = bodies.FileSink(path, limit=10**9)
        try:
            await bodies.read_raw(_receiver(_as_messages(chunks)), sink)
        finally:
            await sink.close()

    asyncio.run(read())
    assert path.read_bytes() == b"".join(chunks)


def _as_messages(chunks: list[bytes]) -> list[dict]:
    return [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]


def test_past_the_limit_the_body_is_refused_and_what_came_is_kept(tmp_path):
    path = tmp_path / "big.part"

    async def read():
        sink = bodies.FileSink(path, limit=2500)
        try:
            await bodies.read_raw(_receiver(_as_messages([b"a" * 1000] * 5)), sink)
        finally:
            await sink.close()

    with pytest.raises(bodies.BodyTooLarge):
        asyncio.run(read())
    assert path.read_bytes() == b"a" * 2000


def test_a_write_that_fails_surfaces_as_the_error_of_the_read(tmp_path, monkeypatch):
    """A disk error in the writer thread is not lost behind the receiving loop."""
    monkeypatch.setattr(bodies, "WRITE_BYTES", 10)
    path = tmp_path / "full.part"

    async def read():
        sink = bodies.FileSink(path, limit=10**9)
        os.close(sink.fd)
        sink.fd = os.open("/dev/full", os.O_WRONLY)  # every write: ENOSPC, as on a full disk
        try:
            await bodies.read_raw(_receiver(_as_messages([b"b" * 20] * 10)), sink)
        finally:
            await sink.close()

    with pytest.raises(OSError, match="No space left"):
        asyncio.run(read())
