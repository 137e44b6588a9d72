"""The diarization evaluation set, built offline from recorded voices with a fixed seed, where the
channel gives nothing away.

Voices (``VOICES``), all of recorded people, none of them the Dutch actors of the end-to-end tests:
the two Czech voice actors of Debian's ``fillets-ng-data-cs``; the LibriVox reader of
``pocketsphinx-testdata``; the professional prompt voices of ``asterisk-core-sounds-*-wav`` (Allison
in English and Spanish, June in French, Carlo in Italian, the Russian IVR voice; 8 kHz recordings);
and Festival's voices built from recordings of one person each (``festvox-kallpc16k``,
``-kdlpc16k``, ``-us-slt-hts``, the Czech, Italian, Finnish and Russian ones). Each voice belongs to
one half: thresholds are chosen on the ``calibration`` half and scored on the ``test`` half.

The channel is taken away before mixing: within a file every voice's lines are filtered so that its
long-term average spectrum (smoothed over about 160 Hz) equals the file's average, and when one
voice was recorded at 8 kHz every voice of the file is band-limited alike. Only then are the
conditions' own channels (telephone, noise, music) laid over the mix.

Conditions (``CONDITIONS``): two voices; same-gender pairs closest in pitch; short turns with short
lines of the other voice inside; 10-20% overlapped speech; a same-gender close-pitch pair on one
telephone line (300-3400 Hz, 8 kHz, mu-law, by ffmpeg); noise or music at 10-20 dB SNR; 3 to 6
speakers; a long recording where a speaker comes back after ten minutes away; one voice (a
monologue, a lecture with long pauses, one voice over loud music).

    build(out_dir, half="test", seed=12) -> list[Item]
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.speakers.recorded_voices import (  # noqa: E402, F401  (names.py reads VOICES and Voices here)
    BY_NAME,
    HALVES,
    SILENCE_DB,
    SR,
    VOICES,
    Voice,
    Voices,
    read_wav,
    voiced,
)
from harness import speaker_audio as sa  # noqa: E402


@dataclass
class Item:
    name: str
    condition: str
    wav: Path
    rttm: Path
    turns: list[tuple[float, float, str]] = field(default_factory=list)

    @property
    def speakers(self) -> int:
        return len({who for _, _, who in self.turns})

    @property
    def duration(self) -> float:
        return max(e for _, e, _ in self.turns) + 0.5


EQ_NFFT = 512  # LTAS resolution: 31 Hz bins
EQ_SMOOTH_BINS = 5  # the correction is smoothed over about 160 Hz: channel colouring, not harmonics
EQ_MAX_DB = 15.0
NARROW_HZ = (3500.0, 3800.0)  # roll-off band when one voice of a file was recorded at 8 kHz


def _ltas(lines: list[np.ndarray]) -> np.ndarray:
    """Mean power spectrum (EQ_NFFT // 2 + 1 bins) of the lines' 32 ms frames that hold speech."""
    frames = []
    for x in lines:
        if len(x) < EQ_NFFT:
            continue
        f = np.lib.stride_tricks.sliding_window_view(x, EQ_NFFT)[:: EQ_NFFT // 2]
        energy = (f.astype(np.float64) ** 2).mean(1)
        frames.append(f[energy > energy.max() * 10 ** (-SILENCE_DB / 10)])
    f = np.concatenate(frames) if frames else np.zeros((1, EQ_NFFT))
    return (np.abs(np.fft.rfft(f * np.hanning(EQ_NFFT), axis=1)) ** 2).mean(0) + 1e-12


def _filter(x: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """x through a zero-phase filter of magnitude ``gain`` (given on EQ_NFFT // 2 + 1 bins)."""
    n = 1 << int(np.ceil(np.log2(len(x) + EQ_NFFT)))
    grid = np.linspace(0, SR / 2, n // 2 + 1)
    g = np.interp(grid, np.linspace(0, SR / 2, len(gain)), gain)
    y = np.fft.irfft(np.fft.rfft(x, n) * g, n)[: len(x)]
    return y.astype(np.float32)


def equalise(placed: list[tuple[float, np.ndarray, str]], narrowband: bool) -> list[tuple[float, np.ndarray, str]]:
    """Every voice's lines filtered so its long-term average spectrum is the file's average (in dB,
    smoothed over EQ_SMOOTH_BINS), all of them band-limited to 3.8 kHz when ``narrowband``: the
    recording session's microphone and room no longer tell the voices apart."""
    freqs = np.linspace(0, SR / 2, EQ_NFFT // 2 + 1)
    band = (
        np.clip((NARROW_HZ[1] - freqs) / (NARROW_HZ[1] - NARROW_HZ[0]), 0.0, 1.0) if narrowband else np.ones_like(freqs)
    )
    band[freqs < 60] = 0.0  # below any voice
    speakers = sorted({who for _, _, who in placed})
    kernel = np.ones(EQ_SMOOTH_BINS) / EQ_SMOOTH_BINS
    level = {}
    for who in speakers:
        ltas = _ltas([x for _, x, w in placed if w == who])
        level[who] = np.convolve(10 * np.log10(ltas), kernel, mode="same")
    target = np.mean([level[w] for w in speakers], axis=0)
    gains = {w: band * 10 ** (np.clip(target - level[w], -EQ_MAX_DB, EQ_MAX_DB) / 20) for w in speakers}
    return [(at, _filter(x, gains[who]), who) for at, x, who in placed]


def mix(placed: list[tuple[float, np.ndarray, str]]) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    end = max(start + len(x) / SR for start, x, _ in placed) + 0.5
    audio = np.zeros(int(end * SR) + 1, dtype=np.float32)
    turns: list[tuple[float, float, str]] = []
    for start, x, who in placed:
        at = int(round(start * SR))
        audio[at : at + len(x)] += x
        turns.extend((round((at + a) / SR, 3), round((at + b) / SR, 3), who) for a, b in voiced(x))
    return audio, sorted(turns)


def dialogue(
    voices: Voices,
    names: list[str],
    rng: random.Random,
    *,
    lines: int,
    gap=(0.2, 1.0),
    line_len=(0.8, 8.0),
    order: str = "random",
    backchannels: float = 0.0,
    start: float = 0.5,
    used: set | None = None,
) -> list[tuple[float, np.ndarray, str]]:
    """Lines of ``names`` one after another (``order`` "random": never the same voice twice in a
    row when there are two or more), pauses from ``gap`` (negative: overlap); with
    ``backchannels`` > 0, that share of lines gets a short line (0.3-1.3 s: the shortest the actors have) of another voice
    inside it."""
    used = set() if used is None else used
    placed = []
    at, previous = start, None
    for _ in range(lines):
        choices = [n for n in names if n != previous] or names
        who = rng.choice(choices)
        x = voices.line(who, rng, used, *line_len)
        placed.append((at, x, who))
        length = len(x) / SR
        if backchannels and len(names) > 1 and length > 1.5 and rng.random() < backchannels:
            other = rng.choice([n for n in names if n != who])
            short = voices.line(other, rng, used, 0.3, 1.3)
            placed.append((at + rng.uniform(0.4, length - 0.6), short, other))
        at = max(at + length + rng.uniform(*gap), at + 0.3)
        previous = who
    return placed


def overlap_share(turns: list[tuple[float, float, str]]) -> float:
    step = 0.01
    end = max(e for _, e, _ in turns)
    count = np.zeros(int(end / step) + 1, dtype=np.int32)
    for s, e, _ in turns:
        count[int(s / step) : int(e / step)] += 1
    return float((count >= 2).sum() / max(1, (count >= 1).sum()))


# ---------------------------------------------------------------------------------------------
# Channels: telephone, noise, music
# ---------------------------------------------------------------------------------------------


def telephone(audio: np.ndarray, work: Path) -> np.ndarray:
    """300-3400 Hz, 8 kHz, mu-law, back to 16 kHz, by ffmpeg."""
    work.mkdir(parents=True, exist_ok=True)
    src, mulaw, back = work / "tel-in.wav", work / "tel-mulaw.wav", work / "tel-out.wav"
    sa.write_wav(src, audio)
    ffmpeg = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i"]
    band = ["-af", "highpass=f=300,lowpass=f=3400", "-ar", "8000", "-c:a", "pcm_mulaw"]
    subprocess.run([*ffmpeg, str(src), *band, str(mulaw)], check=True)
    subprocess.run([*ffmpeg, str(mulaw), "-ar", str(SR), "-c:a", "pcm_s16le", str(back)], check=True)
    return read_wav(back)[: len(audio)]


def music(n: int, rng: np.random.Generator) -> np.ndarray:
    """Chords of decaying harmonic tones with a beat: something music-like, made here."""
    t = np.arange(n) / SR
    out = np.zeros(n, dtype=np.float32)
    beat = 0.5
    roots = [220.0, 246.9, 196.0, 174.6]
    for k in range(int(n / SR / (4 * beat)) + 1):
        root = roots[k % len(roots)] * rng.choice([1.0, 0.5])
        s, e = int(k * 4 * beat * SR), min(n, int((k + 1) * 4 * beat * SR))
        if s >= n:
            break
        tt = t[s:e] - t[s]
        for ratio in (1.0, 1.25, 1.5):
            for h in (1, 2, 3):
                out[s:e] += (np.sin(2 * np.pi * root * ratio * h * tt) / h * np.exp(-tt * 1.5)).astype(np.float32)
        hits = (np.exp(-((tt % beat) * 40)) * rng.normal(0, 1, e - s)).astype(np.float32)
        out[s:e] += 0.5 * hits
    return out


def under(audio: np.ndarray, bed: np.ndarray, snr_db: float) -> np.ndarray:
    speech_power = float((audio[np.abs(audio) > 1e-3] ** 2).mean())
    bed_power = float((bed**2).mean()) or 1.0
    return audio + bed * np.sqrt(speech_power / bed_power / 10 ** (snr_db / 10))


def pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft(rng.normal(0, 1, n))
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))
    return np.fft.irfft(spectrum, n).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# The set
# ---------------------------------------------------------------------------------------------

CONDITIONS = [
    "two-voices",
    "same-gender-close-pitch",
    "short-turns-backchannels",
    "overlap-10-20",
    "telephone-close-pitch",
    "noise-music",
    "many-speakers",
    "long-returning",
    "one-voice",
]
# two voices sharing one channel: each must stay at or under 12% DER (issue 29)
TWO_SPEAKER_CONDITIONS = CONDITIONS[:6]


def write_rttm(path: Path, uri: str, turns: list[tuple[float, float, str]]) -> None:
    path.write_text("".join(f"SPEAKER {uri} 1 {s:.3f} {e - s:.3f} <NA> <NA> {who} <NA> <NA>\n" for s, e, who in turns))


def close_pitch_pairs(voices: Voices, names: list[str], count: int = 4) -> list[tuple[str, str]]:
    """The ``count`` same-gender pairs of ``names`` closest in median F0."""
    pitch = {v: voices.pitch(v) for v in names}
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :] if BY_NAME[a].gender == BY_NAME[b].gender]
    return sorted(pairs, key=lambda p: abs(pitch[p[0]] - pitch[p[1]]))[:count]


Placed = list[tuple[float, np.ndarray, str]]
Channel = Callable[[np.ndarray], np.ndarray]


class _SetBuilder:
    """One half's files, condition by condition. The conditions draw from the same two random
    generators in a fixed order (the set is reproducible from its seed), so each method draws
    exactly what its loop in the one long function it replaced drew, in the same order."""

    def __init__(self, out: Path, half: str, seed: int):
        self.out = out
        self.voices = Voices(out.parent / "bench-speakers-cache")
        self.rng = random.Random(f"{seed}-{half}")
        self.nprng = np.random.default_rng(seed + (half == "test"))
        self.names = [v.name for v in VOICES if v.half == half]
        self.close = close_pitch_pairs(self.voices, self.names)
        self.items: list[Item] = []

    def add(self, condition: str, k: int, placed: Placed, channel: Channel | None = None) -> None:
        placed = equalise(placed, narrowband=any(self.voices.narrowband(who) for _, _, who in placed))
        audio, turns = mix(placed)
        if channel:
            audio = channel(audio)
        peak = float(np.abs(audio).max()) or 1.0
        audio = audio / max(peak, 1.0) * 0.95 if peak > 0.95 else audio
        name = f"{condition}-{k:02d}"
        wav, rttm = self.out / f"{name}.wav", self.out / f"{name}.rttm"
        sa.write_wav(wav, audio)
        write_rttm(rttm, name, turns)
        self.items.append(Item(name, condition, wav, rttm, turns))

    def dialogue(self, who: list[str], lines: tuple[int, int], **shape: Any) -> Placed:
        return dialogue(self.voices, who, self.rng, lines=self.rng.randint(*lines), **shape)

    def two_voices(self, k: int) -> None:
        pair = self.rng.sample(self.names, 2)
        self.add("two-voices", k, self.dialogue(pair, (14, 24)))

    def same_gender_close_pitch(self, k: int) -> None:
        self.add("same-gender-close-pitch", k, self.dialogue(list(self.close[k % len(self.close)]), (14, 24)))

    def short_turns(self, k: int) -> None:
        pair = self.rng.sample(self.names, 2)
        placed = self.dialogue(pair, (18, 28), gap=(0.05, 0.5), line_len=(0.4, 5.0), backchannels=0.35)
        self.add("short-turns-backchannels", k, placed)

    def overlap(self, k: int) -> None:
        pair = self.rng.sample(self.names, 2)
        for _ in range(20):  # redraw until 10-20% of the speech is overlapped
            placed = self.dialogue(pair, (14, 22), gap=(-1.2, 0.4))
            if 0.10 <= overlap_share(mix(placed)[1]) <= 0.20:
                break
        self.add("overlap-10-20", k, placed)

    def telephone_close_pitch(self, k: int) -> None:
        pair = list(self.close[k % len(self.close)])
        placed = self.dialogue(pair, (14, 24), gap=(-0.3, 0.8), line_len=(0.4, 6.0))
        self.add("telephone-close-pitch", k, placed, channel=lambda a: telephone(a, self.out / "work"))

    def noise_music(self, k: int) -> None:
        pair = self.rng.sample(self.names, 2)
        snr = self.rng.uniform(10, 20)
        bed = "music" if k % 2 else "noise"
        placed = self.dialogue(pair, (14, 24))

        def channel(a: np.ndarray) -> np.ndarray:
            return under(a, music(len(a), self.nprng) if bed == "music" else pink(len(a), self.nprng), snr)

        self.add("noise-music", k, placed, channel=channel)

    def many_speakers(self, k: int) -> None:
        n = 3 + k % 4  # 3, 4, 5, 6
        who = self.rng.sample(self.names, n)
        self.add("many-speakers", k, self.dialogue(who, (8 * n, 10 * n), gap=(0.1, 0.9)))

    def long_returning(self, k: int) -> None:
        a, b, c = self.rng.sample(self.names, 3)
        used: set[Any] = set()
        first = dialogue(self.voices, [a, b], self.rng, lines=40, used=used)  # about 2 minutes
        at = max(s + len(x) / SR for s, x, _ in first) + 1.0
        middle = dialogue(self.voices, [a, c], self.rng, lines=200, start=at, used=used)  # about 10 minutes
        at = max(s + len(x) / SR for s, x, _ in middle) + 1.0
        last = dialogue(self.voices, [a, b], self.rng, lines=40, start=at, used=used)  # b returns
        self.add("long-returning", k, first + middle + last)

    def one_voice(self, k: int) -> None:
        kind = ("monologue", "lecture", "over-music")[k % 3]
        who = [self.names[k % len(self.names)]]
        if kind == "monologue":
            self.add("one-voice", k, self.dialogue(who, (20, 40), gap=(0.2, 0.9)))
        elif kind == "lecture":
            self.add("one-voice", k, self.dialogue(who, (20, 40), gap=(0.5, 6.0)))
        else:
            placed = self.dialogue(who, (20, 30), gap=(0.2, 0.9))
            self.add("one-voice", k, placed, channel=lambda a: under(a, music(len(a), self.nprng), 8.0))


def build(out: Path, *, half: str = "test", seed: int = 12, per_condition: int = 6, long_files: int = 1) -> list[Item]:
    """Write one half's WAVs and RTTMs under ``out``; returns the items (condition order)."""
    if half not in HALVES:
        raise ValueError(f"half is one of {HALVES}")
    out.mkdir(parents=True, exist_ok=True)
    builder = _SetBuilder(out, half, seed)
    for condition in (
        builder.two_voices,
        builder.same_gender_close_pitch,
        builder.short_turns,
        builder.overlap,
        builder.telephone_close_pitch,
        builder.noise_music,
        builder.many_speakers,
    ):
        for k in range(per_condition):
            condition(k)
    for k in range(long_files):
        builder.long_returning(k)
    for k in range(max(per_condition, len(builder.names))):
        builder.one_voice(k)
    return builder.items
