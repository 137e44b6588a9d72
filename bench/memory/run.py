"""Peak memory (RSS) of the speech stages for a short and a long recording.

Runs the speech stages the way the worker's ``transcription.stages.transcribing`` does, without Django:
``audio.plan_chunks`` -> ``asr.transcribe`` per chunk -> ``asr.merge`` -> ``speakers.diarize``
-> ``speakers.assign_speakers`` -> ``cleaning.clean_words`` / ``build_cues`` / ``to_srt`` /
``to_webvtt`` / ``transcript_text``, in a fresh subprocess per length, and records the child's
peak RSS (``ru_maxrss`` of the finished child and ``VmHWM`` polled from /proc). The child also
reports the peak of each stage (it resets the high-water mark with ``/proc/self/clear_refs``
before each stage, where the kernel allows it) and its wall time.

The audio is ~1 minute of varied English from espeak-ng (two voices, so diarization has two
speakers), looped with ffmpeg ``-stream_loop`` to each length, 16 kHz mono s16le.

    python bench/memory/run.py                               # tiny.en, 10 min and 120 min
    python bench/memory/run.py --model base --minutes 10 60
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TEXT = [
    (
        "en-us",
        "Good morning, and welcome to the weekly planning meeting. Today we will look at the "
        "budget for the third quarter, the hiring plan, and the new office in Rotterdam.",
    ),
    (
        "en-gb+f3",
        "Thank you. Before we start, I would like to say that the numbers from last month "
        "were better than expected. Sales grew by twelve percent, mostly in the north.",
    ),
    (
        "en-us",
        "That is great news. Can you tell us which products sold best, and whether the "
        "discount we offered in March made any real difference to the customers?",
    ),
    (
        "en-gb+f3",
        "The garden furniture sold very well, because the weather was unusually warm. "
        "The discount helped a little, but I think the advertising on the radio helped more.",
    ),
    (
        "en-us",
        "Interesting. Let us move on to hiring. We need two engineers and one designer. "
        "The interviews are planned for the second week of next month, on Tuesday and Thursday.",
    ),
    (
        "en-gb+f3",
        "I have spoken with three candidates already. One of them worked for a railway "
        "company in Sweden for six years, and she knows a lot about scheduling software.",
    ),
    (
        "en-us",
        "Please send me her details after the meeting. Finally, the office in Rotterdam: "
        "the lease is signed, the desks arrive on Monday, and the internet is still missing.",
    ),
    (
        "en-gb+f3",
        "I will call the provider again this afternoon. If nothing happens by Friday, we "
        "should think about a temporary mobile connection. Does anyone have questions?",
    ),
]


def _run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=1800)


def build_audio(folder: Path, minutes: list[float]) -> dict[float, Path]:
    """One loop of espeak-ng speech, then one 16 kHz mono WAV per length."""
    folder.mkdir(parents=True, exist_ok=True)
    loop = folder / "loop.wav"
    if not loop.exists():
        parts = []
        for i, (voice, text) in enumerate(TEXT):
            part = folder / f"part{i}.wav"
            _run(["espeak-ng", "-v", voice, "-s", "155", "-w", str(part), text])
            parts.append(part)
        listing = folder / "parts.txt"
        # 0.6 s of silence between turns
        silence = folder / "silence.wav"
        _run(
            [
                "ffmpeg",
                "-v",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                "anullsrc=r=22050:cl=mono",
                "-t",
                "0.6",
                "-c:a",
                "pcm_s16le",
                str(silence),
            ]
        )
        listing.write_text("".join(f"file '{p}'\nfile '{silence}'\n" for p in parts))
        _run(
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
                str(loop),
            ]
        )
    out = {}
    for m in minutes:
        wav = folder / f"speech-{m:g}min.wav"
        if not wav.exists():
            _run(
                [
                    "ffmpeg",
                    "-v",
                    "error",
                    "-y",
                    "-stream_loop",
                    "-1",
                    "-i",
                    str(loop),
                    "-t",
                    str(m * 60),
                    "-ac",
                    "1",
                    "-ar",
                    "16000",
                    "-c:a",
                    "pcm_s16le",
                    str(wav),
                ]
            )
        out[m] = wav
    return out


# --------------------------------------------------------------------------- child


def _status_kb(pid: int | str, field: str) -> int:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def child(wav: str, model_name: str, cache_dir: str) -> None:
    from transcription.pipeline import speakers
    from transcription.pipeline.media import audio
    from transcription.pipeline.recognition import asr, cleaning, whisper_model
    from transcription.pipeline.transcripts import captions, paragraphs

    can_reset = True

    def reset() -> None:
        nonlocal can_reset
        if can_reset:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
            except OSError:
                can_reset = False

    stages = []

    def stage(name, fn):
        reset()
        t0 = time.perf_counter()
        value = fn()
        stages.append(
            {
                "stage": name,
                "seconds": round(time.perf_counter() - t0, 1),
                "peak_rss_mb": round(_status_kb("self", "VmHWM") / 1024, 1),
                "rss_after_mb": round(_status_kb("self", "VmRSS") / 1024, 1),
            }
        )
        return value

    start_rss = _status_kb("self", "VmRSS")
    model = stage("load_model", lambda: whisper_model.load_model(model_name, cache_dir))
    chunks = stage("plan_chunks", lambda: audio.plan_chunks(wav))
    parts = []
    for i, (s, e) in enumerate(chunks):
        parts.append(
            stage(
                f"transcribe chunk {i + 1}/{len(chunks)} ({e - s:.0f} s)",
                lambda s=s, e=e: asr.transcribe(model, wav, start=s, end=e, on_progress=lambda f: None),
            )
        )
    transcript = stage("merge", lambda: asr.merge(parts))
    turns = stage("diarize", lambda: speakers.diarize(wav))
    segments = stage("assign_speakers", lambda: speakers.assign_speakers(transcript.segments, turns))

    def _captions():
        segs = cleaning.clean_words(segments, verbatim=False, tag_audio_events=False, language=transcript.language)
        cues = captions.build_cues(segs, language=transcript.language)
        return {
            "txt": paragraphs.transcript_text(segs),
            "srt": captions.to_srt(cues),
            "webvtt": captions.to_webvtt(cues),
        }

    results = stage("captions", _captions)
    print(
        json.dumps(
            {
                "chunks": [[round(s, 1), round(e, 1)] for s, e in chunks],
                "segments": len(transcript.segments),
                "words": sum(len(s.words) for s in transcript.segments),
                "speakers": len({t.speaker for t in turns}),
                "srt_chars": len(results["srt"]),
                "start_rss_mb": round(start_rss / 1024, 1),
                "per_stage_peaks": can_reset,
                "stages": stages,
                # ru_maxrss follows VmHWM, so after a reset it covers only the last stage; the peak of
                # the whole run is the largest stage peak.
                "child_ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "child_peak_mb": max(s["peak_rss_mb"] for s in stages),
            }
        )
    )


# --------------------------------------------------------------------------- parent


def measure(wav: Path, model: str, cache_dir: str) -> dict:
    t0 = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", str(wav), "--model", model, "--cache-dir", cache_dir],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    polled = [0]

    def poll():
        while process.poll() is None:
            polled[0] = max(polled[0], _status_kb(process.pid, "VmHWM"))
            time.sleep(0.5)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    out, err = process.communicate()
    thread.join()
    wall = time.perf_counter() - t0
    if process.returncode != 0:
        raise RuntimeError(f"child failed ({process.returncode}):\n{err[-3000:]}")
    report = json.loads(out.strip().splitlines()[-1])
    return {
        "audio_s": round(os.path.getsize(wav) / 32000),
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(max(polled[0] / 1024, report["child_ru_maxrss_mb"], report["child_peak_mb"]), 1),
        "vmhwm_polled_mb": round(polled[0] / 1024, 1),
        **report,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--model", default="tiny.en")
    ap.add_argument("--cache-dir", default=str(ROOT / "var" / "models"))
    ap.add_argument("--minutes", type=float, nargs="+", default=[10, 120])
    ap.add_argument("--work", default="/tmp/bench-memory")
    ap.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    args = ap.parse_args()
    if args.child:
        child(args.child, args.model, args.cache_dir)
        return

    t0 = time.perf_counter()
    wavs = build_audio(Path(args.work), args.minutes)
    result = {
        "model": args.model,
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "audio_build_s": round(time.perf_counter() - t0, 1),
        "runs": {},
    }
    for m in args.minutes:
        print(f"measuring {m:g} min ...", file=sys.stderr, flush=True)
        result["runs"][f"{m:g}min"] = measure(wavs[m], args.model, args.cache_dir)
        print(json.dumps(result["runs"][f"{m:g}min"]), file=sys.stderr, flush=True)
    peaks = [result["runs"][f"{m:g}min"]["peak_rss_mb"] for m in args.minutes]
    result["peak_ratio_longest_vs_shortest"] = round(peaks[-1] / peaks[0], 3)
    result["goal"] = "longest peak <= 1.20 x shortest peak"
    result["goal_met"] = result["peak_ratio_longest_vs_shortest"] <= 1.20
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
