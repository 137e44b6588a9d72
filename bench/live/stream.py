"""Stream recordings at real speed through live targets, side by side in one run, alternating.

    PYTHONPATH=. MODEL_CACHE_DIR=var/models nice -n 5 .venv/bin/python bench/live/stream.py \
        --out bench/live/results.json

Targets: ``engine`` (transcription.pipeline.live.LiveTranscriber, fed what has "arrived" by the
wall clock each time it is free again), ``bare`` (faster-whisper re-decoding the growing buffer,
the floor), ``whisperlive`` (whisper-live in its own venv, its server in a subprocess: see
README.md) and ``door`` (the service's /v1/realtime at --door-url, with --door-token: the
words as a client gets them, through the web process and whatever recognises for it).

Per word: the delay from its end in the reference alignment (the file path's word timestamps,
asr.transcribe on the same audio) to its arrival as a delta; per item: from the end of its last
word to its Completed; WER of the joined finals against the reference text and the file path's.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.asr.rtf import wer
from harness.speaker_audio import write_wav
from transcription.pipeline.live import events as ev
from transcription.pipeline.live.transcriber import LiveOptions, LiveTranscriber
from transcription.pipeline.media import audio as media_audio
from transcription.pipeline.media.wav import read_slice
from transcription.pipeline.recognition.asr import RecognitionOptions, transcribe
from transcription.pipeline.recognition.whisper_model import load_model

RATE = 16000
TICK = 0.1  # the feeder's smallest chunk

SENTENCES = {
    "en": [
        "The meeting starts at nine o'clock on Monday morning.",
        "Please bring the quarterly report and your notes from the last call.",
        "We will discuss the budget, the hiring plan and the new office.",
    ],
    "de": [
        "Das Treffen beginnt am Montag um neun Uhr.",
        "Bitte bringen Sie den Bericht und Ihre Notizen mit.",
        "Wir sprechen über das Budget und das neue Büro.",
    ],
}


def _espeak(text: str, voice: str, folder: Path) -> np.ndarray:
    raw = folder / "raw.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", "165", "-w", str(raw), text], check=True, timeout=60)
    out = folder / "c.wav"
    media_audio.to_wav(raw, out, timeout=60)
    return read_slice(out)


def recordings(folder: Path) -> dict[str, tuple[np.ndarray, str, str]]:
    """name -> (samples, reference text, language)."""
    gap = np.zeros(int(1.2 * RATE), np.float32)
    lead = np.zeros(int(0.5 * RATE), np.float32)
    out = {}
    for name, lang, voices in (
        ("en-one-voice", "en", ["en-us"]),
        ("en-two-voices", "en", ["en-us", "en+f3"]),
        ("de-one-voice", "de", ["de"]),
    ):
        parts = [lead]
        for i, s in enumerate(SENTENCES[lang]):
            parts += [_espeak(s, voices[i % len(voices)], folder), gap]
        out[name] = (np.concatenate(parts), " ".join(SENTENCES[lang]), lang)
    clean = out["en-one-voice"][0]
    rng = np.random.default_rng(52)
    noise = rng.normal(0, 1, len(clean)).astype(np.float32)
    power = np.mean(clean[clean != 0] ** 2)
    noisy = clean + noise * np.sqrt(power / 10 ** (10 / 10))  # 10 dB SNR over the speech
    out["en-noisy-10db"] = (np.clip(noisy, -1, 1).astype(np.float32), out["en-one-voice"][1], "en")
    return out


def speech_wav(samples: np.ndarray, path: Path) -> Path:
    write_wav(path, samples)  # 16 kHz mono PCM16, as the tests' speech
    return path


def _key(text: str) -> str:
    return re.sub(r"[^\w']", "", text.casefold())


# ------------------------------------------------------------------------------------- targets
# A target streams `samples` at real speed and returns ([(arrival_s, item, delta text)],
# [(arrival_s, item, final text)]), arrival measured from the stream's start.

Result = tuple[list[tuple[float, str, str]], list[tuple[float, str, str]]]


def _paced(samples: np.ndarray, step: Callable[[np.ndarray, float], None]) -> float:
    """Hand `step` what has arrived by the wall clock whenever it is free; returns the start."""
    started = time.perf_counter()
    pos = 0
    while pos < len(samples):
        now = time.perf_counter() - started
        arrived = min(len(samples), int(now * RATE))
        if arrived - pos < TICK * RATE and arrived < len(samples):
            time.sleep(TICK - (now % TICK))
            continue
        chunk, pos = samples[pos:arrived], arrived
        step(chunk, started)
    return started


def engine_target(model, lang: str) -> Callable[[np.ndarray], Result]:
    def run(samples: np.ndarray) -> Result:
        counter = itertools.count()
        t = LiveTranscriber(model, LiveOptions(language=lang), lambda: f"item_{next(counter)}")
        deltas, finals = [], []

        def take(events, started):
            at = time.perf_counter() - started
            for e in events:
                if isinstance(e, ev.Delta):
                    deltas.append((at, e.item_id, e.text))
                elif isinstance(e, ev.Completed) and e.transcript:
                    finals.append((at, e.item_id, e.transcript))

        started = _paced(samples, lambda chunk, s: take(t.feed(chunk), s))
        take(t.finish(), started)
        return deltas, finals

    return run


def bare_target(model, lang: str) -> Callable[[np.ndarray], Result]:
    """faster-whisper on the growing buffer (30 s at most, then a new one): each decoding's words
    past those already shown count as arriving then; the buffer's last decoding is its final."""

    def run(samples: np.ndarray) -> Result:
        buf: list[np.ndarray] = []
        shown: dict[int, int] = {}
        deltas, finals = [], []
        state = {"item": 0, "text": ""}

        def decode(started):
            audio = np.concatenate(buf)
            segs, _ = model.transcribe(
                audio, language=lang, beam_size=1, vad_filter=True, condition_on_previous_text=False
            )
            text = " ".join(s.text.strip() for s in segs)
            at = time.perf_counter() - started
            words = text.split()
            n = shown.get(state["item"], 0)
            if len(words) > n:
                deltas.append((at, f"item_{state['item']}", " " + " ".join(words[n:])))
                shown[state["item"]] = len(words)
            state["text"] = text
            return at

        def step(chunk, started):
            buf.append(chunk)
            decode(started)
            if sum(map(len, buf)) > 29 * RATE:
                finals.append((time.perf_counter() - started, f"item_{state['item']}", state["text"]))
                buf.clear()
                state["item"] += 1

        started = _paced(samples, step)
        if buf:
            at = decode(started)
            finals.append((at, f"item_{state['item']}", state["text"]))
        return deltas, finals

    return run


def door_target(url: str, token: str, lang: str) -> Callable[[np.ndarray], Result]:
    """The service's door (/v1/realtime at `url`, a ws:// address) as its clients reach it: the
    GA session.update at 16 kHz PCM16, server VAD, the audio as input_audio_buffer.append events at
    real speed; deltas and completed transcripts as they arrive, whatever process recognises them
    (bin/live over Redis, or the web process's own threads on the embedded default)."""

    def run(samples: np.ndarray) -> Result:
        import base64

        from websockets.sync.client import connect

        deltas: list[tuple[float, str, str]] = []
        finals: list[tuple[float, str, str]] = []
        done = threading.Event()
        holder = {"started": time.perf_counter()}
        with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None) as ws:
            ws.recv(timeout=30)  # session.created
            session = {
                "type": "transcription",
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": RATE},
                        "transcription": {"model": "whisper-1", "language": lang},
                        "turn_detection": {"type": "server_vad"},
                    }
                },
                "keep_recording": False,  # the live path is measured; a kept recording would queue a job per run
            }
            ws.send(json.dumps({"type": "session.update", "session": session}))

            def reader() -> None:
                while not done.is_set():
                    try:
                        event = json.loads(ws.recv(timeout=0.5))
                    except TimeoutError:
                        continue
                    except Exception:
                        return
                    at = time.perf_counter() - holder["started"]
                    kind = event.get("type", "")
                    if kind == "conversation.item.input_audio_transcription.delta":
                        deltas.append((at, event["item_id"], event["delta"]))
                    elif kind == "conversation.item.input_audio_transcription.completed" and event["transcript"]:
                        finals.append((at, event["item_id"], event["transcript"]))
                    elif kind == "error":
                        print("door error:", event, flush=True)

            thread = threading.Thread(target=reader, daemon=True)
            thread.start()

            def send(chunk: np.ndarray, started: float) -> None:
                holder["started"] = started
                pcm = (np.clip(chunk, -1, 1) * 32767).astype("<i2").tobytes()
                ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}))

            _paced(samples, send)
            ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
            time.sleep(5)  # the last item's final
            done.set()
            thread.join()
        return deltas, finals

    return run


def whisperlive_target(port: int, lang: str, model_path: str) -> Callable[[np.ndarray], Result]:
    """whisper-live's server over its WebSocket protocol: options JSON, then float32 16 kHz
    frames; it answers with segments, those marked completed are finals."""

    def run(samples: np.ndarray) -> Result:
        import uuid

        from websockets.sync.client import connect

        deltas, finals = [], []
        done = threading.Event()
        with connect(f"ws://127.0.0.1:{port}", max_size=None) as ws:
            uid = str(uuid.uuid4())
            ws.send(
                json.dumps({"uid": uid, "language": lang, "task": "transcribe", "model": model_path, "use_vad": True})
            )
            while True:
                msg = json.loads(ws.recv(timeout=120))
                if msg.get("message") == "SERVER_READY":
                    break
            seen: dict[str, str] = {}
            final_at: dict[tuple[float, str], float] = {}
            holder = {"started": time.perf_counter()}

            def reader():
                while not done.is_set():
                    try:
                        msg = json.loads(ws.recv(timeout=0.5))
                    except TimeoutError:
                        continue
                    except Exception:
                        return
                    at = time.perf_counter() - holder["started"]
                    for seg in msg.get("segments", []):
                        key = str(seg.get("start"))
                        text = seg.get("text", "").strip()
                        old = seen.get(key, "")
                        words, old_words = text.split(), old.split()
                        if len(words) > len(old_words):
                            deltas.append((at, key, " " + " ".join(words[len(old_words) :])))
                        seen[key] = text
                        if seg.get("completed") and (key, text) not in final_at:
                            final_at[(key, text)] = at
                            finals.append((at, key, text))

            thread = threading.Thread(target=reader, daemon=True)
            thread.start()
            holder["started"] = _paced(samples, lambda chunk, s: ws.send(chunk.astype(np.float32).tobytes()))
            ws.send(b"END_OF_AUDIO")
            time.sleep(5)
            done.set()
            thread.join()
        # a segment's last sent text is its final where none was marked completed
        keys = {k for _, k, _ in finals}
        finals += [(deltas[-1][0] if deltas else 0.0, k, v) for k, v in seen.items() if k not in keys]
        return deltas, finals

    return run


# ------------------------------------------------------------------------------------- scoring


def score(result: Result, ref_words: list[tuple[float, str]], reference: str, file_text: str) -> dict:
    deltas, finals = result
    # arrival of each delta word, aligned to the file path's words
    got = [(at, w) for at, _, text in deltas for w in text.split()]
    matcher = difflib.SequenceMatcher(a=[_key(w) for _, w in ref_words], b=[_key(w) for _, w in got], autojunk=False)
    delays = []
    for a, b, n in matcher.get_matching_blocks():
        for i in range(n):
            delays.append(got[b + i][0] - ref_words[a + i][0])
    # each final: from the end of its last word in the file path's alignment
    final_delays = []
    for at, _, text in finals:
        ws = [_key(w) for w in text.split()]
        if not ws:
            continue
        m = difflib.SequenceMatcher(a=[_key(w) for _, w in ref_words], b=ws, autojunk=False)
        blocks = [blk for blk in m.get_matching_blocks() if blk.size]
        if blocks:
            last = blocks[-1]
            final_delays.append(at - ref_words[last.a + last.size - 1][0])
    joined = " ".join(text for _, _, text in finals)
    d = np.array(delays) if delays else np.array([np.nan])
    f = np.array(final_delays) if final_delays else np.array([np.nan])
    return {
        "words_matched": len(delays),
        "words_in_reference": len(ref_words),
        "word_delay_median_s": round(float(np.median(d)), 3),
        "word_delay_p95_s": round(float(np.percentile(d, 95)), 3),
        "final_delay_median_s": round(float(np.median(f)), 3),
        "final_delay_max_s": round(float(np.max(f)), 3),
        "wer_vs_reference": round(wer(reference, joined), 4),
        "wer_vs_file": round(wer(file_text, joined), 4),
        "text": joined,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/live/results.json")
    parser.add_argument("--targets", default="engine,bare,whisperlive")
    parser.add_argument("--streams", default="1,2,3")
    parser.add_argument("--whisperlive-port", type=int, default=0, help="a whisper-live server already running")
    parser.add_argument("--door-url", default="", help="the service's ws://HOST:PORT/v1/realtime, for target door")
    parser.add_argument("--door-token", default="", help="an API token of an account with minutes")
    args = parser.parse_args()
    cache = os.environ.get("MODEL_CACHE_DIR", "var/models")
    model = load_model("base", cache, device="cpu")
    folder = Path(tempfile.mkdtemp(prefix="bench-live-"))
    recs = recordings(folder)
    refs = {}
    for name, (samples, _reference, lang) in recs.items():
        t = transcribe(model, speech_wav(samples, folder / f"{name}.wav"), options=RecognitionOptions(language=lang))
        refs[name] = ([(w.end, w.text) for s in t.segments for w in s.words], " ".join(s.text for s in t.segments))
    targets = args.targets.split(",")
    model_path = str(Path(cache) / "whisper-base")

    def make(target: str, lang: str):
        if target == "engine":
            return engine_target(model, lang)
        if target == "bare":
            return bare_target(model, lang)
        if target == "door":
            return door_target(args.door_url, args.door_token, lang)
        return whisperlive_target(args.whisperlive_port, lang, model_path)

    results: dict = {"uptime_before": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}
    runs = []
    for name, (samples, reference, lang) in recs.items():  # one stream, the targets alternating
        for target in targets:
            load = os.getloadavg()[0]
            res = score(make(target, lang)(samples), refs[name][0], reference, refs[name][1])
            runs.append({"recording": name, "target": target, "streams": 1, "load_1min": round(load, 2), **res})
            print(json.dumps(runs[-1]), flush=True)
    for n in [int(s) for s in args.streams.split(",") if int(s) > 1]:
        name = "en-one-voice"
        samples, reference, lang = recs[name]
        for target in targets:
            out: list = [None] * n
            runners = [make(target, lang) for _ in range(n)]

            def one(i: int, out: list = out, runners: list = runners, samples: np.ndarray = samples) -> None:
                out[i] = runners[i](samples)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
            load = os.getloadavg()[0]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            scored = [score(r, refs[name][0], reference, refs[name][1]) for r in out]
            runs.append(
                {
                    "recording": name,
                    "target": target,
                    "streams": n,
                    "load_1min": round(load, 2),
                    "word_delay_median_s": round(float(np.median([s["word_delay_median_s"] for s in scored])), 3),
                    "word_delay_p95_s": round(float(np.max([s["word_delay_p95_s"] for s in scored])), 3),
                    "final_delay_median_s": round(float(np.median([s["final_delay_median_s"] for s in scored])), 3),
                    "wer_vs_reference": round(float(np.mean([s["wer_vs_reference"] for s in scored])), 4),
                }
            )
            print(json.dumps(runs[-1]), flush=True)
    results["runs"] = runs
    results["uptime_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    results["file_path"] = {name: text for name, (_, text) in refs.items()}
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
