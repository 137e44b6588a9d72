"""Why meetings come back as one or two speakers, and whether a sparser affinity graph for short
recordings counts them (issue 45): every file of ``sets.py``'s sets embedded once (the service's VAD
and CAM++ windows, cached), then clustered as the service clusters (``turns_from_embeddings``: no
closer look, no changes redrawn) with the spectral step's neighbour graph varied: the smallest
neighbour count (``MIN_NEIGHBOURS``, 10 shipped) and the share of neighbours tried for files of 40
windows or fewer (0.3 and 0.5 before 2026-11-28; the longer files' 0.05-0.3 grid otherwise). Its
results files were written before then: their "shipped" is the graph as it was ("neighbours 10").

    nice -n 10 .venv/bin/python bench/speakers/experiments/meeting/short_clusters.py /tmp/meet-full test
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.run import annotation  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import clustering  # noqa: E402
from transcription.pipeline.speakers.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.embedding import embed_regions  # noqa: E402
from transcription.pipeline.speakers.encoders import default_encoder  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402

SHIPPED_SPECTRAL = clustering._spectral  # noqa: SLF001  (the experiment swaps the service's own step)


def spectral(min_neighbours: int, wide: bool):
    def run(emb: np.ndarray, max_speakers: int) -> np.ndarray:
        n = len(emb)
        k_max = max(1, min(max_speakers, n - 1))
        tried = []
        grid = np.linspace(0.05, 0.3, 11) if (n > 40 or wide) else (0.3, 0.5)
        for p_keep in grid:
            keep = min(n - 1, max(2, int(round(p_keep * n)), min(min_neighbours, n // 4)))
            sim = emb @ emb.T
            idx = np.argpartition(-sim, min(keep, n - 1), axis=1)[:, :keep]
            a = np.zeros_like(sim)
            np.put_along_axis(a, idx, 1.0, axis=1)
            a = np.maximum(a, a.T)
            np.fill_diagonal(a, 1.0)
            vals = np.linalg.eigvalsh(clustering._laplacian(a))[: k_max + 1]  # noqa: SLF001
            gaps = np.diff(vals)
            k = int(np.argmax(gaps)) + 1
            tried.append((p_keep / max(gaps[k - 1], 1e-6), k, a))
        _, k, a = min(tried, key=lambda t: t[0])
        if k <= 1:
            return np.zeros(n, dtype=np.int64)
        _, vecs = np.linalg.eigh(clustering._laplacian(a))  # noqa: SLF001
        v = vecs[:, :k]
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        return clustering.kmeans(v, k)

    return run


def embedded(folder: Path, cache: Path) -> list[dict]:
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    encoder = default_encoder()
    out = []
    for wav in sorted(folder.glob("*.wav")):
        ref = [line.split() for line in wav.with_suffix(".rttm").read_text().splitlines()]
        with single_threaded_blas():
            activity = find_speech(wav)
            regions, extent = activity.for_diarization(), activity.for_turns()
            emb, windows, pieces = embed_regions(wav, regions, encoder)
        out.append(
            {
                "name": wav.stem,
                "turns": [(float(r[3]), float(r[3]) + float(r[4]), r[7]) for r in ref],
                "emb": emb,
                "windows": windows,
                "pieces": pieces,
                "extent": extent,
            }
        )
    cache.write_bytes(pickle.dumps(out))
    return out


def score(entries: list[dict], variant) -> dict:
    encoder = default_encoder()
    clustering._spectral = variant  # noqa: SLF001
    metric = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    exact, split, files = 0, 0, []
    for e in entries:
        with single_threaded_blas():
            turns = speakers.turns_from_embeddings(
                e["emb"],
                e["windows"],
                e["pieces"],
                e["extent"],
                merge_similarity=encoder.merge_similarity,
                small_split_similarity=encoder.small_split_similarity,
                between_similarity=encoder.between_similarity,
            )
        found, truth = len({t.speaker for t in turns}), len({w for _, _, w in e["turns"]})
        metric(annotation(e["turns"], e["name"]), annotation([(t.start, t.end, t.speaker) for t in turns], e["name"]))
        exact += found == truth
        split += truth == 1 and found > 1
        files.append((e["name"], truth, found))
    clustering._spectral = SHIPPED_SPECTRAL  # noqa: SLF001
    return {
        "der": round(abs(metric), 4),
        "count_exact": round(exact / len(entries), 3),
        "one_voice_split": split,
        "files": files,
    }


def main() -> None:
    root, half = Path(sys.argv[1]), sys.argv[2]
    sets = {
        "meeting": embedded(root / f"meeting-{half}", root / f"meeting-{half}.emb.pkl"),
        "two-voice": embedded(root / half, root / f"{half}.emb.pkl"),
    }
    results = {}
    for label, variant in [
        ("shipped", SHIPPED_SPECTRAL),
        *[
            (f"neighbours {m}{' wide' if wide else ''}", spectral(m, wide))
            for m in (10, 6, 4, 3)
            for wide in (False, True)
        ],
    ]:
        results[label] = {name: score(entries, variant) for name, entries in sets.items()}
        print(label, {n: {k: v for k, v in r.items() if k != "files"} for n, r in results[label].items()}, flush=True)
    (Path(__file__).parent / f"results-short-clusters-{half}.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
