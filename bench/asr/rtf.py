"""Real-time factor of Whisper on this machine: plain WhisperModel.transcribe vs BatchedInferencePipeline.

RTF = processing seconds / audio seconds (lower is faster; 0.25 = 4x faster than real time).

Builds >= --minutes of real speech by concatenating the LibriVox clips shipped with
pocketsphinx (``/usr/share/pocketsphinx/test/data/librivox/*.wav``) with ffmpeg into a
16 kHz mono WAV in a temp dir, then transcribes it both ways with the same settings
(word timestamps, VAD, beam 5) and prints a JSON summary.

    python bench/asr/rtf.py                 # base, int8, 5 minutes
    python bench/asr/rtf.py --minutes 1 --model tiny.en
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from transcription.pipeline.media.wav import read_slice  # noqa: E402
from transcription.pipeline.recognition.whisper_model import load_model  # noqa: E402

LIBRIVOX = "/usr/share/pocketsphinx/test/data/librivox"


def build_audio(folder: Path, minutes: float) -> tuple[Path, int]:
    clips = sorted(glob.glob(os.path.join(LIBRIVOX, "*.wav")))
    if not clips:
        sys.exit(f"No LibriVox clips in {LIBRIVOX} (apt-get install pocketsphinx-en-us?)")
    one_pass = sum(
        float(
            subprocess.check_output(
                ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", c],
                text=True,
            )
        )
        for c in clips
    )
    repeats = math.ceil(minutes * 60 / one_pass)
    listing = folder / "list.txt"
    listing.write_text("".join(f"file '{c}'\n" for _ in range(repeats) for c in clips))
    out = folder / "speech.wav"
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-y",
            "-f",
            "concat",
            "-safe",
            "0",
            "-i",
            str(listing),
            "-ac",
            "1",
            "-ar",
            "16000",
            "-c:a",
            "pcm_s16le",
            str(out),
        ],
        check=True,
    )
    return out, repeats


def abba(rounds: int, a: str, b: str) -> list[str]:
    """a, b, b, a, ...: this VM's speed drifts by 10-15% within minutes, and a drift then hits both
    sides alike."""
    order = []
    for i in range(rounds):
        order += [a, b] if i % 2 == 0 else [b, a]
    return order


def without_paragraph_heads(txt: str) -> str:
    """A job's transcript text without its paragraph heads ("[0:00:01] Speaker 1:"), for WER."""
    return re.sub(r"\[\d+:\d+:\d+\] Speaker \d+:", " ", txt)


def reference_text(repeats: int) -> str:
    """The LibriVox transcription of one pass over the clips (sorted), repeated."""
    refs = {}
    for line in open(os.path.join(LIBRIVOX, "transcription")):
        m = re.match(r"\s*<s>(.*)</s>\s*\((.+)\)\s*$", line)
        if m:
            refs[m.group(2).strip()] = m.group(1).strip()
    clips = sorted(glob.glob(os.path.join(LIBRIVOX, "*.wav")))
    one = " ".join(refs[Path(c).stem] for c in clips)
    return " ".join([one] * repeats)


def _words(text: str) -> list[str]:
    text = re.sub(r"[^\w\s']", " ", text.lower().replace("-", " "))
    return text.replace("'", "").split()


def wer(reference: str, hypothesis: str) -> float:
    return token_error_rate(_words(reference), _words(hypothesis))


def token_error_rate(ref: list[str], hyp: list[str]) -> float:
    """Edits (substitutions, deletions, insertions) per reference token: WER on words, CER on characters."""
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[len(hyp)] / max(1, len(ref))


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def time_recognition(model, audio, batched: bool, batch_size: int, reference: str) -> dict:
    opts = dict(word_timestamps=True, vad_filter=True, beam_size=5, language=None)
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), cpu_seconds()
    if batched:
        from faster_whisper import BatchedInferencePipeline

        segs, info = BatchedInferencePipeline(model).transcribe(audio, batch_size=batch_size, **opts)
    else:
        segs, info = model.transcribe(audio, **opts)
    segs = list(segs)  # the generator does the work
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - c0
    dur = len(audio) / 16000
    return {
        "rtf": round(wall / dur, 4),
        "cpu_rtf": round(cpu / dur, 4),  # CPU seconds per audio second; less sensitive to load
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "segments": len(segs),
        "words": sum(len(s.words or []) for s in segs),
        "wer": round(wer(reference, " ".join(s.text for s in segs)), 4),
        "language": info.language,
        "loadavg_1m_before": round(load0, 2),
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="base")
    ap.add_argument("--cache-dir", default=str(ROOT / "var" / "models"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--only", choices=["plain", "batched"], default=None)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="asr-rtf-") as tmp:
        wav, repeats = build_audio(Path(tmp), args.minutes)
        audio = read_slice(wav)
    reference = reference_text(repeats)
    t0 = time.perf_counter()
    model = load_model(args.model, args.cache_dir, args.device)
    load_s = time.perf_counter() - t0
    # Warm-up (first call pays one-off initialisation costs).
    list(model.transcribe(audio[: 16000 * 5], word_timestamps=True, vad_filter=True)[0])

    result = {
        "model": args.model,
        "device": args.device,
        "compute_type": "int8" if args.device == "cpu" else "float16",
        "cpu_threads": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "audio_s": round(len(audio) / 16000, 1),
        "model_load_s": round(load_s, 1),
        "batch_size": args.batch_size,
    }
    if args.only in (None, "plain"):
        result["plain"] = time_recognition(model, audio, batched=False, batch_size=args.batch_size, reference=reference)
    if args.only in (None, "batched"):
        result["batched"] = time_recognition(
            model, audio, batched=True, batch_size=args.batch_size, reference=reference
        )
    if "plain" in result and "batched" in result:
        result["faster"] = "batched" if result["batched"]["rtf"] < result["plain"]["rtf"] else "plain"
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
