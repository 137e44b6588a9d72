"""Audio events as heard (issue 54, item 5): how much of the music the detector finds, how much of
what it calls music is music, and whether the speech's words change with it on.

Recordings: LibriVox read speech (pocketsphinx-testdata, with its reference text) and Drascula's
soundtrack (drascula-music), laid out as a programme would: music alone between two sentences,
a music intro then speech over a quieter bed, speech with long silences, music alone then
silence. Each goes through the service's recogniser (`base`, CPU) and then the speech stage's
text steps (results.build_results) with ``tag_audio_events`` and the detector, and without it.

Event time is scored at 10 ms: a frame is truly music where the music plays alone (a bed under
speech belongs to the speech: no event may lie there), and found where a ``[music]`` or
``[singing]`` segment lies. Precision and recall are pooled over the recordings.

    .venv/bin/python bench/events/run.py            # writes bench/events/results.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.asr.rtf import token_error_rate  # noqa: E402
from harness.media_files import decode_mono, write_wav  # noqa: E402
from transcription.pipeline import audio_events  # noqa: E402
from transcription.pipeline.recognition import asr  # noqa: E402
from transcription.pipeline.recognition.whisper_model import load_model  # noqa: E402
from transcription.pipeline.transcripts.results import build_results  # noqa: E402

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
MUSIC = Path("/usr/share/scummvm/drascula/audio")
RATE = 16000
FRAME = 0.01


def said(clip: str) -> str:
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        if f"({clip})" in line:
            return line.split("<s>")[1].split("</s>")[0].strip()
    raise LookupError(clip)


def speech(n: str) -> tuple[np.ndarray, str]:
    clip = f"sense_and_sensibility_01_austen_64kb-{n}"
    return decode_mono(LIBRIVOX / f"{clip}.wav"), said(clip)


def level(music: np.ndarray, like: np.ndarray, db: float = 0.0) -> np.ndarray:
    voiced = like[np.abs(like) > 1e-3]
    return music * np.sqrt(float((voiced**2).mean()) / max(float((music**2).mean()), 1e-9) / 10 ** (db / 10))


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), dtype=np.float32)


def recordings() -> list[tuple[str, list[tuple[np.ndarray, str, bool]]]]:
    """(name, parts): each part its samples, its words, whether it is music alone."""
    a, ta = speech("0880")
    b, tb = speech("0890")
    c, tc = speech("0920")
    d, td = speech("0930")
    e, te = speech("0870")
    out = []
    for track in (1, 5, 9, 14):
        m = level(decode_mono(MUSIC / f"track{track}.ogg", 10, 8), a)
        out.append((f"between-track{track}", [(a, ta, False), (m, "", True), (silence(2), "", False), (b, tb, False)]))
    intro = level(decode_mono(MUSIC / "track3.ogg", 5, 6 + len(c) / RATE), c)
    bed = np.resize(intro[6 * RATE :], len(c)) * 10 ** (-12 / 20)  # the bed 12 dB under the voice
    out.append(("intro-then-bed-track3", [(intro[: 6 * RATE], "", True), (c + bed, tc, False)]))
    out.append(("silences", [(silence(3), "", False), (d, td, False), (silence(6), "", False), (e, te, False)]))
    tail = level(decode_mono(MUSIC / "track11.ogg", 20, 10), d)
    out.append(("music-then-silence-track11", [(d, td, False), (tail, "", True), (silence(5), "", False)]))
    return out


def frames(spans, total: int) -> np.ndarray:
    mask = np.zeros(total, dtype=bool)
    for a, b in spans:
        mask[int(round(a / FRAME)) : int(round(b / FRAME))] = True
    return mask


def normalize(text: str) -> list[str]:
    import re

    return re.sub(r"[^\w\s']", " ", text.lower().replace("-", " ")).replace("'", "").split()


def wer(reference: str, hypothesis: str) -> float:
    return token_error_rate(normalize(reference), normalize(hypothesis))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="base")
    parser.add_argument("--cache-dir", default=os.environ.get("MODEL_CACHE_DIR", str(ROOT / "var" / "models")))
    parser.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    args = parser.parse_args()
    model = load_model(args.model, args.cache_dir, device="cpu")
    rows = []
    tp = fp = fn = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, parts in recordings():
            samples = np.concatenate([p[0] for p in parts]).astype(np.float32)
            path = Path(tmp) / f"{name}.wav"
            write_wav(path, samples)
            truth, at = [], 0.0
            for part, _, alone in parts:
                if alone:
                    truth.append((at, at + len(part) / RATE))
                at += len(part) / RATE
            reference = " ".join(t for _, t, _ in parts if t)
            transcript = asr.transcribe(model, path, options=asr.RecognitionOptions(language="en"))
            started = time.monotonic()
            events = audio_events.find_events(path)
            detect_s = time.monotonic() - started
            on = build_results(transcript.segments, [], language="en", tag_audio_events=True, audio_events=events)
            off = build_results(transcript.segments, [], language="en")
            found = [(s["start"], s["end"]) for s in on["segments"] if "audio_event" in s]
            total = int(round(at / FRAME)) + 1
            t, f = frames(truth, total), frames(found, total)
            tp, fp, fn = tp + int((t & f).sum()), fp + int((~t & f).sum()), fn + int((t & ~f).sum())
            text_on = " ".join(s["text"] for s in on["segments"] if "audio_event" not in s)
            text_off = " ".join(s["text"] for s in off["segments"])
            rows.append(
                {
                    "recording": name,
                    "seconds": round(at, 2),
                    "music_alone": [[round(a, 2), round(b, 2)] for a, b in truth],
                    "events": [[s["start"], s["end"], s["audio_event"]] for s in on["segments"] if "audio_event" in s],
                    "precision": round(float((t & f).sum()) / max(1, int(f.sum())), 3) if f.any() else None,
                    "recall": round(float((t & f).sum()) / int(t.sum()), 3) if t.any() else None,
                    "wer_detector_on": round(wer(reference, text_on), 3),
                    "wer_detector_off": round(wer(reference, text_off), 3),
                    "detector_seconds": round(detect_s, 3),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    summary = {
        "precision": round(tp / max(1, tp + fp), 3),
        "recall": round(tp / max(1, tp + fn), 3),
        "mean_wer_on": round(float(np.mean([r["wer_detector_on"] for r in rows])), 3),
        "mean_wer_off": round(float(np.mean([r["wer_detector_off"] for r in rows])), 3),
        "model": args.model,
        "load_average": os.getloadavg()[0],
    }
    Path(args.out).write_text(json.dumps({"summary": summary, "recordings": rows}, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
