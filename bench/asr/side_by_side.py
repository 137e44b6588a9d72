"""The service's recogniser beside the bare faster-whisper library, clip by clip (issue 54 item 1).

    python bench/asr/side_by_side.py                  # the default set: ~10 min on 2 quiet cores
    python bench/asr/side_by_side.py --full           # every language, beds on every clip
    python bench/asr/side_by_side.py --only 'pl|hi'   # a regular expression on clip names

The clips are ``multilingual_set.py``'s. Three modes, each clip through all three in the same run,
the same model (``base``, int8, as the worker loads it), the language detected in every mode (as a
job without ``language_code``):

* ``service``: what the transcribing stage does with a chunk (``stages/transcribing._recognise``):
  the job's one VAD pass (``speakers.speech.find_speech``), then ``asr.transcribe`` with that speech,
  batched, with the recovery; scored on its segments, and its outputs (txt, srt, webvtt, segments:
  ``results.build_results``) looked at for loops too;
* ``bare-sequential``: ``WhisperModel.transcribe(wav)`` with the library's defaults;
* ``bare-batched``: ``BatchedInferencePipeline(model).transcribe(wav)`` with the library's defaults.

For every clip and mode: sentences kept (a sentence is kept when more than half its reference words
arrive: aligned, in the minimum-edit alignment, to a word of the transcript that is the same or
spelt at least half alike; characters for Japanese and Chinese, which must be the same), WER (CER
for ja/zh), loops (runs of one word or word group more than three times over, or a piece of a word
written four times over: ``repetition.loop_runs``). The check the issue asks for: the service keeps
every sentence the better bare mode keeps, on every clip (``worse_than_bare`` lists where not), and
its mean error is no worse. Results: ``results-side-by-side.json`` and a table on stdout (the
README's).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from multilingual import aligned, tokens  # noqa: E402
from multilingual_set import CHARACTER_LANGUAGES, build  # noqa: E402
from rtf import token_error_rate  # noqa: E402

from transcription.pipeline.recognition import asr, repetition  # noqa: E402
from transcription.pipeline.recognition.whisper_model import load_model  # noqa: E402
from transcription.pipeline.recognition.words import word_core  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402
from transcription.pipeline.transcripts.results import build_results  # noqa: E402

MODES = ("service", "bare-sequential", "bare-batched")
# the default set: 13 espeak-ng languages (with Festival's and the real recordings: 15 in all)
DEFAULT_LANGUAGES = ("de", "es", "fr", "it", "pt", "pl", "ru", "tr", "sv", "nl", "cs", "hi", "ja")
SENTENCE_END = r"(?<=[.!?\u3002\uff01\uff1f\u0964])\s*"


def arrived(word: str, got: str | None, language: str) -> bool:
    if got is None:
        return False
    if word == got or language in CHARACTER_LANGUAGES:
        return word == got
    return difflib.SequenceMatcher(None, word, got, autojunk=False).ratio() >= 0.5


def sentences_kept(reference: str, text: str, language: str) -> list[bool]:
    """For each reference sentence, whether more than half its words arrived."""
    ref, hyp = tokens(reference, language), tokens(text, language)
    paired = aligned(ref, hyp)
    kept, at = [], 0
    for sentence in re.split(SENTENCE_END, reference):
        words = tokens(sentence, language)
        if not words:
            continue
        mine = [arrived(w, g, language) for w, g in zip(words, paired[at : at + len(words)], strict=True)]
        kept.append(sum(mine) > len(words) / 2)
        at += len(words)
    return kept


def loops(text: str, language: str) -> int:
    """Runs of one word or word group more than three times over, and pieces of words written four
    times over."""
    words = [w for w in re.split(r"\s+", text) if w]
    keys = [word_core(w) or w for w in re.split(r"[\s,.;:!?、。，！？…\-–—]+", text) if w]
    return len(repetition.loop_runs(keys)) + sum(1 for w in words if repetition.inner_loop(w))


def recognise(model, clip, mode: str) -> tuple[str, dict]:
    extra: dict = {}
    if mode == "service":
        speech = find_speech(clip.path).for_recognition()
        transcript = asr.transcribe(model, clip.path, speech=speech)
        results = build_results(transcript.segments, [], language=transcript.language)
        outputs = {
            "txt": results["txt"],
            "srt": results["srt"],
            "webvtt": results["webvtt"],
            "segments": " ".join(s["text"] for s in results["segments"]),
        }
        extra = {"outputs": outputs, "language_found": transcript.language}
        return " ".join(seg.text for seg in transcript.segments), extra
    from faster_whisper import BatchedInferencePipeline

    if mode == "bare-sequential":
        segments, info = model.transcribe(str(clip.path))
    else:
        segments, info = BatchedInferencePipeline(model).transcribe(str(clip.path))
    text = " ".join(seg.text.strip() for seg in segments)
    return text, {"language_found": info.language}


def evaluate(model, clip, mode: str) -> dict:
    started = time.perf_counter()
    text, extra = recognise(model, clip, mode)
    seconds = time.perf_counter() - started
    language = clip.language or clip.languages[0]
    ref, hyp = tokens(clip.reference, language), tokens(text, language)
    kept = sentences_kept(clip.reference, text, language)
    row = {
        "clip": clip.name,
        "kind": clip.kind,
        "language": clip.language,
        "mode": mode,
        "metric": "CER" if language in CHARACTER_LANGUAGES else "WER",
        "error_rate": round(token_error_rate(ref, hyp), 3),
        "sentences": len(kept),
        "sentences_kept": sum(kept),
        "kept": kept,
        "loops": loops(text, language),
        "seconds": round(seconds, 2),
        "text": text,
        **{k: v for k, v in extra.items() if k != "outputs"},
    }
    if "outputs" in extra:
        row["output_loops"] = {name: loops(body, language) for name, body in extra["outputs"].items()}
    return row


def language_of(row: dict) -> str:
    return row["language"] or row["clip"]


def summary(rows: list[dict]) -> dict:
    by_clip: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_clip.setdefault(r["clip"], {})[r["mode"]] = r
    worse, lost_everywhere = {}, {}
    for clip, modes in by_clip.items():
        service = modes["service"]["kept"]
        best = max((modes[m] for m in MODES[1:]), key=lambda r: r["sentences_kept"])["kept"]
        bare_any = [any(modes[m]["kept"][k] for m in MODES[1:]) for k in range(len(service))]
        if sum(service) < sum(best) or any(b and not s for s, b in zip(service, best, strict=True)):
            worse[clip] = {m: modes[m]["kept"] for m in MODES}
        lost = [k for k in range(len(service)) if not service[k] and not bare_any[k]]
        if lost:
            lost_everywhere[clip] = lost
    table: dict[str, dict] = {}
    for r in rows:
        key = language_of(r)
        agg = table.setdefault(
            key, {"clips": set(), "sentences": 0, **{m: {"kept": 0, "err": [], "loops": 0} for m in MODES}}
        )
        agg["clips"].add(r["clip"])
        if r["mode"] == "service":
            agg["sentences"] += r["sentences"]
        agg[r["mode"]]["kept"] += r["sentences_kept"]
        agg[r["mode"]]["err"].append(r["error_rate"])
        agg[r["mode"]]["loops"] += r["loops"]
    per_language = {
        key: {
            "clips": len(v["clips"]),
            "sentences": v["sentences"],
            **{
                m: {
                    "kept": v[m]["kept"],
                    "mean_error": round(sum(v[m]["err"]) / len(v[m]["err"]), 3),
                    "loops": v[m]["loops"],
                }
                for m in MODES
            },
        }
        for key, v in sorted(table.items())
    }
    return {
        "clips": len(by_clip),
        "languages": sorted({r["language"] for r in rows if r["language"]}),
        "sentences": sum(r["sentences"] for r in rows if r["mode"] == "service"),
        "kept": {m: sum(r["sentences_kept"] for r in rows if r["mode"] == m) for m in MODES},
        "mean_error": {m: round(sum(r["error_rate"] for r in rows if r["mode"] == m) / len(by_clip), 3) for m in MODES},
        "loops": {m: sum(r["loops"] for r in rows if r["mode"] == m) for m in MODES},
        "service_output_loops": sum(sum(r["output_loops"].values()) for r in rows if r["mode"] == "service"),
        "worse_than_bare": worse,
        "lost_in_every_mode": lost_everywhere,
        "seconds": {m: round(sum(r["seconds"] for r in rows if r["mode"] == m), 1) for m in MODES},
        "per_language": per_language,
    }


def markdown(summary: dict) -> str:
    lines = [
        "| language | clips | sentences | kept: service | bare seq | bare batched "
        "| mean WER/CER: service | bare seq | bare batched | loops: service | bare seq | bare batched |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, v in summary["per_language"].items():
        cells = [key, v["clips"], v["sentences"]]
        cells += [v[m]["kept"] for m in MODES] + [f"{v[m]['mean_error']:.3f}" for m in MODES]
        cells += [v[m]["loops"] for m in MODES]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    cells = ["**all**", summary["clips"], summary["sentences"]]
    cells += [summary["kept"][m] for m in MODES] + [f"{summary['mean_error'][m]:.3f}" for m in MODES]
    cells += [summary["loops"][m] for m in MODES]
    lines.append("| " + " | ".join(f"**{c}**" if i else str(c) for i, c in enumerate(cells)) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="base")
    parser.add_argument("--cache-dir", default=os.environ.get("MODEL_CACHE_DIR", str(ROOT / "var" / "models")))
    parser.add_argument("--full", action="store_true", help="every language, the beds on every clip")
    parser.add_argument("--only", default="", help="regular expression on clip names")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-side-by-side.json")))
    args = parser.parse_args()

    model = load_model(args.model, args.cache_dir, device="cpu")
    rows = []
    load = [os.getloadavg()[0]]
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        clips = build(
            Path(tmp),
            languages=None if args.full else DEFAULT_LANGUAGES,
            beds=("silence", "music"),
            beds_on_every_clip=args.full,
            switching=args.full,
        )
        for clip in (c for c in clips if re.search(args.only, c.name)):
            for mode in MODES:
                row = evaluate(model, clip, mode)
                rows.append(row)
                print(
                    f"{row['clip']:28} {mode:16} kept {row['sentences_kept']}/{row['sentences']} "
                    f"{row['metric']} {row['error_rate']:.3f} loops {row['loops']} {row['seconds']:.1f}s | {row['text'][:90]}",
                    flush=True,
                )
            Path(args.out).with_suffix(".partial.json").write_text(json.dumps(rows, ensure_ascii=False) + "\n")
    load.append(os.getloadavg()[0])
    result = {
        "model": args.model,
        "set": "full" if args.full else "default",
        "loadavg_1min_start_end": load,
        "wall_s": round(time.time() - started, 1),
        "summary": summary(rows),
        "clips": rows,
    }
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print(markdown(result["summary"]))
    print(json.dumps({k: v for k, v in result["summary"].items() if k != "per_language"}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
