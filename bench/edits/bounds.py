"""bench/edits/bounds.py: how long one PATCH of a 3-hour transcript can take now that a save and a
document are bounded (issue 56, item 4: a 12 s job had grown to 96,000 words, each PATCH then a
minute of a web worker's CPU). Through Django's test client (the REST door, the front door,
PostgreSQL, Redis), on the same job, three kinds of save:

  one cue:   one segment's text, the render kept from the previous save (what an editor sends)
  largest:   the largest save the bounds let through (EDITS_PER_SAVE edits, EDITS_MAX_BYTES of
             them), spread from the first segment to the last, so that the whole transcript is
             made again
  at bound:  the largest save on the same job's document grown to its words bound
             (TRANSCRIPT_WORDS_PER_SECOND x its duration): the most work one PATCH can cause

    DATABASE_URL=postgres://root@127.0.0.1:5432/SCRATCH REDIS_URL=redis://127.0.0.1:6379/N \\
      .venv/bin/python bench/edits/bounds.py [--hours 3] [--rounds 5]

It migrates the database named and leaves an account and a job in it: give it a scratch database.
Writes bench/edits/results-bounds.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.edits.patch import setup  # noqa: E402  (sets the environment Django reads)
from bench.edits.run import p50_p95  # noqa: E402


def largest_save(document: list[dict], rng: random.Random, edits: int, max_bytes: int) -> list[dict]:
    """Text edits of segments from the first to the last, as many as the bounds allow, each the
    segment's text with a word's case changed (the document neither grows nor shrinks)."""
    step = max(1, len(document) // edits)
    out: list[dict] = []
    for index in range(0, len(document), step)[:edits]:
        words = document[index]["text"].split()
        at = rng.randrange(len(words))  # a word changed for one as long: the text keeps its length
        words[at] = words[at].upper() if words[at] != words[at].upper() else words[at].lower()
        out.append({"op": "text", "index": index, "text": " ".join(words)})
        if len(json.dumps(out, ensure_ascii=False).encode()) > max_bytes:
            out.pop()
            break
    return out


def largest_prefix(edits: list[dict], count: int, max_bytes: int) -> int:
    """How many of `edits`, from the first, one save may hold."""
    size, n = 2, 0
    for edit in edits[:count]:
        size += len(json.dumps(edit, ensure_ascii=False).encode()) + 1
        if size > max_bytes:
            break
        n += 1
    return n


def grown(document: list[dict], words: int) -> list[dict]:
    """Text edits that bring the document to `words` words, segment by segment (each text at most
    the 500 characters an edit may hold)."""
    have = sum(len(s["words"]) for s in document)
    out = []
    for index, segment in enumerate(document):
        if have >= words:
            break
        tokens = segment["text"].split()
        if len(segment["text"]) > 495:
            continue
        while have < words and len(" ".join(tokens + ["more"])) <= 500:
            tokens.append("more")
            have += 1
        out.append({"op": "text", "index": index, "text": " ".join(tokens)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", type=Path, default=ROOT / "bench/edits/results-bounds.json")
    args = parser.parse_args()
    client, job, document = setup(args.hours)
    from django.conf import settings

    url = f"/v1/api/transcription/{job.id}/segments"
    etag = client.get(url)["ETag"]
    rng = random.Random(3)

    def save(edits: list[dict]) -> float:
        nonlocal etag, document
        body = json.dumps({"edits": edits})
        began = time.perf_counter()
        response = client.patch(url, data=body, content_type="application/json", HTTP_IF_MATCH=etag)
        took = (time.perf_counter() - began) * 1000
        assert response.status_code == 200, response.content[:500]
        etag, document = response["ETag"], json.loads(response.content)["segments"]
        return took

    def one_cue() -> list[dict]:
        index = rng.randrange(len(document))
        return [{"op": "text", "index": index, "text": document[index]["text"] + " again"}]

    def largest() -> list[dict]:
        return largest_save(document, rng, settings.EDITS_PER_SAVE, settings.EDITS_MAX_BYTES)

    save(one_cue())  # the first save renders whole and keeps the render the next ones start from
    times: dict[str, list[float]] = {"one cue": [], "largest": [], "at bound": []}
    sizes: dict[str, dict] = {}
    for _ in range(args.rounds):
        times["one cue"].append(save(one_cue()))
        edits = largest()
        sizes["largest"] = {"edits": len(edits), "bytes": len(json.dumps(edits).encode())}
        times["largest"].append(save(edits))
    before = {"segments": len(document), "words": sum(len(s["words"]) for s in document)}

    bound = int(float(job.duration) * settings.TRANSCRIPT_WORDS_PER_SECOND)
    growth = grown(document, bound)
    while growth:  # in saves the bounds allow
        chunk = largest_prefix(growth, settings.EDITS_PER_SAVE, settings.EDITS_MAX_BYTES)
        save(growth[:chunk])
        growth = growth[chunk:]
    at_bound = {"segments": len(document), "words": sum(len(s["words"]) for s in document)}
    short = next(index for index, segment in enumerate(document) if len(segment["text"]) < 480)
    refused = client.patch(
        url,
        data=json.dumps({"edits": [{"op": "text", "index": short, "text": document[short]["text"] + " one more"}]}),
        content_type="application/json",
        HTTP_IF_MATCH=etag,
    )
    for _ in range(args.rounds):
        edits = largest()
        sizes["at bound"] = {"edits": len(edits), "bytes": len(json.dumps(edits).encode())}
        times["at bound"].append(save(edits))

    results = {
        "hours": args.hours,
        "document": before,
        "grown_to_its_bound": at_bound,
        "a_word_past_the_bound": {"status": refused.status_code, "detail": refused.json()["detail"][0]["msg"]},
        "bounds": {
            name: getattr(settings, name)
            for name in (
                "TRANSCRIPT_WORDS_PER_SECOND",
                "TRANSCRIPT_CHARS_PER_SECOND",
                "TRANSCRIPT_MIN_WORDS",
                "TRANSCRIPT_MIN_CHARS",
                "EDITS_PER_SAVE",
                "EDITS_MAX_BYTES",
            )
        },
        "saves": sizes,
        "rounds_each": args.rounds,
        "patch_ms": {kind: p50_p95(values) for kind, values in times.items()},
        "patch_ms_max": {kind: round(max(values), 1) for kind, values in times.items()},
        "cpu_count": os.cpu_count(),
        "load_average_1_5_15": [round(x, 1) for x in os.getloadavg()],  # a shared machine: the others' load
    }
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
