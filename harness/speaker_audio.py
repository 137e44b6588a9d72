"""Test audio for diarization: real recordings from Debian's Fish Fillets NG voice packs.

``fillets-ng-data-nl`` (and, for more voices, ``fillets-ng-data-cs``) hold the game's
spoken dialogue, one Ogg file per line:
/usr/share/games/fillets-ng/sound/<level>/<lang>/<level-prefix>-<who>-<line>.ogg.
``who`` is ``m`` for the small fish and ``v`` for the big fish; the game's scripts
(script/<level>/dialogs.lua) show every ``-m-`` line in ``font_small`` and every ``-v-``
line in ``font_big``, i.e. one actor each per language.

The helpers convert clips to 16 kHz mono WAV with ffmpeg, trim their silent tails,
and lay them end to end with short pauses, remembering who speaks when.
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import subprocess
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SOUND_ROOT = Path("/usr/share/games/fillets-ng/sound")
SR = 16000
_NAME = re.compile(r"^[a-z0-9]+-(m|v)-[a-z0-9_]+\.ogg$")


def have_ffmpeg() -> bool:
    return shutil.which("ffmpeg") is not None


def clips(lang: str, who: str) -> list[Path]:
    """All clips of one fish ('m' or 'v') in one language, sorted."""
    out = []
    for p in sorted(SOUND_ROOT.glob(f"*/{lang}/*.ogg")):
        m = _NAME.match(p.name)
        if m and m.group(1) == who:
            out.append(p)
    return out


def decode(ogg: Path, cache: Path) -> np.ndarray:
    """16 kHz mono float32 samples of a clip (cached as .npy), silent head/tail trimmed."""
    key = hashlib.sha1(str(ogg).encode()).hexdigest()[:16]
    npy = cache / f"{key}.npy"
    if npy.exists():
        return np.load(npy)
    cache.mkdir(parents=True, exist_ok=True)
    raw = subprocess.run(
        [
            "ffmpeg",
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            str(ogg),
            "-ac",
            "1",
            "-ar",
            str(SR),
            "-f",
            "s16le",
            "-",
        ],
        check=True,
        capture_output=True,
    ).stdout
    x = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    x = trim(x)
    np.save(npy, x)
    return x


def trim(x: np.ndarray, floor_db: float = 35.0) -> np.ndarray:
    """Drop leading/trailing 10 ms frames more than floor_db below the loudest frame."""
    n = len(x) // 160
    if n == 0:
        return x
    f = x[: n * 160].reshape(n, 160)
    db = 10 * np.log10((f.astype(np.float64) ** 2).mean(1) + 1e-12)
    loud = np.flatnonzero(db > db.max() - floor_db)
    return x[loud[0] * 160 : (loud[-1] + 1) * 160]


@dataclass
class Fixture:
    path: Path
    turns: list[tuple[float, float, str]]  # ground truth (start, end, speaker name)

    @property
    def speech(self) -> float:
        return sum(e - s for s, e, _ in self.turns)


def write_wav(path: Path, x: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pcm = np.clip(np.round(x * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())


def conversation(
    out: Path,
    voices: dict[str, list[Path]],
    *,
    n_clips: int = 24,
    seed: int = 0,
    min_len: float = 1.0,
    max_len: float = 6.0,
    gap: tuple[float, float] = (0.3, 1.0),
    cache: Path,
    order: str = "alternate",
    weights: list[float] | None = None,
) -> Fixture:
    """Concatenate n_clips clips, cycling through the voices (or in random order,
    optionally weighted), with pauses drawn from `gap` (negative: overlapping speech).
    Returns the WAV and its ground-truth turns."""
    rng = random.Random(seed)
    names = list(voices)
    pools = {}
    for name, paths in voices.items():
        paths = list(paths)
        rng.shuffle(paths)
        pools[name] = paths
    clips_: list[tuple[np.ndarray, str, float]] = []
    used = {name: 0 for name in names}
    for i in range(n_clips):
        name = names[i % len(names)] if order == "alternate" else rng.choices(names, weights)[0]
        while True:
            path = pools[name][used[name]]
            used[name] += 1
            x = decode(path, cache)
            if min_len <= len(x) / SR <= max_len:
                break
        clips_.append((x, name, rng.uniform(*gap)))
    total = int(0.5 * SR) + sum(len(x) + int(g * SR) for x, _, g in clips_) + SR
    audio = np.zeros(total, dtype=np.float32)
    turns, pos = [], int(0.5 * SR)
    for x, name, g in clips_:
        audio[pos : pos + len(x)] += x
        turns.append((pos / SR, (pos + len(x)) / SR, name))
        pos = max(pos + len(x) + int(g * SR), pos + 1)
    audio = audio[: max(pos, int(turns[-1][1] * SR)) + int(0.3 * SR)]
    # a little noise floor, like a real recording
    audio = audio + np.random.default_rng(seed).normal(0, 10 ** (-60 / 20), len(audio)).astype(np.float32)
    write_wav(out, audio)
    return Fixture(out, turns)


def espeak_conversation(out: Path, *, cache: Path, n_turns: int = 10) -> Fixture:
    """Two espeak-ng voices taking turns."""
    lines = [
        "Good morning, how are you today?",
        "I am fine, thank you. The weather is lovely.",
        "Did you see the news about the new bridge?",
        "Yes, they say it will open next spring.",
        "That will make my trip to work much shorter.",
        "Mine too, I cross the river every day.",
        "Shall we have lunch together on Friday?",
        "Gladly, there is a nice place near the station.",
        "Then it is settled, see you at noon.",
        "See you on Friday, have a good week.",
    ]
    voices = {"a": ["-v", "en-us+m3", "-p", "35", "-s", "160"], "b": ["-v", "en-gb+f4", "-p", "70", "-s", "150"]}
    parts: list[np.ndarray] = [np.zeros(int(0.5 * SR), dtype=np.float32)]
    turns: list[tuple[float, float, str]] = []
    t = 0.5
    rng = random.Random(1)
    for i in range(n_turns):
        name = "ab"[i % 2]
        wav = cache / f"espeak-{name}-{i}.wav"
        if not wav.exists():
            cache.mkdir(parents=True, exist_ok=True)
            tmp = cache / f"espeak-{name}-{i}.raw.wav"
            subprocess.run(["espeak-ng", *voices[name], "-w", str(tmp), lines[i % len(lines)]], check=True)
            subprocess.run(
                [
                    "ffmpeg",
                    "-hide_banner",
                    "-loglevel",
                    "error",
                    "-y",
                    "-i",
                    str(tmp),
                    "-ac",
                    "1",
                    "-ar",
                    str(SR),
                    str(wav),
                ],
                check=True,
            )
        with wave.open(str(wav)) as w:
            x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768
        x = trim(x)
        parts.append(x)
        turns.append((t, t + len(x) / SR, name))
        t += len(x) / SR
        s = np.zeros(int(rng.uniform(0.3, 0.8) * SR), dtype=np.float32)
        parts.append(s)
        t += len(s) / SR
    audio = np.concatenate(parts)
    write_wav(out, audio)
    return Fixture(out, turns)


def score(reference: list[tuple[float, float, str]], hypothesis, step: float = 0.01) -> dict:
    """Frame-level diarization scores against the reference.

    confusion: reference speech time given to the wrong speaker under the best
    one-to-one mapping of hypothesis speakers to reference speakers, divided by
    reference speech time (the target metric); missed and false_alarm likewise.
    """
    from itertools import permutations

    end = max([e for _, e, _ in reference] + [t.end for t in hypothesis] + [0.0])
    n = int(np.ceil(end / step)) + 1
    ref_names = sorted({r for _, _, r in reference})
    ref = np.full(n, -1)
    for s, e, r in reference:
        ref[int(round(s / step)) : int(round(e / step))] = ref_names.index(r)
    hyp_ids = sorted({t.speaker for t in hypothesis})
    hyp = np.full(n, -1)
    for t in hypothesis:
        hyp[int(round(t.start / step)) : int(round(t.end / step))] = hyp_ids.index(t.speaker)
    both = (ref >= 0) & (hyp >= 0)
    m = np.zeros((len(ref_names), max(1, len(hyp_ids))))
    np.add.at(m, (ref[both], hyp[both]), 1)
    # best one-to-one mapping (brute force; few speakers)
    best = 0.0
    r_n, h_n = m.shape
    if h_n <= r_n:
        for perm in permutations(range(r_n), h_n):
            best = max(best, sum(m[perm[j], j] for j in range(h_n)))
    else:
        for perm in permutations(range(h_n), r_n):
            best = max(best, sum(m[i, perm[i]] for i in range(r_n)))
    speech = float((ref >= 0).sum())
    return {
        "confusion": (both.sum() - best) / speech,
        "missed": float(((ref >= 0) & (hyp < 0)).sum()) / speech,
        "false_alarm": float(((ref < 0) & (hyp >= 0)).sum()) / speech,
        "n_speakers": len(hyp_ids),
        "speech_s": speech * step,
    }


def with_noise(fx: Fixture, out: Path, *, snr_db: float, seed: int = 0, hum: bool = True) -> Fixture:
    """The fixture with steady noise (pink-ish hiss, optionally 50 Hz hum) at snr_db
    below the mean speech power."""
    with wave.open(str(fx.path)) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768
    speech = np.concatenate([x[int(s * SR) : int(e * SR)] for s, e, _ in fx.turns])
    p_speech = float(np.mean(speech.astype(np.float64) ** 2))
    rng = np.random.default_rng(seed)
    white = rng.standard_normal(len(x))
    pink = np.cumsum(white) * 0.02
    pink -= np.convolve(pink, np.ones(400) / 400, mode="same")  # remove the drift
    noise = white * 0.3 + pink
    if hum:
        t = np.arange(len(x)) / SR
        noise += 0.5 * np.sin(2 * np.pi * 50 * t) + 0.25 * np.sin(2 * np.pi * 150 * t)
    noise *= np.sqrt(p_speech / 10 ** (snr_db / 10) / np.mean(noise**2))
    write_wav(out, (x + noise).astype(np.float32))
    return Fixture(out, fx.turns)


def actor_lines(
    who: str, count: int, seed: int, cache: Path, shortest: float, longest: float, *, trimmed: bool = False
) -> list[np.ndarray]:
    """``count`` lines of ``shortest``-``longest`` s of one Dutch actor (``who``: "m" or "v"), drawn
    with ``seed``, at one loudness; ``trimmed``: their leading and trailing silence cut first."""
    paths = clips("nl", who)
    random.Random(seed).shuffle(paths)
    out = []
    for path in paths:
        x = decode(path, cache)
        if trimmed:
            x = trim(x)
        if shortest <= len(x) / SR <= longest:
            out.append(x / (np.sqrt(np.mean(x**2)) + 1e-9) * 0.05)
        if len(out) == count:
            return out
    raise AssertionError(f"fewer than {count} lines of {who} of {shortest}-{longest} s")
