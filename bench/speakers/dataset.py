"""The diarization evaluation set, built offline from real voices with a fixed seed.

Voices: the four voice actors of Debian's ``fillets-ng-data-nl`` and ``-cs`` (one per fish and
language, 600+ lines each), the LibriVox reader of ``pocketsphinx-testdata`` (five lines), and
espeak-ng only as a minority (extra voices in the many-speaker files). Each file gets an RTTM
reference written from where the generator put each line, overlaps included.

Conditions (``CONDITIONS``): two voices; the two real voices closest in pitch (same-gender-like);
short turns of 0.4-5 s with one-word backchannels inside the other's turn; 10-20% overlapped
speech; telephone band (300-3400 Hz, 8 kHz, mu-law round trip, by ffmpeg); noise or music under
the speech at 10-20 dB SNR; 3 to 6 speakers; 30-minute recordings where a speaker comes back after
20 minutes away; one voice (a monologue, a lecture with long pauses, one voice over loud music).

    build(out_dir, seed=12, long_files=True) -> list[Item]
"""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness import speaker_audio as sa  # noqa: E402

SR = sa.SR
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
ESPEAK_VOICES = {"es-m": "en-us+m3", "es-f": "en-gb+f4", "es-m2": "de+m5"}
ESPEAK_LINES = [
    "Good morning, how are you today?",
    "I am fine, thank you. The weather is lovely.",
    "Did you see the news about the new bridge?",
    "Yes, they say it will open next spring.",
    "That will make my trip to work much shorter.",
    "Shall we have lunch together on Friday?",
    "Gladly, there is a nice place near the station.",
    "Then it is settled, see you at noon.",
    "I think we should check the numbers again.",
    "Right.",
    "Okay.",
    "The meeting was moved to Thursday afternoon.",
]


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


class Voices:
    """Lines of every voice as 16 kHz float arrays, drawn without repeats inside one file."""

    def __init__(self, cache: Path):
        self.cache = cache
        self.paths: dict[str, list[Path]] = {}
        for lang in ("nl", "cs"):
            for who in ("m", "v"):
                self.paths[f"{lang}-{who}"] = sa.clips(lang, who)
        self.paths["librivox"] = sorted(LIBRIVOX.glob("*.wav"))
        self.real = [v for v in self.paths if v != "librivox"]

    def line(self, voice: str, rng: random.Random, used: set, lo: float = 0.3, hi: float = 8.0) -> np.ndarray:
        if voice in ESPEAK_VOICES:
            return self._espeak(voice, rng.choice(ESPEAK_LINES))
        paths = self.paths[voice]
        if hi <= 1.5:  # a backchannel: among the smallest files (short lines), not all 600
            paths = sorted(paths, key=lambda p: p.stat().st_size)[: max(5, len(paths) // 6)]
        for attempt in range(400):
            path = rng.choice(paths)
            if (voice, path) in used and attempt < 300:  # no line twice in a file while others are left
                continue
            x = sa.decode(path, self.cache) if path.suffix == ".ogg" else _read_wav(path)
            if lo <= len(x) / SR <= hi:
                used.add((voice, path))
                return x
        raise RuntimeError(f"no line of {voice} between {lo} and {hi} s")

    def _espeak(self, voice: str, text: str) -> np.ndarray:
        out = self.cache / f"espeak-{voice}-{abs(hash(text)) % 10**8}.wav"
        if not out.exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            raw = out.with_suffix(".raw.wav")
            subprocess.run(["espeak-ng", "-v", ESPEAK_VOICES[voice], "-w", str(raw), text], check=True)
            subprocess.run(
                ["ffmpeg", "-v", "error", "-y", "-i", str(raw), "-ar", str(SR), "-ac", "1", str(out)], check=True
            )
            raw.unlink()
        return sa.trim(_read_wav(out))

    def pitch(self, voice: str, n: int = 12) -> float:
        """Median F0 (Hz) over a few lines, by autocorrelation of voiced 40 ms frames."""
        rng = random.Random(0)
        f0s = []
        for _ in range(n):
            x = self.line(voice, rng, set(), 1.0, 8.0)
            for k in range(0, len(x) - 640, 320):
                frame = x[k : k + 640] - x[k : k + 640].mean()
                if np.sqrt((frame**2).mean()) < 0.02:
                    continue
                ac = np.correlate(frame, frame, "full")[639:]
                lag_lo, lag_hi = SR // 400, SR // 60
                lag = lag_lo + int(np.argmax(ac[lag_lo:lag_hi]))
                if ac[lag] > 0.4 * ac[0]:
                    f0s.append(SR / lag)
        return float(np.median(f0s))


def _read_wav(path: Path) -> np.ndarray:
    import wave

    with wave.open(str(path)) as w:
        assert w.getframerate() == SR and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0


# ---------------------------------------------------------------------------------------------
# Laying lines out in time
# ---------------------------------------------------------------------------------------------


PAUSE_S = 0.4  # a silence this long inside a line ends a reference turn, as a careful annotator would
SILENCE_DB = 35.0  # below the line's loudest 10 ms by this much is silence (the level sa.trim uses)


def _voiced(x: np.ndarray) -> list[tuple[int, int]]:
    """Sample ranges of a line's speech: the line cut at inner pauses of PAUSE_S or more."""
    n = len(x) // 160
    if n == 0:
        return [(0, len(x))]
    db = 10 * np.log10((x[: n * 160].reshape(n, 160).astype(np.float64) ** 2).mean(1) + 1e-12)
    loud = db > db.max() - SILENCE_DB
    spans, start, quiet = [], None, 0
    for k, is_loud in enumerate(loud):
        if is_loud:
            if start is None:
                start = k
            quiet = 0
            end = k + 1
        elif start is not None:
            quiet += 1
            if quiet * 0.01 >= PAUSE_S:
                spans.append((start * 160, end * 160))
                start, quiet = None, 0
    if start is not None:
        spans.append((start * 160, end * 160))
    return spans or [(0, len(x))]


def _mix(placed: list[tuple[float, np.ndarray, str]]) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    end = max(start + len(x) / SR for start, x, _ in placed) + 0.5
    audio = np.zeros(int(end * SR) + 1, dtype=np.float32)
    turns = []
    for start, x, who in placed:
        at = int(round(start * SR))
        audio[at : at + len(x)] += x
        turns.extend((round((at + a) / SR, 3), round((at + b) / SR, 3), who) for a, b in _voiced(x))
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


def _overlap_share(turns: list[tuple[float, float, str]]) -> float:
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
    src, mulaw, back = work / "tel-in.wav", work / "tel-mulaw.wav", work / "tel-out.wav"
    sa.write_wav(src, audio)
    ffmpeg = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i"]
    band = ["-af", "highpass=f=300,lowpass=f=3400", "-ar", "8000", "-c:a", "pcm_mulaw"]
    subprocess.run([*ffmpeg, str(src), *band, str(mulaw)], check=True)
    subprocess.run([*ffmpeg, str(mulaw), "-ar", str(SR), "-c:a", "pcm_s16le", str(back)], check=True)
    return _read_wav(back)[: len(audio)]


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


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.rfft(rng.normal(0, 1, n))
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))
    return np.fft.irfft(spectrum, n).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# The set
# ---------------------------------------------------------------------------------------------

CONDITIONS = [
    "two-voices",
    "similar-pitch-pair",
    "short-turns-backchannels",
    "overlap-10-20",
    "telephone",
    "noise-music",
    "many-speakers",
    "long-returning",
    "one-voice",
]


def write_rttm(path: Path, uri: str, turns: list[tuple[float, float, str]]) -> None:
    path.write_text("".join(f"SPEAKER {uri} 1 {s:.3f} {e - s:.3f} <NA> <NA> {who} <NA> <NA>\n" for s, e, who in turns))


def build(out: Path, *, seed: int = 12, per_condition: int = 8, long_files: int = 3) -> list[Item]:
    """Write the set's WAVs and RTTMs under ``out``; returns the items (condition order)."""
    out.mkdir(parents=True, exist_ok=True)
    voices = Voices(out / "cache")
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    real = voices.real
    pitches = {v: voices.pitch(v) for v in real}
    pairs = sorted(
        ((a, b) for i, a in enumerate(real) for b in real[i + 1 :]), key=lambda p: abs(pitches[p[0]] - pitches[p[1]])
    )
    closest = pairs[0]
    items: list[Item] = []

    def add(condition: str, k: int, placed, channel=None) -> None:
        audio, turns = _mix(placed)
        if channel:
            audio = channel(audio)
        peak = float(np.abs(audio).max()) or 1.0
        audio = audio / max(peak, 1.0) * 0.95 if peak > 0.95 else audio
        name = f"{condition}-{k:02d}"
        wav, rttm = out / f"{name}.wav", out / f"{name}.rttm"
        sa.write_wav(wav, audio)
        write_rttm(rttm, name, turns)
        items.append(Item(name, condition, wav, rttm, turns))

    for k in range(per_condition):
        pair = rng.sample(real, 2)
        add("two-voices", k, dialogue(voices, pair, rng, lines=rng.randint(14, 24)))
    for k in range(per_condition):
        add("similar-pitch-pair", k, dialogue(voices, list(closest), rng, lines=rng.randint(14, 24)))
    for k in range(per_condition):
        pair = rng.sample(real, 2)
        placed = dialogue(
            voices, pair, rng, lines=rng.randint(18, 28), gap=(0.05, 0.5), line_len=(0.4, 5.0), backchannels=0.35
        )
        add("short-turns-backchannels", k, placed)
    for k in range(per_condition):
        pair = rng.sample(real, 2)
        for _ in range(20):  # redraw until 10-20% of the speech is overlapped
            placed = dialogue(voices, pair, rng, lines=rng.randint(14, 22), gap=(-1.2, 0.4))
            if 0.10 <= _overlap_share(_mix(placed)[1]) <= 0.20:
                break
        add("overlap-10-20", k, placed)
    for k in range(per_condition):
        pair = rng.sample(real, 2)
        placed = dialogue(voices, pair, rng, lines=rng.randint(14, 24), gap=(-0.3, 0.8), line_len=(0.4, 6.0))
        add("telephone", k, placed, channel=lambda a: telephone(a, out / "cache"))
    for k in range(per_condition):
        pair = rng.sample(real, 2)
        snr = rng.uniform(10, 20)
        bed = "music" if k % 2 else "noise"
        placed = dialogue(voices, pair, rng, lines=rng.randint(14, 24))

        def channel(a, snr=snr, bed=bed):
            return under(a, music(len(a), nprng) if bed == "music" else _pink(len(a), nprng), snr)

        add("noise-music", k, placed, channel=channel)
    pool = real + ["librivox", *ESPEAK_VOICES]
    for k in range(per_condition):
        n = 3 + k % 4  # 3, 4, 5, 6
        # real voices first; espeak-ng or the LibriVox reader only for the fifth and sixth
        names = rng.sample(real, 4)[: min(n, 4)] + rng.sample(pool[4:], max(0, n - 4))
        add("many-speakers", k, dialogue(voices, names, rng, lines=rng.randint(8 * n, 10 * n), gap=(0.1, 0.9)))
    for k in range(long_files):
        a, b, c = rng.sample(real, 3)
        used: set = set()
        first = dialogue(voices, [a, b], rng, lines=110, used=used)  # about 5 minutes
        at = max(s + len(x) / SR for s, x, _ in first) + 1.0
        middle = dialogue(voices, [a, c], rng, lines=440, start=at, used=used)  # about 20 minutes
        at = max(s + len(x) / SR for s, x, _ in middle) + 1.0
        last = dialogue(voices, [a, b], rng, lines=110, start=at, used=used)  # b returns
        add("long-returning", k, first + middle + last)
    one_voice_kinds = ["monologue", "lecture", "over-music"]
    for k in range(max(per_condition, 9)):
        kind = one_voice_kinds[k % 3]
        who = real[k % len(real)]
        if kind == "monologue":
            placed = dialogue(voices, [who], rng, lines=rng.randint(20, 40), gap=(0.2, 0.9))
            add("one-voice", k, placed)
        elif kind == "lecture":
            placed = dialogue(voices, [who], rng, lines=rng.randint(20, 40), gap=(0.5, 6.0))
            add("one-voice", k, placed)
        else:
            placed = dialogue(voices, [who], rng, lines=rng.randint(20, 30), gap=(0.2, 0.9))
            add("one-voice", k, placed, channel=lambda a: under(a, music(len(a), nprng), 8.0))
    return items
