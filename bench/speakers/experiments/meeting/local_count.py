"""How many voices a recording holds, counted from the segmentation model's local speakers (issue 45,
item 3): each 10 s window's local speakers embedded from their own frames (the others' masked
out), then clustered together by average-linkage agglomeration at a cosine threshold, pyannote-style,
instead of one 1.5 s CAM++ window (which mixes two voices where people overlap) per row.

Per file it writes the service's count, the reference count, the local speakers' embeddings with the
reference speaker each mostly covers (an oracle label), so thresholds are swept offline:

    nice .venv/bin/python bench/speakers/experiments/meeting/local_count.py --half calibration --out /tmp/x.pkl
    nice .venv/bin/python bench/speakers/experiments/meeting/local_count.py --sweep /tmp/x.pkl
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

from bench.speakers.dataset import build  # noqa: E402
from bench.speakers.meeting import build_meeting  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import local  # noqa: E402
from transcription.pipeline.speakers.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.embedding import embed_regions  # noqa: E402
from transcription.pipeline.speakers.encoders import default_encoder  # noqa: E402
from transcription.pipeline.speakers.segmentation import default_segmentation  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402

STEP = local.FRAME_STEP_S
FIRST = local.FIRST_FRAME_S


def gather(items, encoder) -> list[dict]:
    segmentation = default_segmentation()
    assert segmentation is not None
    out = []
    for item in items:
        with single_threaded_blas():
            activity = find_speech(item.wav)
            regions, extent = activity.for_diarization(), activity.for_turns()
            emb, windows, pieces = embed_regions(item.wav, regions, encoder)
            turns = speakers.turns_from_embeddings(
                emb,
                windows,
                pieces,
                extent,
                merge_similarity=encoder.merge_similarity,
                small_split_similarity=encoder.small_split_similarity,
                between_similarity=encoder.between_similarity,
            )
            speaking = segmentation.activity_of_wav(item.wav)
            loc = local.local_speakers(item.wav, speaking, encoder, everywhere=True)
        rows, oracle, clean = [], [], []
        for w, first in enumerate(loc.first_frames):
            times = FIRST + (first + np.arange(loc.talking.shape[1])) * STEP
            for j in range(3):
                e = loc.embeddings[w, j]
                if not e.any():
                    continue
                on = loc.talking[w, :, j]
                cover: dict[str, float] = {}
                for s, t, who in item.turns:
                    cover[who] = cover.get(who, 0.0) + float(((times >= s) & (times < t) & on).sum())
                rows.append(e)
                oracle.append(max(cover, key=lambda who: cover[who]) if cover and max(cover.values()) > 0 else "")
                clean.append(float(loc.clean_s[w, j]))
        out.append(
            {
                "file": item.name,
                "condition": item.condition,
                "speakers": item.speakers,
                "service": len({t.speaker for t in turns}),
                "emb": np.array(rows),
                "oracle": oracle,
                "clean_s": np.array(clean),
            }
        )
        print(item.name, item.speakers, out[-1]["service"], len(rows), flush=True)
    return out


def ahc_count(emb: np.ndarray, threshold: float) -> int:
    """Average-linkage agglomeration by cosine similarity, stopped below ``threshold``."""
    if len(emb) == 0:
        return 1
    clusters = [[i] for i in range(len(emb))]
    sim = emb @ emb.T
    while len(clusters) > 1:
        best, pair = -np.inf, (0, 1)
        for a in range(len(clusters)):
            for b in range(a + 1, len(clusters)):
                s = float(sim[np.ix_(clusters[a], clusters[b])].mean())
                if s > best:
                    best, pair = s, (a, b)
        if best < threshold:
            break
        a, b = pair
        clusters[a] += clusters.pop(b)
    return len(clusters)


def sweep(data: list[dict]) -> None:
    same: list[float] = []
    diff: list[float] = []
    for d in data:
        e, o = d["emb"], d["oracle"]
        if len(e) < 2:
            continue
        s = e @ e.T
        for i in range(len(e)):
            for j in range(i + 1, len(e)):
                (same if o[i] == o[j] else diff).append(s[i, j])
    print(
        f"pairs same {len(same)} mean {np.mean(same):.3f} p10 {np.percentile(same, 10):.3f} | "
        f"different {len(diff)} mean {np.mean(diff):.3f} p90 {np.percentile(diff, 90):.3f}"
    )

    print(
        "service: exact {:.2f} within one {:.2f}".format(
            np.mean([d["service"] == d["speakers"] for d in data]),
            np.mean([abs(d["service"] - d["speakers"]) <= 1 for d in data]),
        )
    )
    for min_clean in (0.0, 0.5, 1.0):
        for threshold in (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7):
            counts = []
            for d in data:
                keep = d["clean_s"] >= min_clean
                counts.append(ahc_count(d["emb"][keep], threshold))
            exact = np.mean([c == d["speakers"] for c, d in zip(counts, data)])
            within = np.mean([abs(c - d["speakers"]) <= 1 for c, d in zip(counts, data)])
            print(
                f"clean>={min_clean} thr {threshold}: exact {exact:.2f} within one {within:.2f} counts "
                + " ".join(f"{d['speakers']}:{c}" for c, d in zip(counts, data))
            )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--half", default="calibration")
    p.add_argument("--out", type=Path)
    p.add_argument("--sweep", type=Path)
    p.add_argument("--two-voice", type=int, default=0, help="two-voice files per condition too")
    args = p.parse_args()
    if args.sweep:
        sweep(pickle.loads(args.sweep.read_bytes()))
        return
    base = Path("/tmp/overlap-count")
    items: list = list(build_meeting(base / f"meeting-{args.half}", half=args.half, seed=12, files=16))
    if args.two_voice:
        items += build(base / args.half, half=args.half, seed=12, per_condition=args.two_voice, long_files=0)
    data = gather(items, default_encoder())
    args.out.write_bytes(pickle.dumps(data))
    sweep([d for d in data if d["condition"] == "meeting"])


if __name__ == "__main__":
    main()
