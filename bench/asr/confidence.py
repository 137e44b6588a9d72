"""How well the speech model's word probability points at its mistakes: the editor's threshold.

    python bench/asr/confidence.py                 # base; the set of multilingual_set.py
    python bench/asr/confidence.py --only 'en|nl' --out /tmp/c.json

Every clip of the set whose language is written with spaces (Japanese and Chinese are scored by
characters, which carry no word probability) is recognised as the worker does (``asr.transcribe``),
and each recognised word is aligned to the reference with the minimum-edit alignment
``multilingual.py`` scores with (``transcript_fates``). A word is a mistake when it is misheard (substituted) or inserted.
For each threshold, the share of words the editor would list (probability under it), the share of
mistakes among them (precision) and the share of all mistakes it lists (caught).

The clips are split by a fixed rule: every third language, in code order, is held out (so no
recording, voice or padded copy of one is on both sides). The threshold is
chosen on the tuning part, as the lowest that catches at least ``--catch`` of its mistakes (the
fewest words listed for that), and reported on both parts.

Results: ``results-confidence.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from multilingual import tokens, transcript_fates  # noqa: E402
from multilingual_set import CHARACTER_LANGUAGES, build  # noqa: E402

from transcription.pipeline.recognition import asr  # noqa: E402
from transcription.pipeline.recognition.whisper_model import load_model  # noqa: E402

THRESHOLDS = [round(0.1 + 0.05 * k, 2) for k in range(17)]  # 0.10 .. 0.90


def scored_words(clip, transcript) -> list[tuple[float, bool]]:
    """(probability, is a mistake) for each recognised token of the clip."""
    hyp: list[str] = []
    probabilities: list[float] = []
    for segment in transcript.segments:
        for word in segment.words:
            for token in tokens(word.text, clip.language):
                hyp.append(token)
                probabilities.append(word.probability)
    fates = transcript_fates(tokens(clip.reference, clip.language), hyp)
    return [(p, fate != "hit") for p, fate in zip(probabilities, fates)]


def table(words: list[tuple[float, bool]]) -> list[dict]:
    mistakes = sum(wrong for _, wrong in words) or 1
    rows = []
    for threshold in THRESHOLDS:
        listed = [wrong for p, wrong in words if p < threshold]
        rows.append(
            {
                "threshold": threshold,
                "listed": round(len(listed) / max(1, len(words)), 3),
                "precision": round(sum(listed) / max(1, len(listed)), 3),
                "caught": round(sum(listed) / mistakes, 3),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="base")
    parser.add_argument("--cache-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--only", default="", help="regular expression on clip names")
    parser.add_argument("--catch", type=float, default=0.7, help="share of the tuning part's mistakes to list")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-confidence.json")))
    args = parser.parse_args()

    model = load_model(args.model, Path(args.cache_dir), device="cpu")
    started = time.time()
    parts: dict[str, list[tuple[float, bool]]] = {"tuning": [], "held_out": []}
    clips_of: dict[str, list[str]] = {"tuning": [], "held_out": []}
    with tempfile.TemporaryDirectory() as tmp:
        clips = [
            c
            for c in build(Path(tmp), beds=("silence",), switching=False)
            if c.language
            and c.language not in CHARACTER_LANGUAGES
            and c.kind != "long"
            and re.search(args.only, c.name)
        ]
        # held out by language, so that no recording (nor its voice, nor its silence-padded copy)
        # is on both sides
        languages = sorted({c.language for c in clips})
        held_out = set(languages[2::3])
        for clip in sorted(clips, key=lambda c: c.name):
            part = "held_out" if clip.language in held_out else "tuning"
            words = scored_words(
                clip, asr.transcribe(model, clip.path, options=asr.RecognitionOptions(language=clip.language))
            )
            parts[part] += words
            clips_of[part].append(clip.name)
            wrong = sum(w for _, w in words)
            print(f"{clip.name:32} {part:8} words {len(words):4}  mistakes {wrong:3}", flush=True)

    tables = {part: table(words) for part, words in parts.items()}
    chosen = next((row for row in tables["tuning"] if row["caught"] >= args.catch), tables["tuning"][-1])["threshold"]
    result = {
        "model": args.model,
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "seconds": round(time.time() - started),
        "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
        "catch": args.catch,
        "threshold": chosen,
        "at_threshold": {part: next(r for r in rows if r["threshold"] == chosen) for part, rows in tables.items()},
        "words": {part: len(words) for part, words in parts.items()},
        "mistakes": {part: sum(w for _, w in words) for part, words in parts.items()},
        "clips": clips_of,
        "tables": tables,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nthreshold {chosen} (the lowest catching {args.catch:.0%} of the tuning part's mistakes)")
    for part in ("tuning", "held_out"):
        row = result["at_threshold"][part]
        print(
            f"{part:8}: {result['words'][part]} words, {result['mistakes'][part]} mistakes; listed "
            f"{row['listed']:.1%}, caught {row['caught']:.1%}, precision {row['precision']:.1%}"
        )


if __name__ == "__main__":
    main()
