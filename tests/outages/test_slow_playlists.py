"""A playlist site that never answers cannot hold the web tier: on bin/web (the production
server), four listings of it at once end in time (a 422 on `url`, or a 503 with Retry-After once
the process runs as many listings as it may), and a poll sent meanwhile answers within a second."""

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.servers import request, running_web

LISTING_LIMIT_SECONDS = 3


@pytest.fixture
def silent_host():
    """A host that accepts connections and never says a word."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)  # connections complete in the kernel's backlog; nothing ever reads them
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.django_db(transaction=True)
def test_listings_of_a_silent_host_end_in_time_and_never_block_polls(token, silent_host, tmp_path):
    from accounts.models import Account
    from transcription import services
    from transcription.models import JobType

    job = services.job_create(Account.objects.get(), url="https://example.com/v.mp4", type=JobType.TRANSCRIPT)
    env = {
        "ALLOW_PRIVATE_URLS": "true",
        "PLAYLIST_LISTING_TIMEOUT_SECONDS": str(LISTING_LIMIT_SECONDS),
        "PLAYLIST_LISTINGS_PER_PROCESS": "2",
    }
    with running_web(tmp_path / "web.log", **env) as web:
        previews = [f"{web}/v1/api/playlist?url={silent_host}/feed{n}.xml" for n in range(3)]
        batch = (f"{web}/v1/api/transcribe-playlist", {"url": f"{silent_host}/feed3.xml"})
        with ThreadPoolExecutor(4) as pool:
            started = time.monotonic()
            listings = [pool.submit(request, "GET", url, token) for url in previews]
            listings.append(pool.submit(request, "POST", batch[0], token, batch[1]))
            time.sleep(0.5)  # the listings have reached the server
            poll_started = time.monotonic()
            status, _, polled = request("GET", f"{web}/v1/api/transcription/{job.id}", token, timeout=5)
            poll_seconds = time.monotonic() - poll_started
            answers = [future.result() for future in listings]
            all_seconds = time.monotonic() - started

    assert (status, polled["state"]) == (200, "waiting")
    assert poll_seconds < 1, f"the poll took {poll_seconds:.1f} s"
    assert all_seconds < LISTING_LIMIT_SECONDS + 3, f"the listings took {all_seconds:.1f} s"
    statuses = sorted(answer[0] for answer in answers)
    assert statuses == [422, 422, 503, 503], answers
    for status, headers, body in answers:
        if status == 422:
            [error] = body["detail"]
            assert error["loc"][-1] == "url" and "could not be listed in time" in error["msg"], body
        else:
            assert int(headers["Retry-After"]) > 0 and "Too many playlists" in body["detail"], body
