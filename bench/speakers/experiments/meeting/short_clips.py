"""Short clips (20-40 windows: 15-30 s of speech), which neither the two-voice set nor the meeting
set holds outside meetings: every two-voice-set file's first N windows clustered with the spectral
graph as it was before 2026-11-28 (dense only), with the wide grid of ``short_clusters.py`` (at
least 10 neighbours, shares 0.05-0.3 tried for short files too), and as shipped (the wide grid where
it hears three voices or more). Reported: speaker count exact (the voices talking 1 s or more
in the clip's span) and one-voice clips split. Reads the embeddings ``short_clusters.py`` cached.

    nice -n 10 .venv/bin/python bench/speakers/experiments/meeting/short_clips.py /tmp/meet-full
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
sys.path.insert(0, str(HERE))

from short_clusters import SHIPPED_SPECTRAL, spectral  # noqa: E402

from transcription.pipeline.speakers import clustering  # noqa: E402
from transcription.pipeline.speakers.encoders import default_encoder  # noqa: E402

SIZES = (20, 24, 28, 32, 36, 40)


def found(emb: np.ndarray, weights: np.ndarray) -> int:
    encoder = default_encoder()
    labels = clustering.cluster_embeddings(
        emb,
        weights=weights,
        merge_similarity=encoder.merge_similarity,
        small_split_similarity=encoder.small_split_similarity,
        between_similarity=encoder.between_similarity,
    )
    return int(labels.max()) + 1


def main() -> None:
    root = Path(sys.argv[1])
    results = {}
    for half in ("calibration", "test"):
        entries = pickle.loads((root / f"{half}.emb.pkl").read_bytes())
        for label, variant in (
            ("before", spectral(10, False)),  # the graph before 2026-11-28: dense only for short files
            ("wide", spectral(10, True)),
            ("shipped", SHIPPED_SPECTRAL),  # wide where it hears three voices or more
        ):
            clustering._spectral = variant  # noqa: SLF001  (the experiment swaps the service's step)
            exact = total = split = one_voice = 0
            for e in entries:
                for n in SIZES:
                    if len(e["windows"]) < n + 5:
                        continue
                    emb = np.where(np.isfinite(e["emb"][:n]), e["emb"][:n], 0.0).astype(np.float64)
                    weights = np.array([w.own_end - w.own_start for w in e["windows"][:n]])
                    end = e["windows"][n - 1].own_end
                    said: dict[str, float] = {}
                    for s, t, who in e["turns"]:
                        said[who] = said.get(who, 0.0) + max(0.0, min(t, end) - s)
                    truth = sum(v >= 1.0 for v in said.values())
                    got = found(emb, weights)
                    total += 1
                    exact += got == truth
                    one_voice += truth == 1
                    split += truth == 1 and got > 1
            results[f"{half} {label}"] = {
                "clips": total,
                "count_exact": round(exact / total, 3),
                "one_voice": one_voice,
                "one_voice_split": split,
            }
            print(half, label, results[f"{half} {label}"], flush=True)
    clustering._spectral = SHIPPED_SPECTRAL  # noqa: SLF001
    (HERE / "results-short-clips.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
