"""Overlapped speech on the channel-matched set (bench/speakers/dataset.py): what pyannote's
segmentation model (transcription.pipeline.speakers.segmentation) tells, and what it does to the
service's diarization.

    nice -n 10 .venv/bin/python bench/speakers/overlap.py      # both halves, a few minutes here

Every file is read as the service reads it (Silero VAD, CAM++ windows, clustering at the encoder's
thresholds: ``speakers.turns_from_embeddings``) and by the segmentation model once. Then, per half:

* speech, speaker-blind: the share of the reference's speech the service's turns (Silero read for
  turns) miss and add, against the segmentation model's speech probability read at a threshold;
* overlap: precision and recall of the model's overlap probability (10 ms frames) against the
  frames where the reference has two voices or more;
* DER (pyannote.metrics, collar 0, overlap scored) of the turns as clustered, with the changes of
  speaker redrawn (``speakers.redraw_changes``: what the service ships), and with "overlap-aware
  resegmentation" on top (Bullock et al. 2020: where the model's overlap probability is at least a
  threshold, the speaker of the turn there and the speaker of the nearest other turn both talk).
  That threshold is swept on the calibration half, the middle of its plateau (pooled DER within
  0.1 point of the best) taken, and the test half scored at it.

CPU: process seconds per hour of audio of the VAD, the segmentation model and the embeddings.
Results: bench/speakers/results-overlap.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.dataset import CONDITIONS, TWO_SPEAKER_CONDITIONS, Item, build  # noqa: E402
from bench.speakers.run import annotation  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers.changes import SHIPPED, Reading  # noqa: E402
from transcription.pipeline.speakers.encoding.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.encoding.embedding import embed_regions  # noqa: E402
from transcription.pipeline.speakers.encoding.encoders import default_encoder  # noqa: E402
from transcription.pipeline.speakers.segmentation import FrameClasses, Segmentation  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402
from transcription.pipeline.types import SpeakerTurn  # noqa: E402

GRID_S = 0.01
SPEECH_THRESHOLDS = [0.3, 0.4, 0.5, 0.6, 0.7]
OVERLAP_THRESHOLDS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
PLATEAU_DER = 0.001  # within 0.1 point of the best pooled DER
# how changes are redrawn: swept on the calibration half around what the service ships
READINGS = [
    Reading(talking, shift, pause)
    for talking in (0.5, 0.6, 0.7, 0.8)
    for shift in (0.5, 0.75, 1.0)
    for pause in (0.5, 2.0)
]

Turns = list[SpeakerTurn]


def read_file(item: Item, segmentation: Segmentation) -> dict[str, Any]:
    """One file as the service reads it, the segmentation model's reading, and the CPU of each."""
    encoder = default_encoder()
    cpu = time.process_time()
    activity = find_speech(item.wav)
    vad_cpu = time.process_time() - cpu
    cpu = time.process_time()
    speaking = segmentation.activity_of_wav(item.wav)
    segmentation_cpu = time.process_time() - cpu
    cpu = time.process_time()
    with single_threaded_blas():
        emb, windows, pieces = embed_regions(item.wav, activity.for_diarization(), encoder)
        turns = speakers.turns_from_embeddings(
            emb,
            windows,
            pieces,
            activity.for_turns(),
            merge_similarity=encoder.merge_similarity,
            small_split_similarity=encoder.small_split_similarity,
            between_similarity=encoder.between_similarity,
        )
    embedding_cpu = time.process_time() - cpu
    redrawn = speakers.redraw_changes(turns, speaking) if len({t.speaker for t in turns}) > 1 else turns
    return {
        "item": item,
        "activity": speaking,
        "extent": activity.for_turns(),
        "classes": speaking.frame_classes(),
        "turns": turns,
        "redrawn": redrawn,
        "cpu": {"vad": vad_cpu, "segmentation": segmentation_cpu, "embeddings": embedding_cpu},
    }


def _frames(item: Item) -> int:
    return int(item.duration / GRID_S) + 1


def _speakers_per_frame(item: Item) -> np.ndarray:
    count = np.zeros(_frames(item), dtype=np.int64)
    for start, end, _ in item.turns:
        count[round(start / GRID_S) : round(end / GRID_S)] += 1
    return count


def _on_grid(classes: FrameClasses, probability: np.ndarray, n: int) -> np.ndarray:
    centres = (np.arange(n) + 0.5) * GRID_S
    index = np.clip(np.round((centres - classes.offset) / classes.step).astype(int), 0, len(probability) - 1)
    picked: np.ndarray = probability[index]
    return picked


def _covered(regions: Sequence[tuple[float, float]], n: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    for start, end in regions:
        mask[round(start / GRID_S) : round(end / GRID_S)] = True
    return mask


def speech_detection(files: list[dict[str, Any]]) -> dict[str, Any]:
    """Missed and added speech (shares of the reference's), speaker-blind: the service's turns
    (Silero) and the segmentation model at each threshold."""
    speech = 0
    missed: dict[str, int] = {}
    added: dict[str, int] = {}
    for f in files:
        talking = _speakers_per_frame(f["item"]) > 0
        speech += int(talking.sum())
        n = len(talking)
        found = {"silero_turns": _covered(f["extent"], n)}
        probability = _on_grid(f["classes"], f["classes"].speech, n)
        found |= {f"segmentation_{t}": probability >= t for t in SPEECH_THRESHOLDS}
        for name, mask in found.items():
            missed[name] = missed.get(name, 0) + int((talking & ~mask).sum())
            added[name] = added.get(name, 0) + int((~talking & mask).sum())
    return {
        name: {"missed": round(missed[name] / speech, 4), "added": round(added[name] / speech, 4)} for name in missed
    }


def overlap_detection(files: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision and recall of the overlap probability at each threshold, pooled and per condition."""
    counts: dict[tuple[str, float], list[int]] = {}
    for f in files:
        overlapped = _speakers_per_frame(f["item"]) >= 2
        probability = _on_grid(f["classes"], f["classes"].overlap, len(overlapped))
        for threshold in OVERLAP_THRESHOLDS:
            heard = probability >= threshold
            hits = [int((heard & overlapped).sum()), int(heard.sum()), int(overlapped.sum())]
            for key in (("pooled", threshold), (f["item"].condition, threshold)):
                counts[key] = [a + b for a, b in zip(counts.get(key, [0, 0, 0]), hits, strict=True)]
    out: dict[str, Any] = {}
    for (group, threshold), (right, found, truth) in counts.items():
        out.setdefault(group, {"overlapped_s": round(truth * GRID_S, 1)})[str(threshold)] = {
            "precision": round(right / found, 3) if found else None,
            "recall": round(right / truth, 3) if truth else None,
            "found_s": round(found * GRID_S, 1),
        }
    return out


def _nearest_other_speaker(turns: Turns, turn: SpeakerTurn) -> int | None:
    others = [t for t in turns if t.speaker != turn.speaker]
    if not others:
        return None
    gap = [max(0.0, max(t.start, turn.start) - min(t.end, turn.end)) for t in others]
    return others[int(np.argmin(gap))].speaker


def with_overlaps(turns: Turns, overlaps: Sequence[tuple[float, float]]) -> Turns:
    """Bullock et al.'s overlap-aware resegmentation: inside each overlap region, the speaker of
    the turn there and the speaker of the nearest turn of another speaker. One speaker's turns that
    then overlap are merged."""
    added = list(turns)
    for turn in turns:
        inside = [(max(s, turn.start), min(e, turn.end)) for s, e in overlaps if min(e, turn.end) > max(s, turn.start)]
        other = _nearest_other_speaker(turns, turn) if inside else None
        if other is not None:
            added.extend(SpeakerTurn(start=s, end=e, speaker=other) for s, e in inside)
    merged: Turns = []
    for speaker in sorted({t.speaker for t in added}):
        for start, end in sorted((t.start, t.end) for t in added if t.speaker == speaker):
            if merged and merged[-1].speaker == speaker and start <= merged[-1].end:
                merged[-1] = SpeakerTurn(start=merged[-1].start, end=max(end, merged[-1].end), speaker=speaker)
            else:
                merged.append(SpeakerTurn(start=start, end=end, speaker=speaker))
    return sorted(merged, key=lambda t: (t.start, t.end))


def score(files: list[dict[str, Any]], make_turns: Callable[[dict[str, Any]], Turns]) -> dict[str, Any]:
    """Pooled and per-condition DER, speakers counted right, one-voice files split."""
    pooled = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    by_condition = {c: DiarizationErrorRate(collar=0.0, skip_overlap=False) for c in CONDITIONS}
    exact, split = 0, []
    for f in files:
        item, turns = f["item"], make_turns(f)
        reference = annotation(item.turns, item.name)
        hypothesis = annotation([(t.start, t.end, t.speaker) for t in turns], item.name)
        pooled(reference, hypothesis)
        by_condition[item.condition](reference, hypothesis)
        found = len({t.speaker for t in turns})
        exact += found == item.speakers
        if item.condition == "one-voice" and found > 1:
            split.append(item.name)
    conditions = {
        c: round(float(abs(m)), 4) for c, m in by_condition.items() if any(f["item"].condition == c for f in files)
    }
    return {
        "der": round(float(abs(pooled)), 4),
        "conditions": conditions,
        "worst_two_speaker_condition": max((conditions[c], c) for c in TWO_SPEAKER_CONDITIONS if c in conditions),
        "count_exact": round(exact / len(files), 3),
        "one_voice_split": split,
    }


def _resegmented(threshold: float) -> Callable[[dict[str, Any]], Turns]:
    def make(f: dict[str, Any]) -> Turns:
        classes: FrameClasses = f["classes"]
        return with_overlaps(f["redrawn"], classes.regions(classes.overlap, threshold))

    return make


def reading_sweep(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pooled and worst two-speaker DER of the changes redrawn with each of READINGS."""

    def redrawn(reading: Reading) -> Callable[[dict[str, Any]], Turns]:
        def make(f: dict[str, Any]) -> Turns:
            turns: Turns = f["turns"]
            many = len({t.speaker for t in turns}) > 1
            return speakers.redraw_changes(turns, f["activity"], reading) if many else turns

        return make

    out = []
    for reading in READINGS:
        s = score(files, redrawn(reading))
        out.append(
            {**reading.__dict__, "der": s["der"], "worst_two_speaker_condition": s["worst_two_speaker_condition"]}
        )
    return out


def plateau_middle(sweep: dict[float, dict[str, Any]]) -> tuple[float, list[float]]:
    """The middle of the longest run of thresholds whose pooled DER is within PLATEAU_DER of the best."""
    thresholds = sorted(sweep)
    best = min(s["der"] for s in sweep.values())
    good = [sweep[t]["der"] <= best + PLATEAU_DER for t in thresholds]
    runs, start = [], None
    for k, ok in enumerate([*good, False]):
        if ok and start is None:
            start = k
        elif not ok and start is not None:
            runs.append((start, k))
            start = None
    a, b = max(runs, key=lambda r: r[1] - r[0])
    return thresholds[(a + b - 1) // 2], [thresholds[a], thresholds[b - 1]]


def half_results(files: list[dict[str, Any]], threshold: float | None) -> dict[str, Any]:
    audio_h = sum(f["item"].duration for f in files) / 3600
    cpu = {step: round(sum(f["cpu"][step] for f in files) / audio_h, 1) for step in files[0]["cpu"]}
    out: dict[str, Any] = {
        "files": len(files),
        "audio_min": round(audio_h * 60, 1),
        "cpu_s_per_audio_hour": cpu,
        "speech_detection": speech_detection(files),
        "overlap_detection": overlap_detection(files),
        "as_clustered": score(files, lambda f: f["turns"]),
        "changes_redrawn": score(files, lambda f: f["redrawn"]),
    }
    if threshold is None:
        out["redraw_sweep"] = reading_sweep(files)
        out["redraw_shipped"] = SHIPPED.__dict__
        sweep = {t: score(files, _resegmented(t)) for t in OVERLAP_THRESHOLDS}
        threshold, span = plateau_middle(sweep)
        out["resegmentation_sweep"] = {str(t): s for t, s in sweep.items()}
        out["resegmentation_threshold"] = {"chosen": threshold, "plateau": span}
    out["changes_redrawn_and_resegmented"] = score(files, _resegmented(threshold))
    out["resegmentation_threshold_used"] = threshold
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--per-condition", type=int, default=5)
    parser.add_argument("--long", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-speakers"))
    parser.add_argument("--results", type=Path, default=HERE / "results-overlap.json")
    args = parser.parse_args()
    segmentation = Segmentation()
    results: dict[str, Any] = {
        "protocol": (
            "pyannote.metrics DiarizationErrorRate, collar 0, overlap scored; the resegmentation threshold "
            "chosen on the calibration half, scored on the test half"
        ),
        "seed": args.seed,
        "load_average": os.getloadavg(),
    }
    threshold = None
    for half in ("calibration", "test"):
        items = build(
            args.out / half, half=half, seed=args.seed, per_condition=args.per_condition, long_files=args.long
        )
        files = [read_file(item, segmentation) for item in items]
        results[half] = half_results(files, threshold)
        threshold = results[half]["resegmentation_threshold_used"]
        for name in ("as_clustered", "changes_redrawn", "changes_redrawn_and_resegmented"):
            s = results[half][name]
            print(half, name, s["der"], s["worst_two_speaker_condition"], s["conditions"], flush=True)
    args.results.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
