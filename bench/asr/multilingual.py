"""Multilingual accuracy and completeness of ``asr.transcribe`` on the set of ``multilingual_set.py``.

    python bench/asr/multilingual.py                          # base; default decoding vs batched without recovery
    python bench/asr/multilingual.py --modes default --only 'ja|hi' --out /tmp/m.json

For every clip and decoding mode: WER (CER for Japanese and Chinese), completeness (share of the
reference words, or characters, found in the transcript in order), the seconds of VAD speech that
no recognised word covers (words widened by 0.4 s; ``longest_gap_s`` is the longest such stretch: a
dropped sentence shows there), the language detected and its probability (with the language given
the transcription is not re-run). Modes:

* ``default``: ``asr.transcribe`` as the worker calls it (batched, dropped speech recovered);
* ``batched-unrecovered``: batched without the recovery (the behaviour before issue 21);
* ``plain``: ``WhisperModel.transcribe`` without batching (and without the recovery).

Results: ``results-multilingual.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from multilingual_set import CHARACTER_LANGUAGES, NUMBER_WORDS, build  # noqa: E402
from rtf import token_error_rate  # noqa: E402

from transcription.pipeline.media.wav import SAMPLE_RATE, read_slice  # noqa: E402
from transcription.pipeline.recognition import asr, language_id  # noqa: E402
from transcription.pipeline.recognition.whisper_model import load_model  # noqa: E402

# mode: (batched, recover_dropped), asr.transcribe's two options that the modes vary
MODES = {
    "default": (True, True),
    "batched-unrecovered": (True, False),
    "plain": (False, False),
}


def tokens(text: str, language: str) -> list[str]:
    """Lower case, no punctuation, number words as digits; characters for ja/zh."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(c)[0] in "PSZ" else c for c in text)
    numbers = {w: str(i) for i, w in enumerate(NUMBER_WORDS.get(language, []), 1)}
    if language in CHARACTER_LANGUAGES:
        for word, digit in numbers.items():
            text = text.replace(word, digit)
        return [c for c in text if not c.isspace()]
    return [numbers.get(w, w) for w in text.split()]


def found(ref: list[str], hyp: list[str]) -> int:
    """Reference tokens found in the transcript, in order (longest common subsequence blocks)."""
    return sum(b.size for b in difflib.SequenceMatcher(None, ref, hyp, autojunk=False).get_matching_blocks())


def alignment(ref: list[str], hyp: list[str]) -> list[tuple[int | None, int | None]]:
    """The minimum-edit alignment as (reference index, transcript index) pairs in order: both for a
    hit or a substitution, (i, None) for a deleted reference token, (None, j) for an inserted one."""
    n, m = len(ref), len(hyp)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    pairs: list[tuple[int | None, int | None]] = []
    i, j = n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] + 1:
            pairs.append((i - 1, None))
            i -= 1
        else:
            pairs.append((None, j - 1))
            j -= 1
    return pairs[::-1]


def aligned(ref: list[str], hyp: list[str]) -> list[str | None]:
    """For each reference token, the transcript token the minimum-edit alignment pairs it with
    (None: deleted)."""
    return [None if j is None else hyp[j] for i, j in alignment(ref, hyp) if i is not None]


def transcript_fates(ref: list[str], hyp: list[str]) -> list[str]:
    """What each transcript token is in the minimum-edit alignment: "hit", "misheard" (substituted
    for a reference token) or "inserted"."""
    fates = ["inserted"] * len(hyp)
    for i, j in alignment(ref, hyp):
        if j is not None and i is not None:
            fates[j] = "hit" if ref[i] == hyp[j] else "misheard"
    return fates


def reference_fates(ref: list[str], hyp: list[str]) -> list[str]:
    """What became of each reference token in the minimum-edit alignment: "hit", "misheard"
    (substituted) or "dropped" (deleted)."""
    return [
        "dropped" if got is None else "hit" if got == word else "misheard" for word, got in zip(ref, aligned(ref, hyp))
    ]


def dropped_sentences(reference: str, language: str, fates: list[str]) -> int:
    """Reference sentences most of whose tokens the alignment dropped (none heard at all)."""
    sentences = [s for s in re.split(r"(?<=[.!?\u3002\uff01\uff1f\u0964])\s*", reference) if tokens(s, language)]
    dropped, at = 0, 0
    for sentence in sentences:
        n = len(tokens(sentence, language))
        mine = fates[at : at + n]
        dropped += bool(mine) and mine.count("dropped") > len(mine) / 2
        at += n
    return dropped


def evaluate(model, clip, mode: str) -> dict:
    started = time.perf_counter()
    batched, recover_dropped = MODES[mode]
    transcript = asr.transcribe(model, clip.path, batched=batched, recover_dropped=recover_dropped)
    seconds = time.perf_counter() - started
    text = " ".join(seg.text for seg in transcript.segments)
    # score in the language spoken most (a switching file: the union of its languages' number words)
    language = clip.language or clip.languages[0]
    ref, hyp = tokens(clip.reference, language), tokens(text, language)
    for other in clip.languages[1:]:
        ref2, hyp2 = tokens(clip.reference, other), tokens(text, other)
        if found(ref2, hyp2) > found(ref, hyp):
            ref, hyp = ref2, hyp2
    fates = reference_fates(ref, hyp)
    audio = read_slice(clip.path, 0.0, None)
    regions = [(s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in language_id.speech_regions(audio)]
    gaps = asr.uncovered_speech(regions, transcript.segments)
    return {
        "clip": clip.name,
        "kind": clip.kind,
        "language": clip.language,
        "mode": mode,
        "metric": "CER" if language in CHARACTER_LANGUAGES else "WER",
        "error_rate": round(token_error_rate(ref, hyp), 3),
        "reference_tokens": len(ref),
        "found_tokens": found(ref, hyp),
        "completeness": round(found(ref, hyp) / max(1, len(ref)), 3),
        # heard: recognised or misheard, not dropped (a substitution is a word heard wrongly)
        "heard": round(1 - fates.count("dropped") / max(1, len(ref)), 3),
        "sentences": len(
            [s for s in re.split(r"(?<=[.!?\u3002\uff01\uff1f\u0964])\s*", clip.reference) if tokens(s, language)]
        ),
        "sentences_dropped": dropped_sentences(clip.reference, language, fates),
        "speech_s": round(sum(e - s for s, e in regions), 2),
        "uncovered_speech_s": round(sum(e - s for s, e in gaps), 2),
        "longest_gap_s": round(max((e - s for s, e in gaps), default=0.0), 2),
        "detected": transcript.language,
        "probability": transcript.language_probability,
        "seconds": round(seconds, 2),
        "audio_s": round(len(audio) / SAMPLE_RATE, 2),
        "text": text,
    }


def summary(rows: list[dict]) -> dict:
    out = {}
    for mode in sorted({r["mode"] for r in rows}):
        mine = [r for r in rows if r["mode"] == mode]
        detectable = [r for r in mine if r["language"]]
        by_language: dict[str, dict[str, float]] = {}
        for r in mine:
            # per language and source: "it festival" and "it espeak" are different voices
            key = f"{r['language']} {r['clip'].split('-')[1]}" if r["language"] else r["clip"]
            agg = by_language.setdefault(
                key,
                {"ref": 0, "found": 0, "heard": 0.0, "err": 0.0, "files": 0, "min": 1.0, "uncovered": 0.0, "lost": 0},
            )
            agg["heard"] += r["heard"] * r["reference_tokens"]
            agg["lost"] += r["sentences_dropped"]
            agg["ref"] += r["reference_tokens"]
            agg["found"] += r["found_tokens"]
            agg["err"] += r["error_rate"] * r["reference_tokens"]
            agg["files"] += 1
            agg["min"] = min(agg["min"], r["completeness"])
            agg["uncovered"] += r["uncovered_speech_s"]
        out[mode] = {
            "pooled_completeness": round(
                sum(r["found_tokens"] for r in mine) / sum(r["reference_tokens"] for r in mine), 3
            ),
            "files_below_0.9": [r["clip"] for r in mine if r["completeness"] < 0.9],
            "pooled_heard": round(
                sum(r["heard"] * r["reference_tokens"] for r in mine) / sum(r["reference_tokens"] for r in mine), 3
            ),
            "sentences": sum(r["sentences"] for r in mine),
            "sentences_dropped": {r["clip"]: r["sentences_dropped"] for r in mine if r["sentences_dropped"]},
            "detection_accuracy": round(sum(r["detected"] == r["language"] for r in detectable) / len(detectable), 3),
            "misdetected": {
                r["clip"]: f"{r['detected']} {r['probability']}" for r in detectable if r["detected"] != r["language"]
            },
            "seconds": round(sum(r["seconds"] for r in mine), 1),
            "audio_s": round(sum(r["audio_s"] for r in mine), 1),
            "by_language": {
                k: {
                    "files": v["files"],
                    "error_rate": round(v["err"] / max(1, v["ref"]), 3),
                    "completeness": round(v["found"] / max(1, v["ref"]), 3),
                    "worst_file_completeness": v["min"],
                    "heard": round(v["heard"] / max(1, v["ref"]), 3),
                    "sentences_dropped": v["lost"],
                    "uncovered_speech_s": round(v["uncovered"], 1),
                }
                for k, v in sorted(by_language.items())
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="base")
    parser.add_argument("--cache-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--modes", default="default,batched-unrecovered")
    parser.add_argument("--only", default="", help="regular expression on clip names")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-multilingual.json")))
    args = parser.parse_args()

    model = load_model(args.model, args.cache_dir)
    rows = []
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        clips = [c for c in build(Path(tmp)) if re.search(args.only, c.name)]
        for clip in clips:
            for mode in args.modes.split(","):
                row = evaluate(model, clip, mode)
                rows.append(row)
                print(
                    f"{row['clip']:22} {mode:20} {row['metric']} {row['error_rate']:.3f} "
                    f"complete {row['completeness']:.3f} gap {row['longest_gap_s']:.1f}s "
                    f"{row['detected']} {row['probability']} {row['seconds']:.1f}s",
                    flush=True,
                )
    load.append(os.getloadavg()[0])
    result = {"model": args.model, "loadavg_1min_start_end": load, "summary": summary(rows), "clips": rows}
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps(result["summary"], ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
