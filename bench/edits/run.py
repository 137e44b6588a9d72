"""bench/edits: how long one cue's correction takes on a 2-hour transcript (issue 46, item 6: the
goal is p95 < 100 ms for the whole PATCH; bench/edits/patch.py times the whole PATCH). Measures the
edit applied to the segments document (pipeline.transcripts.transcript_edits.apply_edits) and txt, srt and
webvtt made again from it, rounds alternating:
  A "whole": transcript_edits.render, everything from the whole document (what every PATCH did);
  B "incremental": rerender.after_edit, from the previous edit's render, only where the edit reached.

    .venv/bin/python bench/edits/run.py [--hours 2] [--rounds 20] [--output bench/edits/results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from transcription.pipeline.transcripts import rerender, transcript_edits  # noqa: E402

VOCABULARY = (
    "the quick brown fox jumps over a lazy dog and then we talk about many things today really "
    "because it matters so much to everyone who listens here"
).split()


def transcript(hours: float, seed: int = 1) -> list[dict]:
    """A conversation of two speakers, about 2.3 words a second, sentences of 8 to 20 words."""
    rng = random.Random(seed)
    segments, t = [], 0.0
    while t < hours * 3600:
        start, tokens = t, [rng.choice(VOCABULARY) for _ in range(rng.randint(8, 20))]
        tokens[-1] += "."
        words = []
        for token in tokens:
            words.append({"start": round(t, 3), "end": round(t + 0.3, 3), "word": token})
            t += 0.4
        text = " ".join(tokens)
        segments.append(
            {"start": start, "end": round(t, 3), "text": text, "speaker": rng.choice([1, 2]), "words": words}
        )
        t += 0.5
    return segments


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def p50_p95(values: list[float]) -> dict[str, float]:
    """The two figures the goal is read by, in ms to a tenth."""
    return {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 0.95), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--output", type=Path, default=ROOT / "bench/edits/results.json")
    args = parser.parse_args()
    document = transcript(args.hours)
    kept = rerender.full(document, language="en")  # what the previous edit left (its first edit pays it)
    rng = random.Random(2)
    steps: dict[str, list[float]] = {"apply": [], "whole": [], "incremental": []}
    reach: list[int] = []
    for round_ in range(2 * args.rounds):
        index = rng.randrange(len(document))
        edit = {"op": "text", "index": index, "text": document[index]["text"].replace("the", "a", 1) + " indeed"}
        began = time.perf_counter()
        edited = transcript_edits.apply_edits(document, [edit], duration=args.hours * 3600 + 60, original=document)
        applied = time.perf_counter()
        if round_ % 2:  # A: everything made again from the whole document, as every PATCH did before
            whole = transcript_edits.render(edited, language="en")
            steps["whole"].append((time.perf_counter() - applied) * 1000)
            kept = rerender.full(edited, language="en")  # untimed: B's next round starts from it
            assert kept.outputs() == whole
        else:  # B: made again from the previous render, only where the edit reached
            kept = rerender.after_edit(kept, document, edited, language="en")
            steps["incremental"].append((time.perf_counter() - applied) * 1000)
            reach.append(len(kept.changed))
        steps["apply"].append((applied - began) * 1000)
        document = edited
    results = {
        "hours": args.hours,
        "segments": len(document),
        "words": sum(len(s["words"]) for s in document),
        "rounds_each": args.rounds,
        "goal_p95_ms": 100,
        "ms": {name: p50_p95(v) for name, v in steps.items()},
        "cues_changed_per_edit": {"min": min(reach), "max": max(reach)},
        "python": platform.python_version(),
        "cpu_count": __import__("os").cpu_count(),
    }
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
