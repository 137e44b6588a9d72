"""How often an enrolled voice names the right speaker, and how often a name goes to the wrong one.

The voices and their calibration/test halves are the diarization bench's (``dataset.VOICES``: real
recordings of Debian's voice actors, prompt voices and Festival's recorded speakers). In each
half, the account enrols every voice but one (the stranger) from a sample of 25-40 s of its lines;
every pair of the half's voices talks (12 lines, from the other half of each voice's lines than
its sample's, each voice's long-term spectrum equalised to the file's average as the bench does,
so the session's colouring differs between sample and talk); the service's own diarization finds
the speakers and each is named as the speech stage names them (``speakers.voices``: the longest
60 s of its turns printed and matched). Each voice is the stranger in turn.

- right: a speaker whose voice is enrolled, given its name (a share of such speakers);
- wrong: a speaker given a name that is not its voice's (an enrolled voice named as another, or
  the stranger named at all), a share of every speaker.

A speaker's voice is the reference voice it shares the most time with. The threshold is chosen on
the calibration half, in the middle of the range where both targets hold there with room to spare
(wrong names at most half the 1% target, right names at least 95%), not at its edge: the test half,
which the choice never saw, then has room on both sides. Its figures are reported at that
threshold, with the whole curve of both halves in the results.

    nice -n 10 .venv/bin/python bench/speakers/names.py [--seeds 2] [--results bench/speakers/results-names.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness import speaker_audio as sa  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import voices  # noqa: E402
from transcription.pipeline.speakers.voices import match_voices, speaker_regions  # noqa: E402

TARGET_WRONG = 0.01
TARGET_RIGHT = 0.90
SAMPLE_SECONDS = 25.0
TALK_LINES = 12
MIN_LINES = 10  # a voice needs lines for a sample and for talks that share none of them


def load_dataset(path: Path | None):
    if path is None:
        from bench.speakers import dataset

        return dataset
    spec = importlib.util.spec_from_file_location("names_bench_dataset", path)
    assert spec and spec.loader, f"{path} is no Python module"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class Lines:
    """A voice's lines split in two: the sample draws from one part, the talks from the other."""

    def __init__(self, ds, cache: Path):
        self.ds = ds
        self.voices = ds.Voices(cache)
        self.all = {name: list(paths) for name, paths in self.voices.paths.items()}

    def use(self, name: str, part: int) -> None:
        self.voices.paths[name] = self.all[name][part::2]


def sample(lines: Lines, name: str, rng: random.Random, out: Path) -> Path:
    lines.use(name, 0)
    placed, at = [], 0.5
    used: set[tuple[str, Path]] = set()
    while at < SAMPLE_SECONDS:
        x = lines.voices.line(name, rng, used, 0.8, 12.0)
        placed.append((at, x, name))
        at += len(x) / sa.SR + rng.uniform(0.3, 0.9)
    placed = lines.ds.equalise(placed, narrowband=lines.voices.narrowband(name))
    audio, _ = lines.ds.mix(placed)
    sa.write_wav(out, audio)
    return out


def talk(lines: Lines, a: str, b: str, rng: random.Random, out: Path):
    for name in (a, b):
        lines.use(name, 1)
    placed = lines.ds.dialogue(lines.voices, [a, b], rng, lines=TALK_LINES)
    narrow = lines.voices.narrowband(a) or lines.voices.narrowband(b)
    audio, reference = lines.ds.mix(lines.ds.equalise(placed, narrowband=narrow))
    sa.write_wav(out, audio)
    return out, reference


def majority(turns, reference, speaker: int) -> str:
    heard: dict[str, float] = {}
    for t in turns:
        if t.speaker == speaker:
            for s, e, who in reference:
                heard[who] = heard.get(who, 0.0) + max(0.0, min(e, t.end) - max(s, t.start))
    return max(heard, key=lambda who: heard[who])


def measure(lines: Lines, pool: list[str], work: Path, seeds: int) -> tuple[list[dict], dict[str, np.ndarray]]:
    work.mkdir(parents=True, exist_ok=True)
    samples = {}
    for name in pool:
        path = sample(lines, name, random.Random(f"sample-{name}"), work / f"sample-{name}.wav")
        activity = speakers.speech.find_speech(path)
        samples[name] = speakers.voice_print(path, activity.for_diarization())
    rows = []
    for seed in range(seeds):
        for a, b in itertools.combinations(pool, 2):
            path, reference = talk(
                lines, a, b, random.Random(f"talk-{seed}-{a}-{b}"), work / f"talk-{seed}-{a}-{b}.wav"
            )
            turns = speakers.diarize(path)
            for speaker, regions in speaker_regions(turns).items():
                embedding = voices.embed_speech(path, regions)
                if embedding is not None:
                    rows.append(
                        {
                            "file": path.name,
                            "speaker": speaker,
                            "voice": majority(turns, reference, speaker),
                            "embedding": embedding,
                        }
                    )
    return rows, samples


def score(rows: list[dict], samples: dict[str, np.ndarray], threshold: float) -> dict:
    right = enrolled = wrong = total = 0
    by_file: dict[str, list[dict]] = {}
    for row in rows:
        by_file.setdefault(row["file"], []).append(row)
    for stranger in samples:
        enrolled_voices = [(name, vector) for name, vector in samples.items() if name != stranger]
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
        "threshold": round(float(threshold), 3),
        "speakers": total,
        "right": round(right / max(enrolled, 1), 4),
        "wrong": round(wrong / max(total, 1), 4),
    }


def similarities(rows: list[dict], samples: dict[str, np.ndarray]) -> dict:
    same = [float(np.dot(r["embedding"], samples[r["voice"]])) for r in rows]
    other = [float(np.dot(r["embedding"], v)) for r in rows for name, v in samples.items() if name != r["voice"]]
    return {
        "same_voice": {"min": round(min(same), 3), "p05": round(float(np.percentile(same, 5)), 3)},
        "other_voice": {"max": round(max(other), 3), "p99": round(float(np.percentile(other, 99)), 3)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-names"))
    parser.add_argument("--dataset", type=Path, default=None, help="another dataset.py (default: the bench's)")
    parser.add_argument("--results", type=Path, default=ROOT / "bench/speakers/results-names.json")
    args = parser.parse_args()
    ds = load_dataset(args.dataset)
    lines = Lines(ds, args.work / "cache")
    halves = {
        half: [v.name for v in ds.VOICES if v.half == half and len(lines.all[v.name]) >= MIN_LINES]
        for half in ("calibration", "test")
    }
    started = time.process_time()
    measured = {half: measure(lines, pool, args.work / half, args.seeds) for half, pool in halves.items()}
    rows, samples = measured["calibration"]
    grid = np.round(np.arange(0.30, 0.99, 0.01), 2)
    curve = [score(rows, samples, t) for t in grid]
    room = [p["threshold"] for p in curve if p["wrong"] <= TARGET_WRONG / 2 and p["right"] >= (1 + TARGET_RIGHT) / 2]
    threshold = round((min(room) + max(room)) / 2, 2) if room else None
    test_rows, test_samples = measured["test"]
    results = {
        "encoder": voices.VOICE_PRINT_MODEL,
        "voices": halves,
        "seeds": args.seeds,
        "calibration_range": [min(room), max(room)] if room else None,
        "calibration": score(rows, samples, threshold) if threshold is not None else None,
        "test": score(test_rows, test_samples, threshold) if threshold is not None else None,
        "test_at_service_threshold": score(test_rows, test_samples, voices.MATCH_SIMILARITY),
        "test_similarities": similarities(test_rows, test_samples),
        "calibration_curve": curve,
        "test_curve": [score(test_rows, test_samples, t) for t in grid],
        "cpu_s": round(time.process_time() - started, 1),
    }
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if not k.endswith("_curve")}, indent=2))


if __name__ == "__main__":
    main()
