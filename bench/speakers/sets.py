"""One command, three sets: the two-voice set (``dataset.py``, every condition pooled: what the
7.1% is), its telephone calls (``telephone-close-pitch``) and the meeting set (``meeting.py``),
each scored with pyannote.metrics: the diarization with the changes redrawn ("service": what shipped
until issue 45), with local speakers always read ("local": ``speakers.local``), and the per-recording
choice between the two ("chosen"; ``--choose service``, the default: the pipeline's own rule,
``local.hears_overlap``, so "chosen" is :func:`speakers.diarize` as it ships; ``--choose CUE:LIMIT``:
local speakers where the segmentation windows' cue is at least LIMIT). ``--rescore FILE`` makes a
results file's chosen rows again without running a model.

    nice -n 10 .venv/bin/python bench/speakers/sets.py                                   # test halves
    nice -n 10 .venv/bin/python bench/speakers/sets.py --per-condition 1 --meeting-files 4 --results /tmp/x.json

DER with overlapped speech scored at collar 0 and 0.25 (pyannote's collar: 0.25 s centred on each
reference boundary, 0.125 s either side); speaker count exact and within one; overlap given two
speakers (of the reference's frames where two or more talk, the share the output gives two
speakers or more) and overlap heard where there is none (of the frames where one talks); one-voice
files split. Writes bench/speakers/results-sets.json and the table in README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.dataset import Item, build  # noqa: E402
from bench.speakers.meeting import build_meeting  # noqa: E402
from bench.speakers.readings import overlap_frames, read  # noqa: E402
from bench.speakers.run import annotation  # noqa: E402
from transcription.pipeline.speakers.clustering import MANY_VOICES  # noqa: E402
from transcription.pipeline.speakers.encoding.encoders import default_encoder  # noqa: E402
from transcription.pipeline.speakers.local import OVERLAP_SHARE  # noqa: E402
from transcription.pipeline.types import SpeakerTurn  # noqa: E402

COLLARS = (0.0, 0.25)
SYSTEMS = ("service", "local", "chosen")
SETS = {
    "two-voice": lambda r: r["set"] == "two-voice",
    "telephone": lambda r: r["condition"] == "telephone-close-pitch",
    "meeting": lambda r: r["set"] == "meeting",
}


def _der(rows: list[dict], system: str, collar: float) -> dict:
    """Pooled DER and its parts over ``rows`` (pyannote's components summed)."""
    parts = {"total": 0.0, "missed detection": 0.0, "false alarm": 0.0, "confusion": 0.0}
    for r in rows:
        for k in parts:
            parts[k] += r[system][f"c{collar}"][k]
    total = max(parts["total"], 1e-9)
    return {
        "der": round((parts["missed detection"] + parts["false alarm"] + parts["confusion"]) / total, 4),
        "missed": round(parts["missed detection"] / total, 4),
        "false_alarm": round(parts["false alarm"] / total, 4),
        "confusion": round(parts["confusion"] / total, 4),
    }


def summary(rows: list[dict], system: str) -> dict:
    over = sum(r[system]["overlap"]["ref_overlap"] for r in rows)
    single = sum(r[system]["overlap"]["ref_single"] for r in rows)
    return {
        "files": len(rows),
        "audio_min": round(sum(r["seconds"] for r in rows) / 60, 1),
        **{f"der_collar_{c}": _der(rows, system, c) for c in COLLARS},
        "count_exact": round(sum(r[system]["found"] == r["speakers"] for r in rows) / max(1, len(rows)), 3),
        "count_within_one": round(
            sum(abs(r[system]["found"] - r["speakers"]) <= 1 for r in rows) / max(1, len(rows)), 3
        ),
        "overlap_given_two": round(sum(r[system]["overlap"]["given_two"] for r in rows) / max(1, over), 4),
        "false_two": round(sum(r[system]["overlap"]["false_two"] for r in rows) / max(1, single), 4),
        "one_voice_split": [r["file"] for r in rows if r["condition"] == "one-voice" and r[system]["found"] > 1],
        "cpu_s_per_audio_hour": round(
            sum(r[system]["cpu_s"] for r in rows) / max(1e-9, sum(r["seconds"] for r in rows) / 3600), 1
        ),
    }


def scored(item: Item, turns: list[SpeakerTurn], cpu: float) -> dict:
    reference = annotation(item.turns, item.name)
    hypothesis = annotation([(t.start, t.end, t.speaker) for t in turns], item.name)
    out: dict = {"found": len({t.speaker for t in turns}), "cpu_s": round(cpu, 2)}
    for collar in COLLARS:
        detail = DiarizationErrorRate(collar=collar, skip_overlap=False)(reference, hypothesis, detailed=True)
        out[f"c{collar}"] = {
            k: round(float(detail[k]), 3) for k in ("total", "missed detection", "false alarm", "confusion")
        }
    out["overlap"] = overlap_frames(item.turns, turns)
    return out


def choose(cues: dict, rule: tuple[str, float] | None, found: int = 0) -> bool:
    """Whether the recording gets local speakers (overlap-aware output) under ``rule``; the rule
    ("service", 0) is the pipeline's own (``local.hears_overlap``: clustering's count ``found`` and
    the overlap the model hears)."""
    if rule is not None and rule[0] == "service":
        return found >= MANY_VOICES and cues["overlap_share"] >= OVERLAP_SHARE
    return rule is not None and cues[rule[0]] >= rule[1]


def rescore(path: Path, rule: tuple[str, float] | None) -> dict:
    """A results file's "chosen" rows made again under ``rule`` from the two outputs each file holds
    (no model run again)."""
    results = json.loads(path.read_text())
    rows = results["files"]
    for row in rows:
        row["chose_local"] = choose(row["cues"], rule, row["service"]["found"])
        row["chosen"] = row["local"] if row["chose_local"] else row["service"]
    results["choose"] = ":".join(map(str, rule)) if rule else "none"
    results["sets"] = {
        name: {s: summary([r for r in rows if pick(r)], s) for s in SYSTEMS if rule or s != "chosen"}
        for name, pick in SETS.items()
        if any(pick(r) for r in rows)
    }
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-speakers"))
    parser.add_argument("--half", default="test")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--per-condition", type=int, default=5, help="two-voice set's files per condition")
    parser.add_argument("--long", type=int, default=1)
    parser.add_argument("--meeting-files", type=int, default=16)
    parser.add_argument("--only-meetings", action="store_true", help="the meeting set alone (a quick look)")
    parser.add_argument("--oracle-count", action="store_true", help="the clustering is told each file's speaker count")
    parser.add_argument(
        "--choose",
        default="service",
        help="CUE:LIMIT (readings.cues); 'service': the pipeline's rule; 'none': no chosen row",
    )
    parser.add_argument(
        "--rescore", type=Path, help="a results file: its chosen rows made again under --choose, no run"
    )
    parser.add_argument("--results", type=Path, default=HERE / "results-sets.json", help="elsewhere: README untouched")
    args = parser.parse_args()
    rule = (
        None
        if args.choose == "none"
        else ("service", 0.0)
        if args.choose == "service"
        else (args.choose.split(":")[0], float(args.choose.split(":")[1]))
    )
    if args.rescore:
        results = rescore(args.rescore, rule)
        args.results.write_text(json.dumps(results, indent=1) + "\n")
        print(write_table(results, HERE / "README.md" if args.results == HERE / "results-sets.json" else None))
        return

    t0 = time.monotonic()
    two = (
        []
        if args.only_meetings
        else build(
            args.out / args.half, half=args.half, seed=args.seed, per_condition=args.per_condition, long_files=args.long
        )
    )
    meetings = build_meeting(
        args.out / f"meeting-{args.half}", half=args.half, seed=args.seed, files=args.meeting_files
    )
    build_s = time.monotonic() - t0
    encoder = default_encoder()
    rows = []
    for set_name, items in (("meeting", meetings), ("two-voice", two)):
        for item in items:
            got = read(item.wav, encoder, speakers_given=item.speakers if args.oracle_count else None)
            local = choose(got.cues, rule, len({t.speaker for t in got.service}))
            row: dict[str, Any] = {
                "set": set_name,
                "file": item.name,
                "condition": item.condition,
                "seconds": round(item.duration, 1),
                "speakers": item.speakers,
                "cues": got.cues,
                "chose_local": local,
                "service": scored(item, got.service, got.cpu["service"]),
                "local": scored(item, got.local, got.cpu["local"]),
            }
            row["chosen"] = row["local"] if local else row["service"]
            rows.append(row)
            brief = {
                s: (row[s]["found"], round(row[s]["c0.25"]["confusion"] + row[s]["c0.25"]["missed detection"], 1))
                for s in ("service", "local")
            }
            print(json.dumps({"file": item.name, "speakers": item.speakers, "cues": got.cues, **brief}), flush=True)

    results = {
        "protocol": "pyannote.metrics DiarizationErrorRate, overlap scored, collar 0 and 0.25 (0.125 s each side)",
        "half": args.half,
        "seed": args.seed,
        "choose": args.choose,
        "oracle_count": args.oracle_count,
        "load_average": os.getloadavg(),
        "build_s": round(build_s, 1),
        "sets": {
            name: {s: summary([r for r in rows if pick(r)], s) for s in SYSTEMS if rule or s != "chosen"}
            for name, pick in SETS.items()
            if any(pick(r) for r in rows)
        },
        "files": rows,
    }
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    table = write_table(results, HERE / "README.md" if args.results == HERE / "results-sets.json" else None)
    print(table)


def write_table(results: dict, readme: Path | None) -> str:
    rows = [
        "| set | system | files | DER collar 0 | DER collar 0.25 | missed / false alarm / confusion (0.25) | count exact | within one | overlap given two | overlap where none | one-voice split | CPU s per audio hour |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, systems in results["sets"].items():
        for system, s in systems.items():
            c0, c25 = s["der_collar_0.0"], s["der_collar_0.25"]
            rows.append(
                f"| {name} | {system} | {s['files']} ({s['audio_min']} min) | {100 * c0['der']:.1f}% | {100 * c25['der']:.1f}% | "
                f"{100 * c25['missed']:.1f} / {100 * c25['false_alarm']:.1f} / {100 * c25['confusion']:.1f}% | "
                f"{100 * s['count_exact']:.0f}% | {100 * s['count_within_one']:.0f}% | {100 * s['overlap_given_two']:.0f}% | "
                f"{100 * s['false_two']:.1f}% | {len(s['one_voice_split'])} | {s['cpu_s_per_audio_hour']} |"
            )
    table = "\n".join(rows)
    if readme is not None:
        text = readme.read_text()
        start, end = "<!-- results-sets -->", "<!-- /results-sets -->"
        block = f"{start}\n{table}\n{end}"
        if start in text:
            text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
        else:
            text += "\n" + block + "\n"
        readme.write_text(text)
    return table


if __name__ == "__main__":
    main()
