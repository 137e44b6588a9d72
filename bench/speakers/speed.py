"""Where diarization's CPU goes, and what it scores: ``speakers.diarize`` as the service runs it on
the two-voice test half (``dataset.py``) and the meeting test half (``meeting.py``), each stage's
CPU seconds per hour of audio beside pooled DER (collar 0, overlap scored).

    nice -n 10 .venv/bin/python bench/speakers/speed.py --results bench/speakers/results-speed.json
    nice -n 10 .venv/bin/python bench/speakers/speed.py --per-condition 1 --long 0 --meeting-files 4 --results /tmp/x.json

Stages (process seconds; the encoder's and the segmentation model's batches run in threads, so
their parts are each thread's own CPU time, summed): ``vad`` (Silero), ``embed`` (the 1.5 s
windows: ``fbank`` and ``campplus`` inside it, the rest reading), ``cluster`` (clustering and the
Viterbi pass), ``closer_embed`` and ``closer`` (the closer look's short windows and its second
pass), ``segmentation`` (the model over the file, or around the changes), ``changes`` (the
redrawing). The stages are timed by wrapping the functions ``diarize`` calls; the turns are those
of the service, unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.dataset import Item, build  # noqa: E402
from bench.speakers.meeting import build_meeting  # noqa: E402
from bench.speakers.run import annotation  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import segmentation  # noqa: E402
from transcription.pipeline.speakers.encoding import campplus  # noqa: E402

STAGES: dict[str, float] = defaultdict(float)
_lock = threading.Lock()


def _timed_main(name: str, fn):
    """A function run in the calling thread (its own threads included): process time."""

    def wrapper(*args, **kwargs):
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                STAGES[name] += time.process_time() - t

    return wrapper


def _timed_thread(name: str, fn):
    """A function that runs in one of several threads at once: that thread's own CPU time."""

    def wrapper(*args, **kwargs):
        t = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                STAGES[name] += time.thread_time() - t

    return wrapper


def instrument() -> None:
    """Each stage's function wrapped where ``diarize`` looks it up (setattr: the bench alone does this)."""
    for name, stage in (
        ("find_speech", "vad"),
        ("turns_from_embeddings", "cluster"),
        ("closer_turns", "closer"),
        ("redraw_changes", "changes"),
    ):
        setattr(speakers, name, _timed_main(stage, getattr(speakers, name)))
    embed = getattr(speakers, "embed_regions")  # noqa: B009 - not in the package's __all__

    def embed_regions(*args, **kwargs):
        name = "closer_embed" if kwargs.get("only") is not None else "embed"
        return _timed_main(name, embed)(*args, **kwargs)

    setattr(speakers, "embed_regions", embed_regions)  # noqa: B010
    for name, stage in (("features", "fbank"), ("embed_frames", "campplus")):
        setattr(campplus.CamPlusPlus, name, _timed_thread(stage, getattr(campplus.CamPlusPlus, name)))
    for name in ("activity_of_wav",):
        setattr(segmentation.Segmentation, name, _timed_main("segmentation", getattr(segmentation.Segmentation, name)))


def items_in(folder: Path) -> list[Item]:
    """The items an earlier build wrote (``NAME.wav`` beside ``NAME.rttm``), turns as the RTTM holds
    them (to the millisecond): so two runs of different code score the same files alike."""
    items = []
    for rttm in sorted(folder.glob("*.rttm")):
        turns = []
        for line in rttm.read_text().splitlines():
            f = line.split()
            turns.append((float(f[3]), round(float(f[3]) + float(f[4]), 3), f[7]))
        items.append(Item(rttm.stem, rttm.stem.rsplit("-", 1)[0], rttm.with_suffix(".wav"), rttm, turns))
    return items


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-speakers"))
    parser.add_argument("--half", default="test")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--per-condition", type=int, default=5)
    parser.add_argument("--long", type=int, default=1)
    parser.add_argument("--meeting-files", type=int, default=16)
    parser.add_argument("--only-meetings", action="store_true")
    parser.add_argument("--label", default="", help="what this run measures (kept in the results)")
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument(
        "--float", action="store_true", help="CAM++'s convolutions in floats (as before campplus.INT8_RANGES)"
    )
    parser.add_argument(
        "--items-from", type=Path, help="the WAVs and RTTMs an earlier run built under this --out (not built again)"
    )
    args = parser.parse_args()

    two: list[Item] = []
    meetings: list[Item] = []
    if args.items_from:
        two, meetings = items_in(args.items_from / args.half), items_in(args.items_from / f"meeting-{args.half}")
    else:
        if not args.only_meetings:
            two = build(
                args.out / args.half,
                half=args.half,
                seed=args.seed,
                per_condition=args.per_condition,
                long_files=args.long,
            )
        meetings = list(
            build_meeting(args.out / f"meeting-{args.half}", half=args.half, seed=args.seed, files=args.meeting_files)
        )
    instrument()
    # loaded before the clock starts, as the service's child loads it
    encoder = campplus.CamPlusPlus(int8=False) if args.float else speakers.default_encoder()
    from transcription.pipeline.speakers.segmentation import default_segmentation

    default_segmentation()
    rows = []
    loads = []
    for set_name, items in (("meeting", meetings), ("two-voice", two)):
        for item in items:
            STAGES.clear()
            loads.append(os.getloadavg()[0])
            cpu = time.process_time()
            turns = speakers.diarize(item.wav, encoder=encoder)
            cpu = time.process_time() - cpu
            reference = annotation(item.turns, item.name)
            hypothesis = annotation([(t.start, t.end, t.speaker) for t in turns], item.name)
            detail = DiarizationErrorRate(collar=0.0, skip_overlap=False)(reference, hypothesis, detailed=True)
            row = {
                "set": set_name,
                "file": item.name,
                "condition": item.condition,
                "seconds": round(item.duration, 1),
                "speakers": item.speakers,
                "found": len({t.speaker for t in turns}),
                "cpu_s": round(cpu, 3),
                "turns_sha": hashlib.sha256(repr([(t.start, t.end, t.speaker) for t in turns]).encode()).hexdigest()[
                    :16
                ],
                "stages": {k: round(v, 3) for k, v in STAGES.items()},
                **{k: round(float(detail[k]), 3) for k in ("total", "missed detection", "false alarm", "confusion")},
            }
            rows.append(row)
            print(json.dumps(row), flush=True)

    def summary(picked: list[dict]) -> dict:
        hours = sum(r["seconds"] for r in picked) / 3600
        total = max(sum(r["total"] for r in picked), 1e-9)
        errors = sum(r["missed detection"] + r["false alarm"] + r["confusion"] for r in picked)
        stages: dict[str, float] = defaultdict(float)
        for r in picked:
            for k, v in r["stages"].items():
                stages[k] += v
        return {
            "files": len(picked),
            "audio_min": round(hours * 60, 1),
            "der": round(errors / total, 4),
            "count_exact": round(sum(r["found"] == r["speakers"] for r in picked) / max(1, len(picked)), 3),
            "one_voice_split": [r["file"] for r in picked if r["speakers"] == 1 and r["found"] > 1],
            "cpu_s_per_audio_hour": round(sum(r["cpu_s"] for r in picked) / hours, 1),
            "stage_cpu_s_per_audio_hour": {k: round(v / hours, 1) for k, v in sorted(stages.items())},
        }

    results = {
        "label": args.label,
        "encoder": "float" if args.float else "as the service runs it",
        "protocol": "speakers.diarize; pyannote.metrics DiarizationErrorRate, collar 0, overlap scored; CPU: process seconds",
        "half": args.half,
        "seed": args.seed,
        "load_average_1m": {"min": min(loads), "max": max(loads), "mean": round(sum(loads) / len(loads), 2)},
        "sets": {
            name: summary([r for r in rows if r["set"] == name])
            for name in ("two-voice", "meeting")
            if any(r["set"] == name for r in rows)
        },
        "files": rows,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results["sets"], indent=1))


if __name__ == "__main__":
    main()
