"""Diarization accuracy and speed on real recordings (Debian's fillets-ng voice packs).

    python bench/speakers/eval.py [--seeds 5] [--cache DIR] [--speed-minutes 10]

Builds conversations of two (or more) real voices taking turns with 0.3-1 s
pauses, runs transcription.pipeline.speakers.diarize, prints speaker confusion,
missed / false-alarm speech and the speaker count per case, and the compute time
per hour of audio.  Needs ffmpeg and fillets-ng-data-nl (fillets-ng-data-cs and
espeak-ng for the extra cases; those are skipped when missing).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


from harness import speaker_audio as sa  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402


def cases(cache: Path, seeds: int):
    nl = {"nl-m": sa.clips("nl", "m"), "nl-v": sa.clips("nl", "v")}
    cs = {"cs-m": sa.clips("cs", "m"), "cs-v": sa.clips("cs", "v")}
    out = cache / "wav"
    for seed in range(seeds):
        yield (
            f"nl 2 voices alternate seed={seed}",
            2,
            lambda s=seed: sa.conversation(out / f"nl-alt-{s}.wav", nl, n_clips=24, seed=s, cache=cache / "clips"),
        )
    for seed in range(seeds):
        yield (
            f"nl 2 voices random order seed={seed}",
            2,
            lambda s=seed: sa.conversation(
                out / f"nl-rnd-{s}.wav", nl, n_clips=24, seed=100 + s, cache=cache / "clips", order="random"
            ),
        )
    for seed in range(seeds):
        yield (
            f"nl 2 voices short pauses 0-0.15s seed={seed}",
            2,
            lambda s=seed: sa.conversation(
                out / f"nl-tight-{s}.wav",
                nl,
                n_clips=24,
                seed=200 + s,
                cache=cache / "clips",
                order="random",
                gap=(0.0, 0.15),
            ),
        )
    for seed in range(2):
        yield (
            f"nl 2 voices overlapping up to 0.3s seed={seed}",
            2,
            lambda s=seed: sa.conversation(
                out / f"nl-overlap-{s}.wav",
                nl,
                n_clips=24,
                seed=300 + s,
                cache=cache / "clips",
                order="random",
                gap=(-0.3, 0.1),
            ),
        )
    for seed in range(2):
        yield (
            f"nl 2 voices unbalanced 85/15 seed={seed}",
            2,
            lambda s=seed: sa.conversation(
                out / f"nl-unbal-{s}.wav",
                nl,
                n_clips=40,
                seed=400 + s,
                cache=cache / "clips",
                order="random",
                weights=[0.85, 0.15],
            ),
        )
    for who in "mv":
        for seed in range(2):
            yield (
                f"nl one voice long ({who}) seed={seed}",
                1,
                lambda w=who, s=seed: sa.conversation(
                    out / f"nl-one-long-{w}-{s}.wav",
                    {w: nl[f"nl-{w}"]},
                    n_clips=80,
                    seed=500 + s,
                    cache=cache / "clips",
                    max_len=12.0,
                ),
            )
    for who in "mv":
        for seed in range(2):
            yield (
                f"nl one voice ({who}) seed={seed}",
                1,
                lambda w=who, s=seed: sa.conversation(
                    out / f"nl-one-{w}-{s}.wav", {w: nl[f"nl-{w}"]}, n_clips=20, seed=s, cache=cache / "clips"
                ),
            )
    for snr in (15, 5):
        yield (
            f"nl 2 voices noise SNR {snr} dB",
            2,
            lambda snr=snr: sa.with_noise(
                sa.conversation(out / "nl-alt-0.wav", nl, n_clips=24, seed=0, cache=cache / "clips"),
                out / f"nl-noise-{snr}.wav",
                snr_db=snr,
            ),
        )
        for who in "mv":
            yield (
                f"nl one voice ({who}) noise SNR {snr} dB",
                1,
                lambda snr=snr, w=who: sa.with_noise(
                    sa.conversation(
                        out / f"nl-one-{w}-0.wav", {w: nl[f"nl-{w}"]}, n_clips=20, seed=0, cache=cache / "clips"
                    ),
                    out / f"nl-one-{w}-noise-{snr}.wav",
                    snr_db=snr,
                ),
            )
    if cs["cs-m"]:
        yield from _czech_cases(cache, nl, cs)
    yield "espeak-ng 2 voices", 2, lambda: sa.espeak_conversation(out / "espeak.wav", cache=cache / "espeak")


def _czech_cases(cache: Path, nl: dict, cs: dict):
    """The cases with the Czech voice actors (and the Dutch ones beside them)."""
    out = cache / "wav"
    for seed in range(2):
        yield (
            f"cs 2 voices alternate seed={seed}",
            2,
            lambda s=seed: sa.conversation(out / f"cs-alt-{s}.wav", cs, n_clips=24, seed=s, cache=cache / "clips"),
        )
    for who in "mv":
        yield (
            f"cs one voice ({who})",
            1,
            lambda w=who: sa.conversation(
                out / f"cs-one-{w}.wav", {w: cs[f"cs-{w}"]}, n_clips=20, seed=0, cache=cache / "clips"
            ),
        )
    yield (
        "nl+cs 4 voices random order",
        4,
        lambda: sa.conversation(
            out / "four.wav", {**nl, **cs}, n_clips=40, seed=7, cache=cache / "clips", order="random"
        ),
    )
    yield (
        "nl+cs 3 voices alternate",
        3,
        lambda: sa.conversation(
            out / "three.wav",
            {"nl-m": nl["nl-m"], "nl-v": nl["nl-v"], "cs-v": cs["cs-v"]},
            n_clips=30,
            seed=3,
            cache=cache / "clips",
        ),
    )


def speed(cache: Path, minutes: float) -> None:
    """Diarize a long conversation and report compute seconds per hour of audio."""
    nl = {"nl-m": sa.clips("nl", "m"), "nl-v": sa.clips("nl", "v")}
    n = int(minutes * 60 / 3.5)  # clips average ~2.8 s + 0.65 s pause
    fx = sa.conversation(
        cache / "wav" / f"long-{minutes}.wav",
        nl,
        n_clips=n,
        seed=42,
        cache=cache / "clips",
        max_len=30.0,
        order="random",
    )
    dur = fx.turns[-1][1] + 1
    enc = speakers.default_encoder()
    t0 = time.perf_counter()
    regions = speakers.speech.find_speech(fx.path).regions(
        threshold=0.5, neg_threshold=None, min_silence_s=0.2, min_speech_s=0.25, pad_s=0.05
    )
    t1 = time.perf_counter()
    turns = speakers.diarize(fx.path, regions=regions, encoder=enc)
    t2 = time.perf_counter()
    sc = sa.score(fx.turns, turns)
    print(
        f"long: {dur / 60:.1f} min audio, speech {fx.speech / 60:.1f} min; VAD {t1 - t0:.1f} s, "
        f"embed+cluster {t2 - t1:.1f} s -> {(t2 - t0) / dur * 3600:.0f} s per hour of audio "
        f"(VAD {(t1 - t0) / dur * 3600:.0f}, rest {(t2 - t1) / dur * 3600:.0f}); confusion {sc['confusion']:.3f}, "
        f"speakers {sc['n_speakers']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "speaker-bench")
    ap.add_argument("--speed-minutes", type=float, default=0)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    if not sa.have_ffmpeg() or not sa.clips("nl", "m"):
        sys.exit("needs ffmpeg and fillets-ng-data-nl")
    enc = speakers.default_encoder()
    rows = []
    for name, want, build in cases(args.cache, args.seeds):
        if args.only and args.only not in name:
            continue
        if name.startswith("espeak") and not sa.shutil.which("espeak-ng"):
            continue
        fx = build()
        t = time.perf_counter()
        turns = speakers.diarize(fx.path, encoder=enc)
        el = time.perf_counter() - t
        sc = sa.score(fx.turns, turns)
        ok = sc["n_speakers"] == want and (want == 1 or sc["confusion"] <= 0.05)
        rows.append((name, sc, ok))
        print(
            f"{'ok ' if ok else 'BAD'} {name:40s} speech {sc['speech_s']:6.1f}s  speakers {sc['n_speakers']}/{want}  "
            f"confusion {sc['confusion']:.3f}  missed {sc['missed']:.3f}  FA {sc['false_alarm']:.3f}  ({el:.1f}s)",
            flush=True,
        )
    multi = [sc for name, sc, _ in rows if "voices" in name and "one voice" not in name]
    if multi:
        tot = sum(sc["speech_s"] for sc in multi)
        print(
            f"pooled confusion over multi-voice cases: {sum(sc['confusion'] * sc['speech_s'] for sc in multi) / tot:.4f}"
        )
    print(f"{sum(ok for *_, ok in rows)} of {len(rows)} cases within target")
    if args.speed_minutes:
        speed(args.cache, args.speed_minutes)


if __name__ == "__main__":
    main()
