"""Does the first look (every other window of the grid) ever hear one voice where the whole grid
hears more? For every file of a half, at any length (the service tries it only from
embedding.FIRST_LOOK_MIN_SPEECH_S of speech): the speakers clustering finds on the whole grid and on
the first look's windows, and whether one voice's turns are the same either way.

    nice -n 10 .venv/bin/python bench/speakers/experiments/speed/first_look.py /tmp/speed/data test > first-look-test.jsonl

(the folder an earlier ``speed.py --out`` built)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from bench.speakers.speed import items_in  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers.embedding import FIRST_LOOK_STRIDE, embed_regions  # noqa: E402
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402


def main() -> None:
    folder, half = Path(sys.argv[1]), sys.argv[2]
    enc = speakers.default_encoder()

    def clustered(emb, windows, pieces, extent):
        return speakers.turns_from_embeddings(
            emb,
            windows,
            pieces,
            extent,
            merge_similarity=enc.merge_similarity,
            small_split_similarity=enc.small_split_similarity,
            between_similarity=enc.between_similarity,
        )

    for item in items_in(folder / half) + items_in(folder / f"meeting-{half}"):
        act = find_speech(item.wav)
        regions, extent = act.for_diarization(), act.for_turns()
        if not regions:
            continue
        emb, windows, pieces = embed_regions(item.wav, regions, enc)
        whole = clustered(emb, windows, pieces, extent)
        first_emb, first_windows, _ = embed_regions(item.wav, regions, enc, stride=FIRST_LOOK_STRIDE)
        first = clustered(first_emb, first_windows, pieces, extent)
        found_whole, found_first = len({t.speaker for t in whole}), len({t.speaker for t in first})
        row = {
            "file": item.name,
            "speakers": item.speakers,
            "speech_s": round(sum(e - s for s, e in regions), 1),
            "whole": found_whole,
            "first_look": found_first,
            "whole_windows": len(windows),
            "first_look_windows": len(first_windows),
            "one_voice_turns_same": found_whole == found_first == 1 and whole == first,
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
