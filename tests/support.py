"""Helpers the test modules share: waiting on a condition, driving the API, scoring text, feeds.

Test modules import from here (and from the fixtures' own modules: media_server, worker, staff),
never from each other.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

from django.contrib.auth.hashers import PBKDF2PasswordHasher

# A wall-clock assertion in a test bounds an operation by its own timeout, never by a speed figure
# (those come from the benchmarks under bench/): the operation must end within that timeout plus
# this much for a loaded machine to schedule the processes involved.
SCHEDULING_SLACK_SECONDS = 5.0


class QuickPBKDF2Hasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 at 1,000 rounds, the suite's hasher (tests/conftest.py): a hash names its
    rounds, so Django's own hasher in a web process the test starts checks it as it checks its own."""

    iterations = 1_000


@contextlib.contextmanager
def ends_within(timeout: float, what: str):
    """Assert that the block ends within `timeout` (the operation's own timeout), plus the slack."""
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    assert took < timeout + SCHEDULING_SLACK_SECONDS, f"{what} took {took:.1f} s; its own timeout is {timeout} s"


def wait_until(condition, what, timeout: float = 10, interval: float = 0.05):
    """Call `condition()` until it returns something true and return that; fail after `timeout`
    seconds saying what was awaited: `what`, or, when it is a function, what it says then (where
    the awaited thing stood). The suite's one wait loop (await_until is its async twin)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what() if callable(what) else what} after {timeout} s")
        time.sleep(interval)


async def await_until(condition, what: str, timeout: float = 10, interval: float = 0.05):
    """wait_until for a coroutine `condition` in an event loop (an MCP client's session)."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout} s")
        await asyncio.sleep(interval)


def wait_for(job_id, ready, what: str, timeout: float = 120):
    """Poll the database until `ready(job)` is true; return the job. Fails after `timeout` seconds
    saying `what` was awaited and where the job stood."""
    from transcription.models import Job

    last: list[Job] = []

    def job_ready():
        last[:] = [Job.objects.get(pk=job_id)]
        return last[0] if ready(last[0]) else None

    def where() -> str:
        job = last[0]
        return (
            f"{what} of job {job_id}; it is {job.state} ({job.progress}%), "
            f"claimed until {job.lease_until}, error {job.error!r}"
        )

    return wait_until(job_ready, where, timeout, interval=0.3)


def job_ended(base: str, token: str, job_id, timeout: float = 300, interval: float = 0.5) -> dict:
    """GET the job from the server at `base` until it is done or failed; its body."""
    import requests

    def ended():
        body = requests.get(
            f"{base}/v1/api/transcription/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=30
        ).json()
        return body if body["state"] in ("done", "failed") else None

    return wait_until(ended, f"end of job {job_id}", timeout, interval)


def wait_for_job(job_id, timeout: float = 120, states=("done", "failed")):
    """Wait until the job reaches one of `states` (by default, until it ends)."""
    return wait_for(job_id, lambda job: job.state in states, f"state in {states}", timeout)


def wait_for_lapsed_claim(job_id, timeout: float = 30):
    """Wait until the job's worker claim has lapsed (its worker is dead)."""
    from django.utils import timezone

    return wait_for(
        job_id, lambda job: job.lease_until is None or job.lease_until < timezone.now(), "lapsed claim", timeout
    )


def queued(broker) -> list[tuple[str, str, str]]:
    """(queue, task name, job id) of every message waiting in the broker (the `broker` fixture)."""
    found = []
    for queue in ("media", "asr", "burn"):
        for raw in broker.lrange(queue, 0, -1):
            headers = json.loads(raw)["headers"]
            found.append((queue, headers["task"].rsplit(".", 1)[1], headers["argsrepr"].strip("(),[]'")))
    return found


def submit(api, path: str, body: dict) -> str:
    """POST a job request through the API client; the new job's id."""
    response = api.post(path, data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["id"]


def poll_until_done(api, job_id, timeout: float = 420):
    """Poll the job as a client would until it ends: (last body, [(state, progress) as seen])."""
    seen: list[tuple[str, int]] = []

    def ended():
        body = api.get(f"/v1/api/transcription/{job_id}").json()
        if not seen or seen[-1] != (body["state"], body["progress"]):
            seen.append((body["state"], body["progress"]))
        return body if body["state"] in ("done", "failed") else None

    return wait_until(ended, lambda: f"end of job {job_id}: {seen}", timeout, interval=0.5), seen


def normalize(text: str) -> list[str]:
    """Words for scoring: lowercased, without punctuation, hyphens split."""
    text = text.lower().replace("-", " ")
    text = re.sub(r"[^\w\s']", " ", text)
    return text.replace("'", "").split()


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate: word-level Levenshtein distance over the reference's length."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    d = list(range(len(hyp) + 1))  # one row at a time
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[len(hyp)] / max(1, len(ref))


def feed(items: list[tuple[str, str, int | None]], title="Test podcast") -> bytes:
    """An RSS podcast feed: one <item> with an <enclosure> per (name, url, seconds)."""
    entries = "".join(
        f"<item><title>{name}</title><guid>{name}</guid>"
        f'<enclosure url="{url}" type="video/mp4" length="1000"/>'
        + (f"<itunes:duration>{seconds}</itunes:duration>" if seconds is not None else "")
        + "</item>"
        for name, url, seconds in items
    )
    return (
        '<?xml version="1.0"?><rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">'
        f"<channel><title>{title}</title><link>http://127.0.0.1/</link>{entries}</channel></rss>"
    ).encode()


def font_families() -> set[str]:
    """The font families fontconfig knows on this machine (what libass can draw with)."""
    out = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True, check=True).stdout
    return {name.strip() for line in out.splitlines() for name in line.split(",") if name.strip()}


# What a file the customer must not reach would say to a reader, and what reference-following
# formats name it in (issue 41): each a function of the canary's path.
REFERENCING_FILES = {
    "hls": lambda canary: (
        f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:3.0,\n{canary.with_suffix('.ts')}\n#EXT-X-ENDLIST\n"
    ),
    "concat": lambda canary: f"file '{canary.with_suffix('.wav').name}'\n",
    "ffconcat": lambda canary: f"ffconcat version 1.0\nfile '{canary.with_suffix('.wav').name}'\n",
    "dash": lambda canary: (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011"'
        ' type="static" mediaPresentationDuration="PT3S" minBufferTime="PT1S"><Period>'
        '<AdaptationSet mimeType="audio/mp4"><Representation id="a" bandwidth="64000" codecs="mp4a.40.2"'
        f' audioSamplingRate="16000"><BaseURL>{canary.with_suffix(".mp4")}</BaseURL></Representation>'
        "</AdaptationSet></Period></MPD>\n"
    ),
}
CANARY_SUFFIXES = (".ts", ".wav", ".mp4")  # the names REFERENCING_FILES give the canary


@contextlib.contextmanager
def canary_pipes(stem: Path):
    """Named pipes at `stem` with each of CANARY_SUFFIXES, where a file the customer must not reach
    would be; yields an Event set once anything opened one to read. Opening a pipe to read waits for
    a writer, and a thread tries to open each as a writer every few milliseconds (which succeeds only
    while a reader has it open), so no reader goes unseen, and none is left waiting."""
    paths = [stem.with_suffix(suffix) for suffix in CANARY_SUFFIXES]
    for path in paths:
        os.mkfifo(path)
    opened, stop = threading.Event(), threading.Event()

    def watch():
        while not stop.is_set():
            for path in paths:
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError as error:
                    if error.errno != errno.ENXIO:  # ENXIO: nobody is reading it
                        raise
                else:
                    opened.set()
            time.sleep(0.005)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        stop.set()
        thread.join(timeout=5)
        for path in paths:
            path.unlink(missing_ok=True)
