"""/v1/realtime with real speech (issue 52): bin/web holds the socket, a live worker (bin/live) holds
the model, Redis carries audio and events between them. A recording streamed at real speed gets
deltas while it plays and completed text; a worker killed mid-stream gives the client an `error`
and the stream is charged once."""

import asyncio
import base64
import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import websockets

from billing.models import LedgerEntry, LiveStream
from harness.processes import running_web, service_env, start, stop
from tests.support import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

WAV = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
CHUNK_MS = 100


@pytest.fixture(scope="module")
def pcm24k(tmp_path_factory) -> bytes:
    """The reading as OpenAI's clients send it: 24 kHz mono PCM16, then 2 s of silence."""
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", str(WAV), "-f", "s16le", "-ac", "1", "-ar", "24000", "-"],
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout
    return raw + bytes(2 * 24000 * 2)


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


async def stream(url: str, token: str, audio: bytes, on_event=None) -> list[tuple[float, dict]]:
    """Send `audio` at real speed; every event with the seconds since the first audio went."""
    events: list[tuple[float, dict]] = []
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        await ws.recv()
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
