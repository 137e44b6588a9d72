"""The body readers of the doors that take files (transcription.api.doors.bodies), driven as uvicorn
drives them: ASGI messages of any size, the multipart parser the service uses, a real file."""

import asyncio
import ctypes
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcription.api.doors import bodies

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
    _read_raw_into(path, chunks)
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


@pytest.mark.parametrize("way", ["direct", "page cache"])
def test_a_write_that_fails_surfaces_as_the_error_of_the_read(tmp_path, monkeypatch, way):
    """A disk error in the writer thread is not lost behind the receiving loop."""
    monkeypatch.setattr(bodies, "WRITE_BYTES", 10 if way == "page cache" else 5000)
    path = tmp_path / "full.part"

    async def read():
        sink = bodies.FileSink(path, limit=10**9)
        assert sink.direct is not None  # a fresh file on a disk
        if way == "direct":
            os.close(sink.direct.fd)
            sink.direct.fd = os.open("/dev/full", os.O_WRONLY)  # every write: ENOSPC, as on a full disk
        else:
            sink.direct.close()
            sink.direct = None
            os.close(sink.fd)
            sink.fd = os.open("/dev/full", os.O_WRONLY)
        try:
            await bodies.read_raw(_receiver(_as_messages([b"b" * 2000] * 10)), sink)
        finally:
            await sink.close()

    with pytest.raises(OSError, match="No space left"):
        asyncio.run(read())


class CacheStat(ctypes.Structure):
    """Linux's struct cachestat: how many of a file's pages are in the page cache, dirty, on their way."""

    _fields_ = [(name, ctypes.c_uint64) for name in ("cache", "dirty", "writeback", "evicted", "recently_evicted")]


def _page_cache(path) -> CacheStat:
    """cachestat(2) (Linux 6.5) of the whole file."""
    whole = (ctypes.c_uint64 * 2)(0, 0)
    stat = CacheStat()
    fd = os.open(path, os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.syscall(451, fd, ctypes.byref(whole), ctypes.byref(stat), 0) == 0, os.strerror(ctypes.get_errno())
    finally:
        os.close(fd)
    return stat


def _read_raw_into(path, chunks: list[bytes]) -> bodies.FileSink:
    async def read():
        sink = bodies.FileSink(path, limit=10**9)
        try:
            await bodies.read_raw(_receiver(_as_messages(chunks)), sink)
        finally:
            await sink.close()
        return sink

    return asyncio.run(read())


def test_on_a_disk_the_bytes_go_past_the_page_cache(tmp_path, monkeypatch):
    """A fresh file is written with O_DIRECT, batch after batch, whatever the chunks' sizes; only the
    bytes after its last whole block go through the page cache."""
    monkeypatch.setattr(bodies, "WRITE_BYTES", 64 * 1024)
    chunks = [
        os.urandom(size) for size in [1, 4095, 4096, 70_000, 300_000, 5] * 8
    ]  # a batch larger than the buffer too
    path = tmp_path / "direct.part"

    sink = _read_raw_into(path, chunks)

    assert sink.direct is not None and not sink.direct.refused
    assert _page_cache(path).cache <= 1  # the last block's page only (before the file is read back)
    assert path.read_bytes() == b"".join(chunks)


def test_a_resume_at_an_odd_offset_goes_through_the_page_cache_its_pages_already_on_their_way(tmp_path):
    path = tmp_path / "resumed.part"
    path.write_bytes(b"a" * 1000)  # a tus upload stopped after 1000 bytes
    chunks = [os.urandom(256 * 1024) for _ in range(48)]  # 12 MB: three batches

    sink = _read_raw_into(path, chunks)

    assert sink.direct is None
    assert path.read_bytes() == b"a" * 1000 + b"".join(chunks)
    stat = _page_cache(path)
    assert stat.dirty <= stat.cache // 20  # start_writeback sent them on: without it all 3000 pages wait dirty


def test_where_the_filesystem_refuses_an_o_direct_write_the_page_cache_takes_over(tmp_path, monkeypatch):
    monkeypatch.setattr(bodies, "WRITE_BYTES", 64 * 1024)
    chunks = [os.urandom(50_000) for _ in range(10)]
    path = tmp_path / "refused.part"

    async def read():
        sink = bodies.FileSink(path, limit=10**9)
        assert sink.direct is not None
        sink.direct.offset = 1  # an O_DIRECT write at an offset mid-block: the kernel answers EINVAL
        try:
            await bodies.read_raw(_receiver(_as_messages(chunks)), sink)
        finally:
            await sink.close()
        return sink

    sink = asyncio.run(read())
    assert sink.direct is not None and sink.direct.refused
    assert path.read_bytes() == b"".join(chunks)
