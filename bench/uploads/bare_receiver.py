"""The floor for any receiver written in Python: a socket server with no HTTP stack, no event loop,
no checks and no rows, that reads one request's Content-Length bytes and writes them to a file as
they come (blocking recv and write in one thread). bench/uploads/run.py sends it the same file with
the same curl command, so the upload's figure can be read against what this machine allows. Like
the upload's writer (transcription/api/doors/bodies.py), it starts the writeback of what it wrote every
4 MB (sync_file_range), so the floor writes to the disk the way the server does.

    python bench/uploads/bare_receiver.py PORT FILE     # answers one request per connection, forever
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys

CHUNK = 256 * 1024  # what asyncio and uvloop read at a time
WRITEBACK_EVERY = 4 * 1024 * 1024  # the upload's batch (bodies.WRITE_BYTES)
sync_file_range = ctypes.CDLL(None).sync_file_range
sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
SYNC_FILE_RANGE_WRITE = 2


def receive_one(connection: socket.socket, path: str) -> None:
    head = b""
    while b"\r\n\r\n" not in head:
        data = connection.recv(65536)
        if not data:
            return
        head += data
    headers, _, body = head.partition(b"\r\n\r\n")
    lines = headers.lower().split(b"\r\n")
    if b"expect: 100-continue" in lines:
        connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, body)
        received = unsynced = len(body)
        while received < length:
            data = connection.recv(CHUNK)
            if not data:
                break
            os.write(fd, data)
            received += len(data)
            unsynced += len(data)
            if unsynced >= WRITEBACK_EVERY:
                sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)
                unsynced = 0
    finally:
        os.close(fd)
    connection.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def main() -> None:
    port, path = int(sys.argv[1]), sys.argv[2]
    server = socket.create_server(("127.0.0.1", port))
    print("listening", flush=True)
    while True:
        connection, _ = server.accept()
        with connection:
            receive_one(connection, path)


if __name__ == "__main__":
    main()
