"""How often an enrolled voice names the right speaker, and how often a name goes to the wrong one.

The account enrols every voice of a pool but one (the stranger); every pair of the pool's voices
talks in a conversation made of other lines than the samples'; the service's own diarization finds
the speakers, and each speaker is named as the speech stage names them
(``voices.recognise_voices``: its longest turns embedded, matched against the samples'
embeddings). Each stranger of the pool in turn, so every voice is scored enrolled and not.

- right: a speaker whose voice is enrolled, given its name (the share of such speakers);
- wrong: a speaker given a name that is not its voice's (an enrolled voice named as another, or the
  stranger named at all), over every speaker.

A speaker's voice is the reference voice it shares the most time with. Voices are split in two
halves by name: the threshold is chosen on the calibration half (the lowest whose wrong-name rate
is at most half the 1% target there), and the figures reported on the test half, which the choice
never saw.

Voices: Debian's real recordings, each a voice (one actor, one studio): the four voice actors of
``fillets-ng-data-nl``/``-cs``, and the prompt voices of ``asterisk-core-sounds-{en,es,fr,it,ru}-wav``
(Allison's English and Spanish prompts are one voice).

    nice -n 10 .venv/bin/python bench/speakers/names.py [--seeds 2] [--results bench/speakers/results-names.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.pipeline import speaker_audio as sa  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import voices  # noqa: E402
from transcription.pipeline.speakers.voices import match_voices, speaker_regions  # noqa: E402

ASTERISK = Path("/usr/share/asterisk/sounds")
TARGET_WRONG = 0.01
TARGET_RIGHT = 0.90


def voice_pool() -> dict[str, list[Path]]:
    pool = {f"fillets-{lang}-{who}": sa.clips(lang, who) for lang in ("nl", "cs") for who in ("m", "v")}
    for folder, name in (
        (["en_US_f_Allison", "es_MX_f_Allison"], "asterisk-allison"),
        (["fr_CA_f_June"], "asterisk-june"),
        (["it_IT_m_Carlo"], "asterisk-carlo"),
        (["ru_RU_f_IvrvoiceRU"], "asterisk-ru"),
    ):
        paths = sorted(p for f in folder for p in (ASTERISK / f).rglob("*.wav"))
        if len(paths) >= 60:
            pool[name] = paths
    return {name: paths for name, paths in pool.items() if len(paths) >= 60}


def halves(names: list[str]) -> tuple[list[str], list[str]]:
    ordered = sorted(names)
    return ordered[0::2], ordered[1::2]


def embed_recording(path: Path, turns=None) -> dict[int, np.ndarray]:
    turns = turns if turns is not None else speakers.diarize(path)
    out = {}
    for speaker, regions in speaker_regions(turns).items():
        embedding = voices.embed_speech(path, regions)
        if embedding is not None:
            out[speaker] = embedding
    return out, turns


def majority(turns, reference, speaker: int) -> str:
    heard: dict[str, float] = {}
    for t in turns:
        if t.speaker != speaker:
            continue
        for s, e, who in reference:
            heard[who] = heard.get(who, 0.0) + max(0.0, min(e, t.end) - max(s, t.start))
    return max(heard, key=heard.get)


def measure(pool: list[str], paths: dict[str, list[Path]], work: Path, seeds: int) -> list[dict]:
    """Per conversation speaker: its voice and similarity to every enrolled sample."""
    cache = work / "cache"
    samples = {}
    for name in pool:
        fixture = sa.conversation(work / f"sample-{name}.wav", {name: paths[name][0::2]}, n_clips=10, cache=cache)
        activity = speakers.speech.find_speech(fixture.path)
        samples[name] = voices.embed_speech(fixture.path, activity.for_diarization())
    rows = []
    for seed in range(seeds):
        for a, b in itertools.combinations(pool, 2):
            fixture = sa.conversation(
                work / f"talk-{seed}-{a}-{b}.wav",
                {a: paths[a][1::2], b: paths[b][1::2]},
                n_clips=12,
                cache=cache,
                seed=100 + seed,
                order="random",
            )
            embeddings, turns = embed_recording(fixture.path)
            for speaker, embedding in embeddings.items():
                rows.append(
                    {
                        "file": fixture.path.name,
                        "speaker": speaker,
                        "voice": majority(turns, fixture.turns, speaker),
                        "similarity": {name: float(np.dot(embedding, sample)) for name, sample in samples.items()},
                        "embedding": embedding,
                    }
                )
    return rows, samples


def score(rows: list[dict], samples: dict[str, np.ndarray], threshold: float) -> dict:
    right = enrolled = wrong = total = 0
    for stranger in samples:
        enrolled_voices = [(name, vector) for name, vector in samples.items() if name != stranger]
        by_file: dict[str, list[dict]] = {}
        for row in rows:
            by_file.setdefault(row["file"], []).append(row)
        for file_rows in by_file.values():
            named = match_voices({r["speaker"]: r["embedding"] for r in file_rows}, enrolled_voices, threshold)
            for row in file_rows:
                total += 1
                name = named.get(row["speaker"])
                if row["voice"] != stranger:
                    enrolled += 1
                    right += name == row["voice"]
                wrong += name is not None and name != row["voice"]
    return {
        "threshold": round(threshold, 3),
        "speakers": total,
        "right": right / max(enrolled, 1),
        "wrong": wrong / max(total, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-names"))
    parser.add_argument("--results", type=Path, default=ROOT / "bench/speakers/results-names.json")
    args = parser.parse_args()
    paths = voice_pool()
    calibration, test = halves(list(paths))
    started = time.process_time()
    results = {"encoder": voices.VOICE_PRINT_MODEL, "calibration_voices": calibration, "test_voices": test}
    grid = np.arange(0.50, 0.96, 0.01)
    measured = {}
    for label, pool in (("calibration", calibration), ("test", test)):
        rows, samples = measure(pool, paths, args.work / label, args.seeds)
        measured[label] = (rows, samples)
    rows, samples = measured["calibration"]
    curve = [score(rows, samples, t) for t in grid]
    chosen = next(point for point in curve if point["wrong"] <= TARGET_WRONG / 2)
    results["calibration"] = chosen
    results["calibration_curve"] = curve
    rows, samples = measured["test"]
    results["test"] = score(rows, samples, chosen["threshold"])
    results["test_at_service_threshold"] = score(rows, samples, voices.MATCH_SIMILARITY)
    same = [r["similarity"][r["voice"]] for r in rows if r["voice"] in r["similarity"]]
    other = [s for r in rows for name, s in r["similarity"].items() if name != r["voice"]]
    results["test_similarity"] = {
        "same_voice": {"min": min(same), "median": float(np.median(same))},
        "other_voice": {"max": max(other), "median": float(np.median(other))},
    }
    results["cpu_s"] = round(time.process_time() - started, 1)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k != "calibration_curve"}, indent=2))


if __name__ == "__main__":
    main()
