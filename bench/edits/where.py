"""bench/edits/where.py: where the 1.2 s of a whole render of a 2-hour transcript goes, and how far
an edit reaches into the subtitles (the measurements behind README.md's "Before this work" section,
which led to pipeline.transcripts.rerender; nothing is committed from a run).

    .venv/bin/python bench/edits/where.py [--hours 2] [--edits 12]

Prints: the steps of ``captions.build_cues`` on the whole transcript timed apart; what planning the
cues of a window of N words costs (what an incremental re-plan would pay); and, for one-cue text
edits as run.py makes them, which cues of the full re-render differ from the render before the edit.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.edits.run import transcript  # noqa: E402
from transcription.pipeline.recognition.words import guess_language  # noqa: E402
from transcription.pipeline.transcripts import captions, linebreaks, paragraphs, transcript_edits  # noqa: E402


def ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000, 1)


def steps(document: list[dict]) -> None:
    segments = transcript_edits.as_segments(document)
    began = time.perf_counter()
    toks = captions._tokens(segments)
    print("tokens (_tokens)", ms(began), "ms for", len(toks), "words")
    began = time.perf_counter()
    guess_language(t.text for t in toks)
    print("language guessed (only when the job has none)", ms(began), "ms")
    began = time.perf_counter()
    planner = captions.Planner(toks, *linebreaks.function_words("en"))
    print("planner's tables (Planner.__init__)", ms(began), "ms")
    began = time.perf_counter()
    plan = planner.plan()
    print("cue breaks planned (Planner.plan)", ms(began), "ms for", len(plan), "cues")
    cues = captions.build_cues(segments, language="en")
    for name, write in (("srt", captions.to_srt), ("webvtt", captions.to_webvtt)):
        began = time.perf_counter()
        write(cues)
        print(name, "written whole", ms(began), "ms")
    began = time.perf_counter()
    paragraphs.transcript_text(segments, renumber=False)
    print("txt written whole", ms(began), "ms")
    for size in (100, 300, 1000):
        window = [replace(t) for t in toks[5000 : 5000 + size]]
        began = time.perf_counter()
        captions.Planner(window, *linebreaks.function_words("en")).plan()
        print(f"a window of {size} words planned", ms(began), "ms")


def reach(document: list[dict], edits: int) -> None:
    def key(cue: captions.Cue) -> tuple:
        return cue.start, cue.end, tuple(cue.lines), tuple(cue.speakers)

    before = [key(c) for c in captions.build_cues(transcript_edits.as_segments(document), language="en")]
    rng = random.Random(2)
    for _ in range(edits):
        index = rng.randrange(len(document))
        edit = {"op": "text", "index": index, "text": document[index]["text"].replace("the", "a", 1) + " indeed"}
        edited = transcript_edits.apply_edits(document, [edit], duration=0, original=document)
        after = [key(c) for c in captions.build_cues(transcript_edits.as_segments(edited), language="en")]
        head = next((k for k, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
        tail = 0
        while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
            tail += 1
        print(
            f"segment {index} edited: cues {head}..{len(before) - tail - 1} of {len(before)} made again as "
            f"{len(after) - tail - head} cue(s); every other cue is identical"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--edits", type=int, default=12)
    args = parser.parse_args()
    document = transcript(args.hours)
    steps(document)
    reach(document, args.edits)


if __name__ == "__main__":
    main()
