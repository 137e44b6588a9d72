"""The service's diarization (speakers.diarize, its default encoder and thresholds) on the test half
of the evaluation set (bench/speakers/dataset.py), scored with pyannote.metrics.

    nice -n 10 .venv/bin/python bench/speakers/run.py [--out DIR] [--per-condition 6] [--long 1]

DER with no collar and overlapped speech scored (pyannote.metrics' DiarizationErrorRate(collar=0,
skip_overlap=False)), pooled over all files and per condition; speaker-count accuracy; whether a
one-voice file was split; CPU seconds of diarization (VAD included) per hour of audio. Writes
bench/speakers/results.json and the table in bench/speakers/README.md. pyannote.metrics is in the
test extra only: the service never imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from pyannote.core import Annotation, Segment  # noqa: E402
from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.dataset import CONDITIONS, build  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402


def annotation(turns, uri: str) -> Annotation:
    out = Annotation(uri=uri)
    for k, (start, end, who) in enumerate(turns):
        out[Segment(start, end), k] = str(who)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-speakers"))
    parser.add_argument("--half", default="test", help="the voices scored (thresholds come from calibration)")
    parser.add_argument("--per-condition", type=int, default=6)
    parser.add_argument("--long", type=int, default=1)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--results", type=Path, default=HERE / "results.json", help="elsewhere: README untouched")
    args = parser.parse_args()

    t0 = time.monotonic()
    items = build(
        args.out / args.half, half=args.half, seed=args.seed, per_condition=args.per_condition, long_files=args.long
    )
    build_s = time.monotonic() - t0
    pooled = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    by_condition = {c: DiarizationErrorRate(collar=0.0, skip_overlap=False) for c in CONDITIONS}
    files = []
    cpu_total = audio_total = 0.0
    for item in items:
        cpu = time.process_time()
        turns = speakers.diarize(item.wav)
        cpu = time.process_time() - cpu
        cpu_total += cpu
        audio_total += item.duration
        reference = annotation(item.turns, item.name)
        hypothesis = annotation([(t.start, t.end, t.speaker) for t in turns], item.name)
        detail = pooled(reference, hypothesis, detailed=True)
        by_condition[item.condition](reference, hypothesis)
        found = len({t.speaker for t in turns})
        files.append(
            {
                "file": item.name,
                "condition": item.condition,
                "seconds": round(item.duration, 1),
                "speakers": item.speakers,
                "found": found,
                "der": round(detail["diarization error rate"], 4),
                "confusion_s": round(detail["confusion"], 2),
                "missed_s": round(detail["missed detection"], 2),
                "false_alarm_s": round(detail["false alarm"], 2),
                "cpu_s": round(cpu, 2),
            }
        )
        print(json.dumps(files[-1]), flush=True)

    def summary(rows, metric) -> dict:
        return {
            "files": len(rows),
            "der": round(abs(metric), 4),
            "count_exact": round(sum(r["found"] == r["speakers"] for r in rows) / max(1, len(rows)), 3),
            "audio_min": round(sum(r["seconds"] for r in rows) / 60, 1),
        }

    results = {
        "protocol": "pyannote.metrics DiarizationErrorRate, collar 0, overlap scored",
        "encoder": speakers.default_encoder().name,
        "half": args.half,
        "seed": args.seed,
        "load_average": os.getloadavg(),
        "build_s": round(build_s, 1),
        "cpu_s_per_audio_hour": round(cpu_total / (audio_total / 3600), 1),
        "pooled": summary(files, pooled),
        "conditions": {
            c: summary([r for r in files if r["condition"] == c], by_condition[c])
            for c in CONDITIONS
            if any(r["condition"] == c for r in files)
        },
        "one_voice_split": [r["file"] for r in files if r["condition"] == "one-voice" and r["found"] > 1],
        "files": files,
    }
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    rows = [
        "| condition | files | audio (min) | DER | speaker count exact |",
        "|---|---|---|---|---|",
        *(
            f"| {c} | {s['files']} | {s['audio_min']} | {100 * s['der']:.1f}% | {100 * s['count_exact']:.0f}% |"
            for c, s in [*results["conditions"].items(), ("**pooled**", results["pooled"])]
        ),
    ]
    table = "\n".join(rows)
    print(table)
    print("cpu s per audio hour", results["cpu_s_per_audio_hour"], "one-voice split:", results["one_voice_split"])
    if args.results != HERE / "results.json":
        return
    readme = HERE / "README.md"
    text = readme.read_text() if readme.exists() else ""
    start, end = "<!-- results -->", "<!-- /results -->"
    block = (
        f"{start}\n{table}\n\nCPU: {results['cpu_s_per_audio_hour']} s of diarization per hour of audio "
        f"(load average {results['load_average'][0]:.1f}). One-voice files split: "
        f"{len(results['one_voice_split'])}.\n{end}"
    )
    if start in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text += "\n" + block + "\n"
    readme.write_text(text)


if __name__ == "__main__":
    main()
