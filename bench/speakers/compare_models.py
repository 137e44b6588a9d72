"""Resemblyzer against CAM++, both as the service runs them (numpy; onnxruntime), on the channel-matched
set of bench/speakers/dataset.py: thresholds chosen on the calibration half, scored on the test half.

    nice -n 10 .venv/bin/python bench/speakers/compare_models.py                    # both halves
    nice -n 10 .venv/bin/python bench/speakers/compare_models.py --per-condition 1 --long 0   # a quick look

Each encoder embeds the windows of the same speech regions (the service's VAD and windowing);
everything after the embeddings is the service's own code (``speakers.turns_from_embeddings``:
clustering, Viterbi, turns laid over the speech). The merge threshold is swept on the calibration
half (1.01: never merge); the one shipped is the middle of the plateau there (pooled DER within
a point of the best, no one-voice file split). The 2-means test of short files gets its
thresholds from the calibration half too (``small_split``). The test half is then scored with
pyannote.metrics (DER, collar 0, overlapped speech scored) at those thresholds.

As in the service, where two speakers or more are found the windows clustering is unsure of are
looked at again with short windows (``speakers.closer_turns``: every file's short windows are
embedded once, and those the service would embed are taken), and the changes of speaker are then
redrawn by the segmentation model (``speakers.redraw_changes``; bench/speakers/overlap.py measures it).

CPU: process seconds per hour of audio of VAD, features, embeddings, clustering and (where it runs)
the segmentation model on this machine, each encoder on the service's default threads. Results: bench/speakers/results-models.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.dataset import CONDITIONS, TWO_SPEAKER_CONDITIONS  # noqa: E402
from bench.speakers.embedded import closer_look, embedded_runs  # noqa: E402
from bench.speakers.run import annotation  # noqa: E402
from harness.resemblyzer_encoder import DEFAULT_ENCODER, ENCODER_NAMES, encoder_named  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import local as local_speakers  # noqa: E402
from transcription.pipeline.speakers.clustering import between, centroids, kmeans  # noqa: E402
from transcription.pipeline.speakers.encoding.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.encoding.encoders import default_encoder  # noqa: E402

MERGE_SWEEP = [round(float(m), 3) for m in np.arange(0.30, 0.951, 0.025)] + [1.01]
# how local speakers are read (local_speakers.LocalReading): swept on the calibration half at the service's
# thresholds; None: changes redrawn only (what the service shipped before)
LOCAL_SWEEP: list[local_speakers.LocalReading | None] = [None] + [
    local_speakers.LocalReading(margin=margin, slack=slack, agree=agree, overlapped=True)
    for margin in (0.2, 0.3)
    for slack in (None, 0.1)
    for agree in ("all", "overlapping")
]
PLATEAU_DER = 0.01
# the calibration half is also drawn with these seeds (its own voices, other lines and pairs): with 5
# files a condition, one seed alone held no two-voice call taken for one voice to choose on
CALIBRATION_SEEDS = (14,)  # within a point of the best pooled DER


def _window_speakers(entry: dict, encoder: str) -> list[str | None]:
    """The reference speaker talking over most of each window's own span (None: nobody or unclear)."""
    out = []
    for w in entry["windows"][encoder]:
        talk: dict[str, float] = {}
        for s, e, who in entry["item"].turns:
            talk[who] = talk.get(who, 0.0) + max(0.0, min(e, w.own_end) - max(s, w.own_start))
        best = max(talk, key=lambda name: talk[name]) if talk else None
        out.append(best if best and talk[best] >= 0.6 * (w.own_end - w.own_start) else None)
    return out


def small_split(embedded: list[dict], encoder: str) -> dict:
    """Centroid similarity of the best 2-means split of 8-19 consecutive windows: of one voice (from
    one-voice files) and of two voices (stretches where each has at least 3 windows). The threshold
    is set half-way between the lowest one-voice similarity and the highest two-voice one (their
    equal-error point where they overlap)."""
    rng = np.random.default_rng(0)
    same: dict[str, list[float]] = {"small": [], "large": []}
    different: dict[str, list[float]] = {"small": [], "large": []}
    for entry in embedded:
        emb = entry["emb"][encoder].astype(np.float64)
        who = _window_speakers(entry, encoder)
        one_voice = entry["item"].condition == "one-voice"
        for _ in range(30):
            n = int(rng.integers(8, 20))
            if len(emb) <= n:
                break
            a = int(rng.integers(0, len(emb) - n))
            names = [w for w in who[a : a + n] if w]
            counts = {w: names.count(w) for w in set(names)}
            if one_voice:
                bucket = same
            elif len(counts) == 2 and min(counts.values()) >= 3:
                bucket = different
            else:
                continue
            with single_threaded_blas():
                labels = kmeans(emb[a : a + n], 2)
                c = centroids(emb[a : a + n], labels, count=2)
            bucket["small" if n < 12 else "large"].append(float(c[0] @ c[1]))
    limits: list[float | None] = []
    for size in ("small", "large"):
        s, d = np.sort(same[size]), np.sort(different[size])
        if not len(s) or not len(d):
            limits.append(None)
            continue
        grid = np.linspace(-1, 1, 401)
        errors = [(np.mean(s < t) + np.mean(d >= t), t) for t in grid]
        best = min(e for e, _ in errors)
        at_best = [t for e, t in errors if e <= best + 1e-9]
        limits.append(round(float(np.median(at_best)), 3))
    return {
        "limits": limits,
        "one_voice_min": [round(float(min(same[k])), 3) if same[k] else None for k in ("small", "large")],
        "two_voice_max": [round(float(max(different[k])), 3) if different[k] else None for k in ("small", "large")],
        "samples": {k: [len(same[k]), len(different[k])] for k in ("small", "large")},
    }


def _equal_error(high: list[float], low: list[float], grid: np.ndarray) -> float | None:
    """The middle of the thresholds at which the fewest of ``high`` fall below and of ``low`` at or
    above (their equal-error point; the middle of the gap where they do not overlap)."""
    if not high or not low:
        return None
    h, lo = np.asarray(high), np.asarray(low)
    errors = [(float(np.mean(h < t) + np.mean(lo >= t)), float(t)) for t in grid]
    best = min(e for e, _ in errors)
    return round(float(np.median([t for e, t in errors if e <= best + 1e-9])), 3)


def between_limit(embedded: list[dict], encoder: str) -> dict:
    """How like a mix of two other centroids (``clustering.between``) a cluster may be and still be a
    voice: voices' own centroids (the windows each holds, in files of three voices or more) against
    the centroid of the windows no one voice holds (overlap, short lines, changes of speaker) beside
    the two voices' centroids of a two-voice file (where there are 3 such windows or more). The limit
    is their equal-error point."""
    voices: list[float] = []
    mixed: list[float] = []
    for entry in embedded:
        emb = np.where(np.isfinite(entry["emb"][encoder]), entry["emb"][encoder], 0.0).astype(np.float64)
        weights = np.array([w.own_end - w.own_start for w in entry["windows"][encoder]])
        who = _window_speakers(entry, encoder)
        names = sorted({w for w in who if w})
        labels = np.array([names.index(w) if w else len(names) for w in who], dtype=np.int64)
        if len(names) >= 3:
            centres = centroids(emb, labels, weights, count=len(names))
            voices += [between(centres, i) for i in range(len(names))]
        elif len(names) == 2 and (labels == 2).sum() >= 3:
            mixed.append(between(centroids(emb, labels, weights, count=3), 2))
    return {
        "limit": _equal_error(mixed, voices, np.linspace(0, 1, 201)),
        "voice_max": round(max(voices), 3) if voices else None,
        "mixed_min": round(min(mixed), 3) if mixed else None,
        "samples": [len(voices), len(mixed)],
    }


def _component(metric: DiarizationErrorRate, name: str) -> float:
    """One accumulated component of the metric (seconds)."""
    value = metric[name]
    if not isinstance(value, int | float):
        raise TypeError(f"{name} is not a number: {value!r}")
    return float(value)


def score(
    embedded: list[dict],
    encoder: str,
    merge: float,
    small_split_similarity,
    reading: local_speakers.LocalReading | None = None,
    *,
    between_similarity: float | None,
    closer: bool = True,
) -> dict:
    pooled = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    by_condition = {c: DiarizationErrorRate(collar=0.0, skip_overlap=False) for c in CONDITIONS}
    exact, split, files, cluster_cpu = 0, [], [], 0.0
    for e in embedded:
        item = e["item"]
        cpu = time.process_time()
        with single_threaded_blas():
            turns = speakers.turns_from_embeddings(
                e["emb"][encoder],
                e["windows"][encoder],
                e["pieces"][encoder],
                e["extent"],
                merge_similarity=merge,
                small_split_similarity=tuple(small_split_similarity),
                between_similarity=between_similarity,
            )
            if len({t.speaker for t in turns}) > 1 and closer:  # as diarize() does: a closer look,
                turns, short_cpu = closer_look(e, encoder, turns)  # changes redrawn, local speakers
                cluster_cpu += short_cpu
            if len({t.speaker for t in turns}) > 1:
                turns = local_speakers.refine_turns(
                    turns,
                    e["emb"][encoder],
                    e["windows"][encoder],
                    e["activity"],
                    e["local"][encoder],
                    e["extent"],
                    reading,
                )
                cluster_cpu += e["segmentation_cpu"] + (e["local_cpu"][encoder] if reading is not None else 0.0)
        cluster_cpu += time.process_time() - cpu
        reference = annotation(item.turns, item.name)
        hypothesis = annotation([(t.start, t.end, t.speaker) for t in turns], item.name)
        detail = pooled(reference, hypothesis, detailed=True)
        der = detail["diarization error rate"]
        by_condition[item.condition](reference, hypothesis)
        found = len({t.speaker for t in turns})
        exact += found == item.speakers
        if item.condition == "one-voice" and found > 1:
            split.append(item.name)
        files.append({"file": item.name, "speakers": item.speakers, "found": found, "der": round(der, 4)})
    audio_h = sum(e["item"].duration for e in embedded) / 3600
    cpu = sum(e["vad_cpu"] + e["cpu"][encoder] for e in embedded) + cluster_cpu
    conditions = {
        c: round(abs(m), 4) for c, m in by_condition.items() if any(e["item"].condition == c for e in embedded)
    }
    total = _component(pooled, "total") or 1.0
    return {
        "merge_similarity": merge,
        "small_split_similarity": list(small_split_similarity),
        "between_similarity": between_similarity,
        "der": round(abs(pooled), 4),
        # pyannote's components over the reference speech: missed counts overlapped speech too
        "missed": round(_component(pooled, "missed detection") / total, 4),
        "false_alarm": round(_component(pooled, "false alarm") / total, 4),
        "confusion": round(_component(pooled, "confusion") / total, 4),
        "conditions": conditions,
        "worst_two_speaker_condition": max((conditions[c], c) for c in TWO_SPEAKER_CONDITIONS if c in conditions),
        "count_exact": round(exact / len(embedded), 3),
        "one_voice_split": split,
        "cpu_s_per_audio_hour": round(cpu / audio_h, 1),
        "files": files,
    }


def plateau(sweep: list[dict]) -> tuple[dict, list[float]]:
    """The middle of the longest run of thresholds with no one-voice file split and pooled DER within
    PLATEAU_DER of the best such."""
    ok = [s for s in sweep if not s["one_voice_split"]] or sweep
    best = min(s["der"] for s in ok)
    good = [not s["one_voice_split"] and s["der"] <= best + PLATEAU_DER for s in sweep]
    runs, start = [], None
    for k, g in enumerate([*good, False]):
        if g and start is None:
            start = k
        elif not g and start is not None:
            runs.append((start, k))
            start = None
    a, b = max(runs, key=lambda r: r[1] - r[0]) if runs else (0, len(sweep))
    return sweep[(a + b - 1) // 2], [sweep[a]["merge_similarity"], sweep[b - 1]["merge_similarity"]]


TABLE_START, TABLE_END = "<!-- results-models -->", "<!-- /results-models -->"
COLUMNS = [
    ("two-voices", "two-voices"),
    ("same-gender-close-pitch", "same-gender close pitch"),
    ("telephone-close-pitch", "telephone close pitch"),
    ("short-turns-backchannels", "short turns"),
    ("overlap-10-20", "overlap 10-20%"),
    ("noise-music", "noise/music"),
    ("many-speakers", "many speakers"),
    ("long-returning", "long"),
    ("one-voice", "one voice"),
]


def write_table(results: dict, readme: Path) -> None:
    """The test half's figures at each encoder's shipped thresholds as the README's table, between its
    markers."""
    head = ["encoder", "pooled DER", "missed / false alarm", *(title for _, title in COLUMNS)]
    head += ["count exact", "one-voice split", "CPU per audio hour"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    shipped = default_encoder().name
    titles = {"campplus": "CAM++", "resemblyzer": "Resemblyzer"}
    scored = [(name, "test_at_shipped_thresholds") for name in ENCODER_NAMES]
    scored.insert(1, (DEFAULT_ENCODER, "test_at_shipped_without_closer"))
    for name, key in scored:
        # what the service ships is scored: its thresholds, not the ones this run would choose
        t = results[name][key]
        merge = t["merge_similarity"]
        label = (
            f"**{titles.get(name, name)}** (service, merge {merge})"
            if encoder_named(name).name == shipped
            else f"{titles.get(name, name)} (merge {merge})"
        )
        if key == "test_at_shipped_without_closer":
            label = f"{titles.get(name, name)} without the closer look (before)"
        cells = [label, f"{100 * t['der']:.1f}%", f"{100 * t['missed']:.1f}% / {100 * t['false_alarm']:.1f}%"]
        cells += [f"{100 * t['conditions'][c]:.1f}%" if c in t["conditions"] else "-" for c, _ in COLUMNS]
        cells += [f"{100 * t['count_exact']:.0f}%", str(len(t["one_voice_split"])), f"{t['cpu_s_per_audio_hour']} s"]
        rows.append("| " + " | ".join(cells) + " |")
    load = results["load_average"][0]
    minutes, files = results["audio_min"]["test"], results["files"]["test"]
    note = f"Test half: {files} files, {minutes} minutes; load average {load:.1f} while it ran (this 2-core machine is shared)."
    block = f"{TABLE_START}\n{note}\n\n" + "\n".join(rows) + f"\n{TABLE_END}"
    text = readme.read_text()
    if TABLE_START in text:
        text = text[: text.index(TABLE_START)] + block + text[text.index(TABLE_END) + len(TABLE_END) :]
    else:
        text += "\n" + block + "\n"
    readme.write_text(text)


def _brief(s: dict) -> dict:
    return {k: v for k, v in s.items() if k != "files"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--per-condition", type=int, default=6)
    parser.add_argument("--long", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-speakers"))
    parser.add_argument(
        "--calibration-seeds",
        type=int,
        nargs="*",
        default=list(CALIBRATION_SEEDS),
        help="more seeds of the calibration half (its voices only): more files to choose thresholds on",
    )
    parser.add_argument("--no-cache", action="store_true", help="embed again even where a cache matches")
    parser.add_argument("--results", type=Path, default=HERE / "results-models.json")
    args = parser.parse_args()
    halves: dict[str, list[dict]] = {"calibration": [], "test": []}
    runs = embedded_runs(
        args.out,
        seed=args.seed,
        calibration_seeds=args.calibration_seeds,
        per_condition=args.per_condition,
        long_files=args.long,
        cache=not args.no_cache,
    )
    for half, _, entries in runs:
        halves[half] += entries
    results = {
        "protocol": (
            "pyannote.metrics DiarizationErrorRate, collar 0, overlap scored; thresholds chosen on the "
            "calibration half's voices, scored on the test half's"
        ),
        "seed": args.seed,
        "calibration_seeds": [args.seed, *args.calibration_seeds],
        "load_average": os.getloadavg(),
        "files": {h: len(e) for h, e in halves.items()},
        "audio_min": {h: round(sum(x["item"].duration for x in e) / 60, 1) for h, e in halves.items()},
    }
    for name in ENCODER_NAMES:
        limits = small_split(halves["calibration"], name)
        small = [
            lim if lim is not None else fallback
            for lim, fallback in zip(limits["limits"], encoder_named(name).small_split_similarity, strict=True)
        ]
        shipped = encoder_named(name)
        mixes = between_limit(halves["calibration"], name)
        # Resemblyzer ships no between-check: it is compared as it runs
        apart = mixes["limit"] if shipped.between_similarity is not None else None
        sweep = [score(halves["calibration"], name, m, small, between_similarity=apart) for m in MERGE_SWEEP]
        chosen, span = plateau(sweep)
        at_shipped = (halves["calibration"], name, shipped.merge_similarity, shipped.small_split_similarity)
        test_shipped = (halves["test"], name, shipped.merge_similarity, shipped.small_split_similarity)
        results[name] = {
            "small_split_calibration": limits,
            "between_calibration": mixes,
            "chosen": {
                "merge_similarity": chosen["merge_similarity"],
                "plateau": span,
                "small_split": small,
                "between_similarity": apart,
            },
            "test": score(halves["test"], name, chosen["merge_similarity"], small, between_similarity=apart),
            "test_at_shipped_thresholds": _brief(score(*test_shipped, between_similarity=shipped.between_similarity)),
            "test_at_shipped_without_between": _brief(score(*test_shipped, between_similarity=None)),
            "test_at_shipped_without_closer": _brief(
                score(*test_shipped, between_similarity=shipped.between_similarity, closer=False)
            ),
            "calibration_at_shipped": _brief(score(*at_shipped, between_similarity=shipped.between_similarity)),
            "calibration_at_shipped_without_between": _brief(score(*at_shipped, between_similarity=None)),
            "calibration_at_shipped_without_closer": _brief(
                score(*at_shipped, between_similarity=shipped.between_similarity, closer=False)
            ),
            "local_sweep_calibration": [
                {"reading": repr(r), **_brief(score(*at_shipped, r, between_similarity=shipped.between_similarity))}
                for r in (LOCAL_SWEEP if name == DEFAULT_ENCODER else [])
            ],
            "calibration_sweep": [_brief(s) for s in sweep],
            "test_sweep": [
                _brief(score(halves["test"], name, m, small, between_similarity=apart)) for m in MERGE_SWEEP[::2]
            ],
        }
        t = results[name]["test"]
        print(
            name,
            "chosen",
            results[name]["chosen"],
            "test DER",
            t["der"],
            "worst two-speaker",
            t["worst_two_speaker_condition"],
            "count",
            t["count_exact"],
            "split",
            t["one_voice_split"],
            "cpu/h",
            t["cpu_s_per_audio_hour"],
            flush=True,
        )
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    if args.results == HERE / "results-models.json":
        write_table(results, HERE / "README.md")


if __name__ == "__main__":
    main()
