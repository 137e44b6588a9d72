"""A playlist site that never answers cannot hold the web tier: on bin/web (the production
server), four listings of it at once end in time (a 422 on `url`, or a 503 with Retry-After once
the process runs as many listings as it may), and a poll sent meanwhile answers while the listings
still wait."""

import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.processes import request, running_web
from tests.support import ends_within, wait_until

LISTING_LIMIT_SECONDS = 3


class SilentHost:
    """A host that accepts connections and never says a word; it counts the connections."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.connections.append(self.server.accept()[0])  # held open, never read nor answered
            except OSError:  # closed at the end of the test
                return

    def close(self):
        self.server.close()
        for connection in self.connections:
            connection.close()


@pytest.fixture
def silent_host():
    host = SilentHost()
    yield host
    host.close()


@pytest.mark.django_db(transaction=True)
def test_listings_of_a_silent_host_end_in_time_and_never_block_polls(token, silent_host, tmp_path):
    from accounts.models import Account
    from transcription.models import JobType
    from transcription.writes import services

    job = services.job_create(Account.objects.get(), url="https://example.com/v.mp4", type=JobType.TRANSCRIPT)
    env = {
        "ALLOW_PRIVATE_URLS": "true",
        "PLAYLIST_LISTING_TIMEOUT_SECONDS": str(LISTING_LIMIT_SECONDS),
        "PLAYLIST_LISTINGS_PER_PROCESS": "2",
    }
    with running_web(tmp_path / "web.log", **env) as web:
        previews = [f"{web}/v1/api/playlist?url={silent_host.url}/feed{n}.xml" for n in range(3)]
        batch = (f"{web}/v1/api/transcribe-playlist", {"url": f"{silent_host.url}/feed3.xml"})
        with ThreadPoolExecutor(4) as pool:
            listings = [pool.submit(request, "GET", url, token) for url in previews]
            listings.append(pool.submit(request, "POST", batch[0], token, batch[1]))
            # The process runs as many listings as it may: both have reached the silent host.
            wait_until(lambda: len(silent_host.connections) >= 2, "two listings at the silent host", timeout=60)
            with ends_within(LISTING_LIMIT_SECONDS, "the listings, once at the silent host"):
                status, _, polled = request("GET", f"{web}/v1/api/transcription/{job.id}", token, timeout=5)
                # Answered while the listings still wait for the host: the poll did not queue behind them.
                waiting_listings = sum(not future.done() for future in listings)
                answers = [future.result() for future in listings]

    assert (status, polled["state"]) == (200, "waiting")
    assert waiting_listings >= 2, "the poll was answered only after the listings ended"
    statuses = sorted(answer[0] for answer in answers)
    assert statuses == [422, 422, 503, 503], answers
    for status, headers, body in answers:
        if status == 422:
            [error] = body["detail"]
            assert error["loc"][-1] == "url" and "could not be listed in time" in error["msg"], body
        else:
            assert int(headers["Retry-After"]) > 0 and "Too many playlists" in body["detail"], body
