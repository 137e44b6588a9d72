"""How much room the merge threshold has on a phone line: one voice must stay one speaker, two must
stay two.

The set's telephone condition holds two-voice calls only; nothing in it checks that one voice on a
phone line (a voicemail, a dictation by phone) is not split. Here every one-voice file of the set
(monologue, lecture, voice over music; calibration seeds 12 and 14, test seed 12) is passed through
the set's own telephone channel (300-3400 Hz, 8 kHz, mu-law: ``dataset.telephone``), read as the
service reads it (Silero, CAM++ windows), and clustered at each merge threshold; the set's
two-voice calls are clustered at the same thresholds from the cache ``compare_models.py`` leaves.
Reported per threshold: the one-voice files split, the calls taken for one speaker.

    nice -n 10 .venv/bin/python bench/speakers/phone_line.py --per-condition 5   # after compare_models.py --per-condition 5
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.speakers.compare_models import CALIBRATION_SEEDS  # noqa: E402
from bench.speakers.dataset import telephone  # noqa: E402
from bench.speakers.embedded import embedded_runs  # noqa: E402
from bench.speakers.recorded_voices import read_wav  # noqa: E402
from harness import speaker_audio as sa  # noqa: E402
from harness.resemblyzer_encoder import DEFAULT_ENCODER  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers.encoding.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.encoding.embedding import embed_regions  # noqa: E402
from transcription.pipeline.speakers.encoding.encoders import default_encoder  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402

HERE = Path(__file__).resolve().parent
MERGES = [0.6, 0.625, 0.65, 0.675, 0.7, 0.725, 0.75, 0.775, 0.8, 0.85]


def _speakers_found(emb: np.ndarray, windows: list, pieces: list, extent: list, merge: float) -> int:
    encoder = default_encoder()
    with single_threaded_blas():
        turns = speakers.turns_from_embeddings(
            emb,
            windows,
            pieces,
            extent,
            merge_similarity=merge,
            small_split_similarity=encoder.small_split_similarity,
            between_similarity=encoder.between_similarity,
        )
    return len({t.speaker for t in turns})


def _on_the_phone(entry: dict, work: Path) -> tuple[np.ndarray, list, list, list]:
    """A one-voice file through the telephone channel, embedded as the service embeds it."""
    wav = work / f"{entry['item'].name}-phone.wav"
    if not wav.exists():
        sa.write_wav(wav, telephone(read_wav(entry["item"].wav), work))
    activity = find_speech(wav)
    with single_threaded_blas():
        emb, windows, pieces = embed_regions(wav, activity.for_diarization(), default_encoder())
    return emb, windows, pieces, activity.for_turns()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--per-condition", type=int, default=6)  # as compare_models.py
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-speakers"))
    parser.add_argument("--results", type=Path, default=HERE / "results-phone-line.json")
    args = parser.parse_args()
    shipped = default_encoder().merge_similarity
    results: dict = {"merges": MERGES, "shipped_merge": shipped}
    for half in ("calibration", "test"):
        results[half] = {"one_voice_split": {str(m): [] for m in MERGES}, "calls_merged": {str(m): [] for m in MERGES}}
    runs = embedded_runs(
        args.out, seed=args.seed, calibration_seeds=CALIBRATION_SEEDS, per_condition=args.per_condition, long_files=1
    )
    for half, folder, entries in runs:
        work = folder / "phone-line"
        work.mkdir(exist_ok=True)
        for entry in entries:
            name, condition = entry["item"].name, entry["item"].condition
            if condition == "one-voice":
                found = [_speakers_found(*_on_the_phone(entry, work), m) for m in MERGES]
                key = "one_voice_split"
            elif condition == "telephone-close-pitch":
                emb, windows, pieces = (entry[k][DEFAULT_ENCODER] for k in ("emb", "windows", "pieces"))
                found = [_speakers_found(emb, windows, pieces, entry["extent"], m) for m in MERGES]
                key = "calls_merged"
            else:
                continue
            print(half, name, found, flush=True)
            for m, n in zip(MERGES, found, strict=True):
                if (key == "one_voice_split" and n > 1) or (key == "calls_merged" and n < 2):
                    results[half][key][str(m)].append(name)
    for half in ("calibration", "test"):
        split, merged = results[half]["one_voice_split"], results[half]["calls_merged"]
        print(half, "merge: one voice split / calls merged")
        for m in MERGES:
            print(f"  {m}: {len(split[str(m)])} / {len(merged[str(m)])}")
    args.results.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
