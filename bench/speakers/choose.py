"""A per-recording choice between the service's turns and local speakers' (issue 45, item 3), swept
offline over the files of ``sets.py``'s results: each file holds both outputs' scores and the cues
(``readings.cues``, and how many speakers clustering found), so a rule is scored without running a
model again. The rule is chosen on the calibration half's results and then read on the test half's.

    .venv/bin/python bench/speakers/choose.py CALIBRATION.json [TEST.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from bench.speakers.sets import SETS, summary  # noqa: E402

LIMITS: dict[str, list[float]] = {
    "found": [2, 3, 4, 5, 99],  # local speakers where clustering finds this many speakers or more
    "three_local": [0.01, 0.05, 0.1, 0.2, 0.3],
    "mean_local": [1.3, 1.5, 1.7, 1.9, 2.1],
    "overlap_share": [0.02, 0.05, 0.08, 0.12, 0.16],
}


def cue(row: dict, name: str) -> float:
    return float(row["service"]["found"]) if name == "found" else float(row["cues"][name])


def apply(rows: list[dict], name: str, limit: float) -> list[dict]:
    out = []
    for row in rows:
        local = cue(row, name) >= limit
        out.append({**row, "chose_local": local, "chosen": row["local"] if local else row["service"]})
    return out


def brief(rows: list[dict], system: str = "chosen") -> dict:
    got = {}
    for name, pick in SETS.items():
        s = summary([r for r in rows if pick(r)], system)
        got[name] = {
            "der0": s["der_collar_0.0"]["der"],
            "der25": s["der_collar_0.25"]["der"],
            "count_exact": s["count_exact"],
            "given_two": s["overlap_given_two"],
            "one_voice_split": len(s["one_voice_split"]),
        }
    return got


def line(label: str, got: dict) -> str:
    return (
        f"{label:28s} "
        + "  ".join(
            f"{n}: {100 * g['der0']:.2f}/{100 * g['der25']:.2f}% exact {100 * g['count_exact']:.0f}% two {100 * g['given_two']:.0f}%"
            for n, g in got.items()
        )
        + f"  split {got['two-voice']['one_voice_split']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("calibration", type=Path)
    parser.add_argument("test", type=Path, nargs="?")
    args = parser.parse_args()
    halves = [("calibration", args.calibration)] + ([("test", args.test)] if args.test else [])
    for half, path in halves:
        rows = json.loads(path.read_text())["files"]
        print(f"== {half} ({path})")
        print(line("service", brief(rows, "service")))
        print(line("local", brief(rows, "local")))
        for name, limits in LIMITS.items():
            for limit in limits:
                print(line(f"{name} >= {limit}", brief(apply(rows, name, limit))))


if __name__ == "__main__":
    main()
