"""How local speakers are read (``speakers.local.LocalReading``) on the recordings the service gives
them to (the model hears two voices at once in 8% of the speech or more): swept on the calibration
half's meetings and the two-voice-set files it chooses, every model run once per file.

    nice .venv/bin/python bench/speakers/experiments/meeting/reading_sweep.py DIR   # DIR: WAV + RTTM pairs
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.readings import overlap_frames  # noqa: E402
from bench.speakers.run import annotation  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import closer, local  # noqa: E402
from transcription.pipeline.speakers.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.changes import redraw_changes  # noqa: E402
from transcription.pipeline.speakers.closer import closer_turns, turn_centroids, unsure_spans  # noqa: E402
from transcription.pipeline.speakers.embedding import embed_regions  # noqa: E402
from transcription.pipeline.speakers.encoders import default_encoder  # noqa: E402
from transcription.pipeline.speakers.segmentation import default_segmentation  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402

READINGS = [None] + [
    local.LocalReading(margin=m, slack=s, agree=a)
    for m, s, a in itertools.product((0.05, 0.1, 0.2, 0.3), (None, 0.1, 0.3), ("all", "overlapping", "any"))
]


def reference(rttm: Path) -> list[tuple[float, float, str]]:
    out = []
    for line in rttm.read_text().splitlines():
        f = line.split()
        out.append((float(f[3]), float(f[3]) + float(f[4]), f[7]))
    return out


def main() -> None:
    folder = Path(sys.argv[1])
    encoder = default_encoder()
    segmentation = default_segmentation()
    assert segmentation is not None
    totals: dict[str, dict[str, dict[str, float]]] = {}
    for wav in sorted(folder.glob("*.wav")):
        ref = reference(wav.with_suffix(".rttm"))
        kind = "meeting" if wav.stem.startswith("meeting") else "two-voice"
        with single_threaded_blas():
            activity = find_speech(wav)
            regions, extent = activity.for_diarization(), activity.for_turns()
            emb, windows, pieces = embed_regions(wav, regions, encoder)
            turns = speakers.turns_from_embeddings(
                emb,
                windows,
                pieces,
                extent,
                merge_similarity=encoder.merge_similarity,
                small_split_similarity=encoder.small_split_similarity,
                between_similarity=encoder.between_similarity,
            )
            speaking = segmentation.activity_of_wav(wav)
            if len({t.speaker for t in turns}) >= 2:
                centres = turn_centroids(emb, windows, turns)
                short_emb, short_windows, _ = embed_regions(
                    wav, regions, encoder, size=closer.SIZE_FRAMES, hop=closer.HOP_FRAMES,
                    only=unsure_spans(emb, windows, centres),
                )  # fmt: skip
                turns = closer_turns(turns, centres, emb, windows, pieces, short_emb, short_windows, extent)
                found = local.local_speakers(wav, speaking, encoder)
                redrawn = redraw_changes(turns, speaking)
                centres = turn_centroids(emb, windows, turns)
        for reading in READINGS:
            if len({t.speaker for t in turns}) < 2:
                out = turns
            else:
                out = redrawn if reading is None else local.local_turns(redrawn, centres, found, extent, reading)
            detail = DiarizationErrorRate(collar=0.25, skip_overlap=False)(
                annotation(ref, wav.stem),
                annotation([(t.start, t.end, t.speaker) for t in out], wav.stem),
                detailed=True,
            )
            o = overlap_frames(ref, out)
            t = totals.setdefault(str(reading), {}).setdefault(kind, {})
            for k in ("total", "missed detection", "false alarm", "confusion"):
                t[k] = t.get(k, 0.0) + float(detail[k])
            for k, v in o.items():
                t[k] = t.get(k, 0.0) + v
        print(wav.stem, flush=True)
    for name, kinds in totals.items():
        line = []
        for kind, t in kinds.items():
            der = (t["missed detection"] + t["false alarm"] + t["confusion"]) / t["total"]
            line.append(
                f"{kind} {100 * der:.2f}% two {100 * t['given_two'] / max(1, t['ref_overlap']):.0f}% "
                f"none {100 * t['false_two'] / max(1, t['ref_single']):.1f}%"
            )
        print(name, " | ".join(line), flush=True)


if __name__ == "__main__":
    main()
