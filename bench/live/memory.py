"""Memory of a long live stream (issue 52, item 4: "the server's memory stays flat: measured").

Starts the service's own processes, bin/web (the socket) and bin/live (the model), on a database
and a Redis database of the bench's own, and streams a long recording to /v1/realtime as fast as
the door lets a client send (a client faster than real time is slowed: LIVE_BUFFER_SECONDS ahead of
recognition at most), `--streams` of them at once. Every `--every` seconds it reads the resident
memory (RSS, /proc) of the web's process tree and of the live worker, and reports per process: RSS
after the first minute of audio recognised (the model loaded, the first windows decoded), its peak,
at the end, and the growth per audio hour from there to the end (a least-squares slope over the
audio recognised, which the server's speech_stopped events give), besides the audio, the wall time
and their ratio (how fast a client sending as fast as it can is served).

The recording is the pocketsphinx LibriVox reading looped with pauses, 24 kHz PCM16 as OpenAI's
clients send it; `keep_recording` is off (a kept recording is a file written by the web, not memory).

    PYTHONPATH=. MODEL_CACHE_DIR=var/models .venv/bin/python bench/live/memory.py --minutes 20 \\
        --out bench/live/results-memory.json
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

READING = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
RATE = 24000
CHUNK_SECONDS = 0.1


def looped_reading(minutes: float) -> bytes:
    """The reading and 1.5 s of silence, again and again, to `minutes` of 24 kHz PCM16."""
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", str(READING), "-f", "s16le", "-ac", "1", "-ar", str(RATE), "-"],
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout
    one = raw + bytes(int(1.5 * RATE) * 2)
    wanted = int(minutes * 60 * RATE) * 2
    return (one * (wanted // len(one) + 1))[:wanted]


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (the web's gunicorn master and its uvicorn worker)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def stream(url: str, token: str, audio: bytes, heard: list[float], errors: list[str]) -> None:
    """Send `audio` as fast as the door reads it, and wait until the worker has recognised it all:
    `heard[0]` follows the end of the last utterance the server VAD closed (speech_stopped's
    audio_end_ms), the audio the worker is through."""
    from websockets.sync.client import connect

    seconds = len(audio) / 2 / RATE
    # no keepalive pings: the door stops reading a client that runs LIVE_BUFFER_SECONDS ahead, and
    # a ping queued behind the audio in the socket is answered only when recognition reaches it
    # (websockets' default gives up after 20 s: "keepalive ping timeout")
    connection = connect(
        url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None, ping_interval=None
    )
    with connection as ws:
        ws.recv(timeout=30)
        session = {
            "type": "transcription",
            "keep_recording": False,
            "audio": {"input": {"turn_detection": {"type": "server_vad"}}},
        }
        ws.send(json.dumps({"type": "session.update", "session": session}))
        through = threading.Event()

        def reader() -> None:
            while True:
                try:
                    event = json.loads(ws.recv(timeout=1))
                except TimeoutError:
                    continue
                except Exception:
                    return
                if event.get("type") == "input_audio_buffer.speech_stopped":
                    heard[0] = event["audio_end_ms"] / 1000
                    if heard[0] >= seconds - 6:  # the last loop ends in 1.5 s of silence, and a reading may be cut
                        through.set()
                elif event.get("type") == "error":
                    errors.append(json.dumps(event)[:300])
                    through.set()

        listener = threading.Thread(target=reader, daemon=True)
        listener.start()
        step = int(CHUNK_SECONDS * RATE) * 2
        for offset in range(0, len(audio), step):
            chunk = base64.b64encode(audio[offset : offset + step]).decode()
            ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
        through.wait(timeout=seconds)


def slope_mb_per_hour(samples: list[tuple[float, float]]) -> float:
    """Least-squares growth of RSS (MB) per hour of audio over (audio seconds, MB) samples."""
    if len(samples) < 2:
        return float("nan")
    n = len(samples)
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    spread = sum((x - mean_x) ** 2 for x, _ in samples)
    return 3600 * sum((x - mean_x) * (y - mean_y) for x, y in samples) / spread if spread else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0, help="audio per stream (20)")
    parser.add_argument("--streams", type=int, default=1, help="streams at once (1)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between memory readings (2)")
    parser.add_argument("--db-name", default="bench_live_memory")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/10", help="a Redis database of its own")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-memory.json")))
    args = parser.parse_args()

    for command in (["dropdb", "--if-exists"], ["createdb"]):
        subprocess.run([*command, "-h", "127.0.0.1", "-U", "root", args.db_name], check=True, capture_output=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-memory-"))
    os.environ.setdefault("SECRET_KEY", "bench-" + secrets.token_urlsafe(48))
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"postgres://root@127.0.0.1:5432/{args.db_name}",
            "REDIS_URL": args.redis,
            "DATA_DIR": str(tmp / "data"),
            "CONN_MAX_AGE": "0",
            "LIVE_STREAMS_PER_WORKER": str(args.streams),
            "LIVE_STREAMS_PER_ACCOUNT": str(args.streams),
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    from accounts.services import account_create, token_issue
    from harness.processes import free_port, request, service_env, start, stop

    call_command("migrate", verbosity=0)
    account = account_create("memory@bench.example", minutes=int(args.minutes * args.streams) + 10)
    token = token_issue(account)
    audio = looped_reading(args.minutes)
    audio_seconds = len(audio) / 2 / RATE

    port = free_port()

    def answers() -> bool:
        try:
            request("GET", f"http://127.0.0.1:{port}/health", timeout=2)
            return True
        except OSError:
            return False

    live = start([str(ROOT / "bin" / "live")], tmp / "live.log", ready="ready", env=service_env(), timeout=180)
    web = start(
        [str(ROOT / "bin" / "web")],
        tmp / "web.log",
        ready=answers,
        env=service_env(BIND=f"127.0.0.1:{port}", WEB_WORKERS="1"),
        timeout=60,
    )
    samples: dict[str, list[tuple[float, float]]] = {"web": [], "live": []}
    try:
        url = f"ws://127.0.0.1:{port}/v1/realtime?intent=transcription"
        heard = [[0.0] for _ in range(args.streams)]
        errors: list[str] = []
        threads = [
            threading.Thread(target=stream, args=(url, token, audio, heard[n], errors), daemon=True)
            for n in range(args.streams)
        ]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            at = min(h[0] for h in heard)
            samples["web"].append((at, rss_mb(tree(web.pid))))
            samples["live"].append((at, rss_mb(tree(live.pid))))
            time.sleep(args.every)
        wall = time.monotonic() - began
    finally:
        stop(web, timeout=15)
        stop(live)

    processes = {}
    for name, readings in samples.items():
        settled = [(x, y) for x, y in readings if x >= 60]
        processes[name] = {
            "rss_after_first_minute_mb": round(settled[0][1], 1) if settled else None,
            "rss_peak_mb": round(max(y for _, y in readings), 1),
            "rss_end_mb": round(readings[-1][1], 1),
            "growth_mb_per_audio_hour": round(slope_mb_per_hour(settled), 1),
        }
    result = {
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "streams": args.streams,
        "audio_seconds_per_stream": round(audio_seconds, 1),
        "wall_seconds": round(wall, 1),
        "audio_per_wall_second": round(audio_seconds * args.streams / wall, 2),
        "errors": errors,
        "processes": processes,
        "samples": {name: [[round(x, 1), round(y, 1)] for x, y in readings] for name, readings in samples.items()},
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))


if __name__ == "__main__":
    main()
