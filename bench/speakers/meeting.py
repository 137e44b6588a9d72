"""The meeting set: three to six people around one far-field microphone, short turns, talking over
each other, some saying little (issue 45).

Built offline with a fixed seed from the same recorded voices as the two-voice set
(``recorded_voices.VOICES``; the calibration and test halves never share a voice), and made so that
no easy cue tells the voices apart:

- the channel is taken away first, as in the two-voice set (``dataset.equalise``: every voice's
  long-term spectrum is the file's average, all band-limited alike where one voice is 8 kHz);
- every line is brought to the same level (its speech RMS, ``LEVEL_DBFS``), then convolved with the
  SAME room impulse response (one room, one source position, one microphone per file: the
  pyroomacoustics image-source model when it is installed, the bench extra; else an exponentially
  decaying noise tail, :func:`synthetic_rir`): the room and the distance are everybody's;
- turns of 0.5-15 s (log-uniform: many short ones), the next speaker drawn by how talkative each is
  (one of them says little, but at least MIN_VOICE_S in all), the next turn often starting before the last one ends, and
  backchannels ("yeah", "mm-hm", "right": the voices' shortest real lines, 0.25-1.2 s) spoken over
  another's turn; a file is redrawn until 10-25% of its speech is overlapped;
- a noise floor (pink noise, 20-30 dB under the speech) over the whole file.

The reference is drawn as the two-voice set's is (``recorded_voices.voiced`` on each dry line, before
the room: reverberation tails are not speech), so DER counts what the pipeline hears against who
actually spoke, overlap included.

    build_meeting(out_dir, half="test", seed=12, files=12) -> list[dataset.Item]
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.signal import fftconvolve

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.speakers.dataset import Item, equalise, mix, overlap_share, pink, under, write_rttm  # noqa: E402
from bench.speakers.recorded_voices import HALVES, SR, VOICES, Voices  # noqa: E402
from harness import speaker_audio as sa  # noqa: E402

CONDITION = "meeting"
VOICES_PER_FILE = (3, 6)
SECONDS = (30.0, 60.0)  # each file's length is drawn in this range
TURN_S = (0.5, 15.0)
OVERLAP_SHARE = (0.10, 0.25)  # of the speech, by the reference
BACKCHANNEL_S = (0.25, 1.2)
BACKCHANNEL_RATE = 0.35  # the share of turns of 2 s or more that someone answers under
OVERLAPPING_START = 0.45  # the share of turns that start before the last one ends
LEVEL_DBFS = -26.0  # every line's speech RMS before the room: the same far-field level for all
NOISE_SNR_DB = (20.0, 30.0)
RT60_S = (0.3, 0.7)
MIN_VOICE_S = 2.0  # the one who says little still says this much (a speaker with less is not one to count)
REDRAWS = 60


Placed = list[tuple[float, np.ndarray, str]]


@dataclass
class MeetingItem(Item):
    room: dict = field(default_factory=dict)  # what the room is (reported beside the scores)


def _speech_rms(x: np.ndarray) -> float:
    """RMS over the line's 10 ms frames within 20 dB of its loudest: its speech, not its pauses."""
    n = len(x) // 160
    if n == 0:
        return float(np.sqrt((x.astype(np.float64) ** 2).mean()) or 1e-6)
    power = (x[: n * 160].reshape(n, 160).astype(np.float64) ** 2).mean(1)
    return float(np.sqrt(power[power >= power.max() / 100].mean()))


def level(placed: Placed) -> Placed:
    """Every line at LEVEL_DBFS of speech RMS: nobody is nearer the microphone or louder."""
    target = 10 ** (LEVEL_DBFS / 20)
    return [(at, (x * (target / _speech_rms(x))).astype(np.float32), who) for at, x, who in placed]


def synthetic_rir(rt60: float, distance: float, rng: np.random.Generator) -> np.ndarray:
    """A room without pyroomacoustics: the direct path, then Gaussian noise decaying 60 dB in
    ``rt60`` (its energy against the direct path's set by the distance, as a diffuse field's is)."""
    n = int(rt60 * SR * 1.2)
    t = np.arange(n) / SR
    tail = rng.normal(0, 1, n) * np.exp(-6.9 * t / rt60)
    tail[: int(0.003 * SR)] = 0.0  # the first reflections come a few ms after the direct sound
    direct_to_reverb = 10 ** ((6.0 - 20 * math.log10(max(distance, 0.5))) / 10)
    tail *= np.sqrt(1.0 / direct_to_reverb / max((tail**2).sum(), 1e-12))
    tail[0] = 1.0
    return tail.astype(np.float32)


def room_rir(rng: random.Random, nprng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """One room's impulse response from the talkers' place to the microphone, its direct path at
    sample 0 (so the reference's times hold), and what the room is."""
    rt60 = rng.uniform(*RT60_S)
    dims = [rng.uniform(5.0, 9.0), rng.uniform(4.0, 7.0), rng.uniform(2.6, 3.2)]
    mic = [dims[0] / 2 + rng.uniform(-0.5, 0.5), dims[1] / 2 + rng.uniform(-0.5, 0.5), 0.8]
    angle = rng.uniform(0, 2 * math.pi)
    distance = rng.uniform(1.2, 2.2)
    source = [mic[0] + distance * math.cos(angle), mic[1] + distance * math.sin(angle), 1.2]
    room = {"rt60_s": round(rt60, 3), "dims_m": [round(d, 2) for d in dims], "distance_m": round(distance, 2)}
    try:
        import pyroomacoustics as pra
    except ImportError:
        return synthetic_rir(rt60, distance, nprng), {**room, "model": "synthetic"}
    absorption, order = pra.inverse_sabine(rt60, dims)
    shoebox = pra.ShoeBox(dims, fs=SR, materials=pra.Material(absorption), max_order=min(order, 30))
    shoebox.add_source(source)
    shoebox.add_microphone(mic)
    shoebox.compute_rir()
    rir = np.asarray(shoebox.rir[0][0], dtype=np.float64)
    rir = rir[max(0, int(np.argmax(np.abs(rir))) - 8) :]  # the direct path at the start (8 samples of its filter)
    rir /= np.abs(rir).max()
    return rir.astype(np.float32), {**room, "model": f"pyroomacoustics {pra.__version__}"}


class _Meeting:
    """One file's people and their turns."""

    def __init__(self, voices: Voices, who: list[str], rng: random.Random):
        self.voices, self.who, self.rng = voices, who, rng
        # how much each talks: one of them says little
        self.weight = {w: rng.uniform(0.5, 1.0) for w in who}
        self.weight[rng.choice(who)] = 0.12
        self.used: set = set()

    def _line(self, who: str, lo: float, hi: float) -> np.ndarray:
        """A line of ``lo``-``hi`` s; for a voice whose lines are all longer (the LibriVox reader's),
        the start of a longer one cut to that length."""
        try:
            return self.voices.line(who, self.rng, self.used, lo, hi)
        except RuntimeError:
            x = self.voices.line(who, self.rng, self.used, lo, 30.0)
            return x[: int(self.rng.uniform(lo, hi) * SR)]

    def _turn(self, who: str, length: float) -> np.ndarray:
        """Lines of one voice joined by short pauses (under the reference's 0.3 s, mostly) until
        about ``length`` seconds."""
        rng = self.rng
        if length <= 1.5:
            return self._line(who, TURN_S[0], 1.5)
        parts: list[np.ndarray] = []
        total = 0.0
        while total < length - 0.8:
            if parts:
                parts.append(np.zeros(int(rng.uniform(0.05, 0.35) * SR), dtype=np.float32))
            parts.append(self._line(who, 0.5, max(min(length - total, 8.0), 1.6)))
            total = sum(len(p) for p in parts) / SR
        return np.concatenate(parts)

    def draw(self, seconds: float) -> Placed:
        rng = self.rng
        placed: Placed = []
        at, previous = 0.5, None
        busy = {w: 0.0 for w in self.who}  # nobody talks over themselves
        while at < seconds - 1.0:
            choices = [w for w in self.who if w != previous and busy[w] <= at]
            if not choices:
                at = min(busy[w] for w in self.who if w != previous)
                continue
            who = rng.choices(choices, weights=[self.weight[w] for w in choices])[0]
            length = min(math.exp(rng.uniform(math.log(TURN_S[0]), math.log(TURN_S[1]))), seconds - at)
            x = self._turn(who, max(length, TURN_S[0]))[: int(TURN_S[1] * SR)]
            placed.append((at, x, who))
            duration = len(x) / SR
            busy[who] = at + duration + 0.1
            if duration >= 2.0 and rng.random() < BACKCHANNEL_RATE:
                when = at + rng.uniform(0.5, duration - 0.5)
                others = [w for w in self.who if w != who and busy[w] <= when]
                if others:
                    other = rng.choice(others)
                    short = self.voices.line(other, rng, self.used, *BACKCHANNEL_S)
                    placed.append((when, short, other))
                    busy[other] = when + len(short) / SR + 0.1
            if rng.random() < OVERLAPPING_START:
                gap = -rng.uniform(0.2, min(2.0, 0.6 * duration))
            else:
                gap = rng.uniform(0.1, 0.8)
            previous = who
            at = max(at + duration + gap, at + 0.3)
        return [(s, x, w) for s, x, w in placed if s + 0.3 < seconds]


def _in_room(placed: Placed, rir: np.ndarray) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """The dry lines' reference turns, and the mix of every line convolved with the one room."""
    _, turns = mix(placed)
    wet = [(at, fftconvolve(x, rir)[: len(x) + int(0.5 * SR)].astype(np.float32), who) for at, x, who in placed]
    audio, _ = mix(wet)
    return audio, turns


def build_meeting(
    out: Path, *, half: str = "test", seed: int = 12, files: int = 12, seconds: tuple[float, float] = SECONDS
) -> list[MeetingItem]:
    """Write one half's meeting WAVs and RTTMs under ``out`` (``meeting-NN``); returns the items.
    Deterministic in (half, seed, files, seconds)."""
    if half not in HALVES:
        raise ValueError(f"half is one of {HALVES}")
    out.mkdir(parents=True, exist_ok=True)
    voices = Voices(out.parent / "bench-speakers-cache")
    names = [v.name for v in VOICES if v.half == half]
    rng = random.Random(f"meeting-{seed}-{half}")
    nprng = np.random.default_rng([seed, HALVES.index(half), 45])
    items = []
    for k in range(files):
        n = rng.randint(*VOICES_PER_FILE)
        who = rng.sample(names, n)
        length = rng.uniform(*seconds)
        meeting = _Meeting(voices, who, rng)
        for _ in range(REDRAWS):  # redrawn until 10-25% of the speech is overlapped
            placed = meeting.draw(length)
            turns = mix(placed)[1]
            said = {w: sum(e - s for s, e, v in turns if v == w) for w in who}
            if OVERLAP_SHARE[0] <= overlap_share(turns) <= OVERLAP_SHARE[1] and min(said.values()) >= MIN_VOICE_S:
                break
        else:
            raise RuntimeError(f"meeting {k}: no draw with 10-25% overlap and every voice heard")
        placed = level(equalise(placed, narrowband=any(voices.narrowband(w) for _, _, w in placed)))
        rir, room = room_rir(rng, nprng)
        audio, turns = _in_room(placed, rir)
        audio = under(audio, pink(len(audio), nprng), rng.uniform(*NOISE_SNR_DB))
        peak = float(np.abs(audio).max()) or 1.0
        audio = audio * (0.9 / peak) if peak > 0.9 else audio
        name = f"{CONDITION}-{k:02d}"
        wav, rttm = out / f"{name}.wav", out / f"{name}.rttm"
        sa.write_wav(wav, audio)
        write_rttm(rttm, name, turns)
        items.append(MeetingItem(name, CONDITION, wav, rttm, turns, room=room))
    return items
