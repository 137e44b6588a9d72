"""bench/rework: what keeping a job's translations in step with an edit costs (issue 46, item 2).

1. In the PATCH, per translation, on a long transcript: the cues read back (the job's old and new
   SRT and WebVTT, the translation's SRT) and the plan (pipeline.transcripts.retranslation.plan): what the
   edit adds to a job with translations (a job without any reads and parses nothing more).
2. On the asr worker: translating the one cue an edit changed (retranslation.complete, Apertium
   en->es) against translating every cue again (translate_cues over the whole transcript: the
   rejected alternative), on a shorter transcript (Apertium on every cue of 2 hours takes minutes).

    .venv/bin/python bench/rework/run.py [--hours 2] [--minutes 10] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.edits.run import transcript  # noqa: E402
from transcription.pipeline import translate  # noqa: E402
from transcription.pipeline.transcripts import captions, retranslation, transcript_edits  # noqa: E402


def rendered(document: list[dict]) -> tuple[list[captions.Cue], str, str]:
    cues = captions.build_cues(transcript_edits.as_segments(document), language="en")
    return cues, captions.to_srt(cues), captions.to_webvtt(cues)


def edited(document: list[dict], index: int) -> list[dict]:
    edit = {"op": "text", "index": index, "text": "The house is very big and the dog is happy."}
    return transcript_edits.apply_edits(document, [edit], duration=10**6, original=document)


def planning(hours: float, rounds: int) -> dict:
    document = transcript(hours)
    _, old_srt, old_vtt = rendered(document)
    _, new_srt, new_vtt = rendered(edited(document, len(document) // 2))
    times: dict[str, list[float]] = {"read cues": [], "plan": []}
    for _ in range(rounds):
        began = time.perf_counter()
        old = captions.with_voices(captions.from_srt(old_srt), old_vtt)
        new = captions.with_voices(captions.from_srt(new_srt), new_vtt)
        target = retranslation.current(captions.from_srt(old_srt))
        read = time.perf_counter()
        _, changed = retranslation.plan(old, target, new)
        planned = time.perf_counter()
        times["read cues"].append(read - began)
        times["plan"].append(planned - read)
    return {
        "cues": len(old),
        "changed": len(changed),
        **{f"{name} ms (median)": round(statistics.median(v) * 1000, 1) for name, v in times.items()},
    }


def translating(minutes: float, rounds: int) -> dict:
    document = transcript(minutes / 60)
    old, _, _ = rendered(document)
    new, _, _ = rendered(edited(document, len(document) // 2))
    translator = translate.find_translator("en", "es")
    assert translator is not None, "Apertium en-es is needed (apt-get install apertium-eng-spa)"
    spanish = retranslation.current(translate.translate_cues(old, translator, language="es"))
    plan, changed = retranslation.plan(old, spanish, new)
    times: dict[str, list[float]] = {"changed cues only": [], "every cue": []}
    for _ in range(rounds):  # A/B alternated: the shared machine's load hits both alike
        began = time.perf_counter()
        retranslation.complete(plan, lambda cues: translate.translate_cues(cues, translator, language="es"))
        middle = time.perf_counter()
        translate.translate_cues(new, translator, language="es")
        ended = time.perf_counter()
        times["changed cues only"].append(middle - began)
        times["every cue"].append(ended - middle)
    return {
        "cues": len(new),
        "changed": len(changed),
        **{f"{name} s (median)": round(statistics.median(v), 2) for name, v in times.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=ROOT / "bench/rework/results.json")
    args = parser.parse_args()
    results = {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        f"planning, {args.hours:g} h transcript, per translation": planning(args.hours, args.rounds),
        f"translating, {args.minutes:g} min transcript, en->es Apertium": translating(args.minutes, args.rounds),
    }
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
