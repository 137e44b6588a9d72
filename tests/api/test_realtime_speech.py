"""/v1/realtime with real speech (issue 52): bin/web holds the socket, a live worker (bin/live) holds
the model, Redis carries audio and events between them. A recording streamed at real speed gets
deltas while it plays and completed text; its audio is kept as a job (a Celery worker runs it)
that GET /v1/api/transcription/{id} reads, charged once, by the stream; a worker killed mid-stream
gives the client an `error` and the stream is charged once."""

import asyncio
import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest
import websockets

from billing.models import LedgerEntry, LiveStream
from billing.selectors import account_balance
from harness.processes import request, running_web, running_worker, service_env, start, stop
from tests.support import wait_until
from transcription.models import Job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

WAV = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
CHUNK_MS = 100


def reading_pcm24k() -> bytes:
    """The reading as OpenAI's clients send it: 24 kHz mono PCM16, then 2 s of silence."""
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", str(WAV), "-f", "s16le", "-ac", "1", "-ar", "24000", "-"],
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout
    return raw + bytes(2 * 24000 * 2)


@pytest.fixture(scope="module")
def pcm24k() -> bytes:
    return reading_pcm24k()


@pytest.fixture(scope="module")
def live_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    env = service_env(LIVE_STREAMS_PER_WORKER="1")
    process = start(
        [str(Path(__file__).parents[2] / "bin" / "live")],
        tmp_path_factory.mktemp("live") / "live.log",
        ready="ready",
        env=env,
        timeout=180,
    )
    try:
        yield process
    finally:
        stop(process)


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_web(tmp_path_factory.mktemp("web") / "web.log") as base:
        yield base


@pytest.fixture
def worker(tmp_path):
    """The job pipeline (bin/worker, every queue): a kept stream's job runs there. For its one test
    only, so the jobs the other tests' streams leave queued never run beside their streams."""
    with running_worker(tmp_path / "worker.log") as process:
        yield process


async def stream(url: str, token: str, audio: bytes, on_event=None, session=None) -> list[tuple[float, dict]]:
    """Send `audio` at real speed (after `session`, a session.update's, when given); every event
    with the seconds since the first audio went."""
    events: list[tuple[float, dict]] = []
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        await ws.recv()
        if session is not None:
            await ws.send(json.dumps({"type": "session.update", "session": {"type": "transcription", **session}}))
            events.append((0.0, json.loads(await ws.recv())))
        began = time.monotonic()

        async def listen():
            async for text in ws:
                event = json.loads(text)
                events.append((time.monotonic() - began, event))
                if on_event is not None:
                    on_event(event)

        listener = asyncio.ensure_future(listen())
        step = 24000 * 2 * CHUNK_MS // 1000
        for offset in range(0, len(audio), step):
            chunk = base64.b64encode(audio[offset : offset + step]).decode()
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
            await asyncio.sleep(max(0.0, began + (offset + step) / 48000 - time.monotonic()))
            if listener.done():
                break
        with contextlib.suppress(Exception):
            await asyncio.wait_for(_completed(events), 10)
        listener.cancel()
    return events


async def _completed(events):
    while not any(e["type"].endswith(".completed") or e["type"] == "error" for _, e in events):
        await asyncio.sleep(0.05)


def test_a_reading_streamed_gets_deltas_while_it_plays_and_its_text(web, live_worker, token, pcm24k):
    url = web.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    events = asyncio.run(stream(url, token, pcm24k))
    kinds = [event["type"] for _, event in events]
    deltas = [(at, e) for at, e in events if e["type"].endswith(".delta")]
    completed = [e for _, e in events if e["type"].endswith(".completed")]
    assert "input_audio_buffer.speech_started" in kinds, kinds
    assert deltas, kinds
    assert completed, kinds
    text = " ".join(e["transcript"] for e in completed).lower()
    assert "dashwood" in text or "sussex" in text or "family" in text, text
    for item in {e["item_id"] for e in completed}:
        joined = "".join(e["delta"] for _, e in deltas if e["item_id"] == item)
        assert joined == next(e["transcript"] for e in completed if e["item_id"] == item)
    started = next(at for at, e in events if e["type"] == "input_audio_buffer.speech_started")
    done = [at for at, e in events if e["type"].endswith(".completed")]
    print(
        f"speech started at {started:.2f} s, first delta {deltas[0][0]:.2f} s after the first audio, "
        f"{len(deltas)} deltas, completed at {[round(at, 2) for at in done]} s; audio {len(pcm24k) / 48000:.2f} s"
    )
    duration = len(pcm24k) / 48000
    assert deltas[0][0] < duration, "words came while the reading still played"
    wait_until(lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "settled", timeout=20)
    entry = LedgerEntry.objects.get(source=LedgerEntry.Source.LIVE)
    assert -entry.seconds == int(duration) + (duration % 1 > 0)


def test_the_shell_client_of_using_md_prints_the_words_of_a_recording(web, live_worker, token, tmp_path):
    """docs/using.md's live.py, as typed there, fed by `ffmpeg -re` (real speed)."""
    text = (Path(__file__).parents[2] / "docs" / "using.md").read_text()
    client = tmp_path / "live.py"
    client.write_text(re.search(r"```python\n(# live\.py: .*?)```", text, re.S)[1])
    ffmpeg = ["ffmpeg", "-nostdin", "-v", "error", "-re", "-i", str(WAV), *"-f s16le -ac 1 -ar 24000 -".split()]
    env = {**os.environ, "TRANSCRIPTION_TOKEN": token}
    with subprocess.Popen(ffmpeg, stdout=subprocess.PIPE) as source:
        said = subprocess.run(
            [sys.executable, str(client), web.replace("http://", "ws://") + "/v1/realtime"],
            stdin=source.stdout,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert said.returncode == 0, said.stderr
    assert "dashwood" in said.stdout.lower() or "sussex" in said.stdout.lower(), said.stdout


def test_a_stream_is_kept_as_a_job_that_any_door_reads_charged_once(web, live_worker, worker, token, account, pcm24k):
    """The `openai` SDK's client streams (faster than real time) and is told the job's id among
    OpenAI's events; once the stream ends the job runs as an upload's does: the words in its text
    with speaker tags, its SRT and WebVTT, read through GET /v1/api/transcription/{id}. The ledger
    moves once, for the stream."""
    balance = account_balance(account.pk)

    async def talk():
        client = openai.AsyncOpenAI(api_key=token, base_url=web + "/v1")
        events = []
        async with client.realtime.connect(extra_query={"intent": "transcription"}) as connection:
            events.append(await connection.recv())
            step = 24000 * 2 // 2  # half a second
            for offset in range(0, len(pcm24k), step):
                chunk = base64.b64encode(pcm24k[offset : offset + step]).decode()
                await connection.input_audio_buffer.append(audio=chunk)
            # what a started stream keeps is fixed: its format (one recording, one format), and whether
            await connection.session.update(
                session={"type": "transcription", "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}
            )
            await connection.session.update(session={"type": "transcription", "keep_recording": False})
            while not any(e.type.endswith(".completed") for e in events):
                events.append(await asyncio.wait_for(connection.recv(), 15))
        return events

    began = time.monotonic()
    events = asyncio.run(talk())
    kinds = [event.type for event in events]
    assert kinds[0] == "session.created" and "transcription_session.job" in kinds, kinds
    announced = events[kinds.index("transcription_session.job")].to_dict()
    assert set(announced) == {"type", "event_id", "job"} and set(announced["job"]) == {"id", "url"}
    job_id = announced["job"]["id"]
    assert announced["job"]["url"] == f"{web}/v1/api/transcription/{job_id}"
    assert kinds.index("transcription_session.job") < kinds.index("input_audio_buffer.speech_started"), kinds
    refused = [(e.error.code, e.error.param) for e in events if e.type == "error"]
    assert refused == [("format_locked", "session.audio.input.format"), ("invalid_value", "session.keep_recording")]

    def finished():
        status, _, document = request("GET", announced["job"]["url"], token)
        assert status == 200, document
        return document if document["state"] in ("done", "failed") else None

    document = wait_until(finished, "the stream's job ended", timeout=60, interval=0.5)
    assert document["state"] == "done", document
    text = document["txt"].lower()
    assert "speaker 1:" in text and ("dashwood" in text or "sussex" in text or "family" in text), text
    assert "-->" in document["srt"] and ("dashwood" in document["srt"].lower() or "sussex" in document["srt"].lower())
    assert document["webvtt"].startswith("WEBVTT")
    print(f"stream and job done in {time.monotonic() - began:.1f} s")
    wait_until(lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "settled", timeout=20)
    entries = list(LedgerEntry.objects.filter(account=account).exclude(kind=LedgerEntry.Kind.GRANT))
    assert [(e.source, e.live_stream_id is not None) for e in entries] == [(LedgerEntry.Source.LIVE, True)]
    seconds = len(pcm24k) / 48000
    assert -entries[0].seconds == int(seconds) + (seconds % 1 > 0)
    assert account_balance(account.pk) == balance + entries[0].seconds
    assert Job.objects.get(pk=job_id).live_stream.pk == entries[0].live_stream_id


def test_a_session_that_says_not_to_keep_makes_no_job(web, live_worker, token, pcm24k):
    async def talk():
        async with websockets.connect(
            web.replace("http://", "ws://") + "/v1/realtime?intent=transcription",
            additional_headers={"Authorization": f"Bearer {token}"},
        ) as ws:
            await ws.recv()
            update = {"type": "session.update", "session": {"type": "transcription", "keep_recording": False}}
            await ws.send(json.dumps(update))
            audio = base64.b64encode(pcm24k[: 24000 * 2 * 2]).decode()  # two seconds
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": audio}))
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            events = [json.loads(await asyncio.wait_for(ws.recv(), 30))]
            while not events[-1]["type"].endswith((".completed", "error")):
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
            return events

    events = asyncio.run(talk())
    kinds = [event["type"] for event in events]
    assert events[0]["type"] == "session.updated" and events[0]["session"]["keep_recording"] is False
    assert "transcription_session.job" not in kinds and "error" not in kinds, kinds
    wait_until(lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "settled", timeout=20)
    assert not Job.objects.exists()
    assert LedgerEntry.objects.filter(source=LedgerEntry.Source.LIVE).count() == 1


def test_a_stream_ended_before_any_audio_has_its_job_failed_with_a_reason(web, live_worker, token):
    """A commit with no audio starts the stream (its job announced); nothing to transcribe, so the
    job ends failed, saying why, and nothing is charged."""

    async def talk():
        async with websockets.connect(
            web.replace("http://", "ws://") + "/v1/realtime?intent=transcription",
            additional_headers={"Authorization": f"Bearer {token}"},
        ) as ws:
            await ws.recv()
            await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            return json.loads(await asyncio.wait_for(ws.recv(), 30))

    announced = asyncio.run(talk())
    assert announced["type"] == "transcription_session.job", announced
    wait_until(lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "settled", timeout=20)
    job = Job.objects.get(pk=announced["job"]["id"])
    assert job.state == "failed" and "nothing to transcribe" in job.error, job.error
    assert not LedgerEntry.objects.exclude(kind=LedgerEntry.Kind.GRANT).exists()


def test_a_live_workers_container_is_healthy_while_its_heartbeat_beats(live_worker):
    """deploy/entrypoint's healthcheck of the live role: `live_worker --alive` finds this host's
    worker beating; a host with none has no heartbeat."""
    from django.conf import settings

    from transcription.events import live_streams

    alive = subprocess.run(
        [sys.executable, "manage.py", "live_worker", "--alive"],
        cwd=Path(__file__).parents[2],
        env=service_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert alive.returncode == 0, alive.stderr
    assert not live_streams.beating_on(settings.REDIS_URL, "no-such-host")


def test_a_worker_killed_mid_stream_gives_an_error_and_one_charge(web, live_worker, token, pcm24k):
    url = web.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    killed = []

    def kill_on_speech(event):
        if event["type"] == "input_audio_buffer.speech_started" and not killed:
            os.killpg(live_worker.pid, signal.SIGKILL)
            killed.append(True)

    events = asyncio.run(stream(url, token, pcm24k, kill_on_speech))
    errors = [e for _, e in events if e["type"] == "error"]
    assert killed and errors and errors[-1]["error"]["code"] == "live_worker_lost", [e["type"] for _, e in events]
    wait_until(lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "settled", timeout=20)
    assert LedgerEntry.objects.filter(source=LedgerEntry.Source.LIVE).count() == 1


def test_without_redis_the_web_process_serves_the_stream_itself(token, pcm24k, tmp_path):
    """`make run`'s embedded default: no REDIS_URL, the same worker code in threads of bin/web."""
    with running_web(tmp_path / "web.log", REDIS_URL="") as base:
        url = base.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
        events = asyncio.run(stream(url, token, pcm24k))
    completed = [e for _, e in events if e["type"].endswith(".completed")]
    assert completed and any(e["type"].endswith(".delta") for _, e in events), [e["type"] for _, e in events]
    wait_until(lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "settled", timeout=20)
    assert LedgerEntry.objects.filter(source=LedgerEntry.Source.LIVE).count() == 1
