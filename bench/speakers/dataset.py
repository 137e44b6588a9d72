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

import json
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
ASTERISK = Path("/usr/share/asterisk/sounds")
HALVES = ("calibration", "test")


@dataclass(frozen=True)
class Voice:
    name: str
    kind: str  # fillets, librivox, asterisk, festival
    gender: str  # f or m, from the package's description (fillets and LibriVox: by pitch)
    half: str
    source: tuple[str, ...]  # fillets: (lang, fish); asterisk: folders; festival: (voice, language)


VOICES = [
    Voice("cs-m", "fillets", "f", "test", ("cs", "m")),
    Voice("cs-v", "fillets", "m", "calibration", ("cs", "v")),
    Voice("librivox", "librivox", "m", "calibration", ()),
    Voice("allison", "asterisk", "f", "calibration", ("en_US_f_Allison", "es_MX_f_Allison")),
    Voice("june", "asterisk", "f", "test", ("fr_CA_f_June",)),
    Voice("carlo", "asterisk", "m", "test", ("it_IT_m_Carlo",)),
    Voice("ivr-ru", "asterisk", "f", "test", ("ru_RU_f_IvrvoiceRU",)),
    Voice("kal", "festival", "m", "test", ("kal_diphone", "en")),
    Voice("ked", "festival", "m", "calibration", ("ked_diphone", "en")),
    Voice("slt", "festival", "f", "test", ("cmu_us_slt_arctic_hts", "en")),
    Voice("dita", "festival", "f", "calibration", ("czech_dita", "cs")),
    Voice("machac", "festival", "m", "calibration", ("czech_machac", "cs")),
    Voice("ph", "festival", "m", "test", ("czech_ph", "cs")),
    Voice("lp", "festival", "f", "test", ("lp_diphone", "it")),
    Voice("pc", "festival", "m", "calibration", ("pc_diphone", "it")),
    Voice("lj", "festival", "f", "calibration", ("suo_fi_lj_diphone", "fi")),
    Voice("mv", "festival", "m", "test", ("hy_fi_mv_diphone", "fi")),
    Voice("nsh", "festival", "m", "calibration", ("msu_ru_nsh_clunits", "ru")),
]
BY_NAME = {v.name: v for v in VOICES}

# What Festival's voices say, in their own languages (and the encodings their lexicons read)
FESTIVAL_TEXT = {
    "en": [
        "Good morning, how are you today?",
        "I am fine, thank you. The weather is lovely.",
        "Did you see the news about the new bridge?",
        "Yes, they say it will open next spring, if the money holds.",
        "That will make my trip to work much shorter.",
        "Shall we have lunch together on Friday?",
        "Gladly, there is a nice place near the station.",
        "Then it is settled, see you at noon.",
        "I think we should check the numbers again before the meeting.",
        "Right.",
        "Okay.",
        "Sure.",
        "The meeting was moved to Thursday afternoon.",
        "Could you send me the report by the end of the week?",
        "We lost two days because the delivery came late.",
        "My sister lives in a small town by the sea, and she loves it.",
        "Please remember to lock the door when you leave the office.",
        "The train was delayed again this morning, so I took the bus.",
        "I have never seen so many people in the square at once.",
        "Let us start with the first point on the list.",
        "The children planted three apple trees behind the school last year.",
        "He said that the results would be ready on Monday.",
        "Thank you.",
        "Exactly.",
    ],
    "it": [
        "Buongiorno, come stai oggi?",
        "Sto bene, grazie. Il tempo e bello.",
        "Hai visto le notizie sul nuovo ponte?",
        "Dicono che aprira la prossima primavera.",
        "La riunione e stata spostata a giovedi pomeriggio.",
        "Potresti mandarmi la relazione entro la fine della settimana?",
        "Abbiamo perso due giorni perche la consegna e arrivata tardi.",
        "Mia sorella vive in una piccola citta sul mare.",
        "Ricordati di chiudere la porta quando esci dall'ufficio.",
        "Il treno era di nuovo in ritardo stamattina, cosi ho preso l'autobus.",
        "Va bene.",
        "Certo.",
        "Grazie mille.",
        "Cominciamo dal primo punto della lista.",
        "I bambini hanno piantato tre alberi di mele dietro la scuola.",
        "Ha detto che i risultati saranno pronti lunedi.",
    ],
    "cs": [
        "Dobré ráno, jak se dnes máte?",
        "Mám se dobře, děkuji. Venku je krásně.",
        "Viděl jste zprávy o novém mostě?",
        "Prý ho otevřou příští jaro.",
        "Schůzka byla přesunuta na čtvrtek odpoledne.",
        "Mohl byste mi poslat zprávu do konce týdne?",
        "Ztratili jsme dva dny, protože dodávka přišla pozdě.",
        "Moje sestra bydlí v malém městě u moře.",
        "Nezapomeňte zamknout dveře, až budete odcházet z kanceláře.",
        "Vlak měl dnes ráno zase zpoždění, tak jsem jel autobusem.",
        "Dobře.",
        "Jistě.",
        "Děkuji.",
        "Začněme prvním bodem seznamu.",
        "Děti loni zasadily za školou tři jabloně.",
        "Řekl, že výsledky budou hotové v pondělí.",
    ],
    "fi": [
        "Hyvää huomenta, mitä sinulle kuuluu tänään?",
        "Kiitos hyvää. Ilma on kaunis.",
        "Näitkö uutiset uudesta sillasta?",
        "Sanotaan, että se avataan ensi keväänä.",
        "Kokous siirrettiin torstai-iltapäivään.",
        "Voisitko lähettää raportin viikon loppuun mennessä?",
        "Menetimme kaksi päivää, koska toimitus tuli myöhässä.",
        "Siskoni asuu pienessä kaupungissa meren rannalla.",
        "Muista lukita ovi, kun lähdet toimistolta.",
        "Juna oli taas myöhässä tänä aamuna, joten menin bussilla.",
        "Selvä.",
        "Aivan.",
        "Kiitos.",
        "Aloitetaan listan ensimmäisestä kohdasta.",
        "Lapset istuttivat koulun taakse kolme omenapuuta.",
        "Hän sanoi, että tulokset ovat valmiita maanantaina.",
    ],
    "ru": [
        "Доброе утро, как у вас дела?",
        "Спасибо, хорошо. Погода прекрасная.",
        "Вы видели новости о новом мосте?",
        "Говорят, его откроют следующей весной.",
        "Встреча перенесена на вечер четверга.",
        "Не могли бы вы прислать отчёт до конца недели?",
        "Мы потеряли два дня, потому что поставка опоздала.",
        "Моя сестра живёт в маленьком городе у моря.",
        "Не забудьте закрыть дверь, когда будете уходить из офиса.",
        "Поезд сегодня утром снова опоздал, поэтому я поехал на автобусе.",
        "Хорошо.",
        "Конечно.",
        "Спасибо.",
        "Начнём с первого пункта списка.",
        "Дети посадили за школой три яблони.",
        "Он сказал, что результаты будут готовы в понедельник.",
    ],
}
FESTIVAL_ENCODING = {"en": "ascii", "it": "latin-1", "cs": "iso-8859-2", "fi": "latin-1", "ru": "utf-8"}


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
        for v in VOICES:
            if v.kind == "fillets":
                self.paths[v.name] = sa.clips(*v.source)
            elif v.kind == "librivox":
                self.paths[v.name] = sorted(LIBRIVOX.glob("*.wav"))
            elif v.kind == "asterisk":
                self.paths[v.name] = sorted(p for folder in v.source for p in (ASTERISK / folder).rglob("*.wav"))
            else:
                self.paths[v.name] = self._festival(v)
            if not self.paths[v.name]:
                raise RuntimeError(
                    f"no recordings of {v.name}: `make install-bench` installs them (bin/install-system-packages bench)"
                )
        self._lengths: dict[Path, float] = {}

    def _festival(self, voice: Voice) -> list[Path]:
        """Every line of the voice's language, synthesised once (one festival run) into the cache."""
        festival_voice, lang = voice.source
        folder = self.cache / "festival" / festival_voice
        lines = FESTIVAL_TEXT[lang]
        paths = [folder / f"{k:02d}.wav" for k in range(len(lines))]
        if not all(p.exists() for p in paths):
            folder.mkdir(parents=True, exist_ok=True)
            script = [f"(voice_{festival_voice})"]
            for text, path in zip(lines, paths, strict=True):
                quoted = text.replace("\\", "").replace('"', "")
                script.append(f'(utt.save.wave (utt.synth (Utterance Text "{quoted}")) "{path}.raw" \'riff)')
            scm = folder / "lines.scm"
            scm.write_bytes("\n".join(script).encode(FESTIVAL_ENCODING[lang]))
            subprocess.run(["festival", "--batch", str(scm)], check=True, capture_output=True)
            for path in paths:
                raw = Path(f"{path}.raw")
                subprocess.run(
                    ["ffmpeg", "-v", "error", "-y", "-i", str(raw), "-ar", str(SR), "-ac", "1", str(path)], check=True
                )
                raw.unlink()
        return paths

    def narrowband(self, voice: str) -> bool:
        return BY_NAME[voice].kind == "asterisk"  # 8 kHz recordings

    def load(self, voice: str, path: Path) -> np.ndarray:
        if BY_NAME[voice].kind == "festival":
            return sa.trim(_read_wav(path))
        return sa.decode(path, self.cache)  # ffmpeg to 16 kHz, trimmed, cached

    def line(self, voice: str, rng: random.Random, used: set, lo: float = 0.3, hi: float = 8.0) -> np.ndarray:
        paths = self.paths[voice]
        if hi <= 1.5:  # a backchannel: among the shortest lines
            paths = sorted(paths, key=lambda p: p.stat().st_size)[: max(5, len(paths) // 6)]
        for attempt in range(400):
            path = rng.choice(paths)
            if (voice, path) in used and attempt < 300:  # no line twice in a file while others are left
                continue
            x = self.load(voice, path)
            if lo <= len(x) / SR <= hi:
                used.add((voice, path))
                return x
            if attempt >= 100 and hi <= 1.5:
                # a voice with no line this short (the LibriVox reader): a stretch of speech cut from one
                start, end = max(_voiced(x), key=lambda span: span[1] - span[0])
                if (end - start) / SR >= lo:
                    length = int(rng.uniform(lo, min(hi, (end - start) / SR)) * SR)
                    return x[start : start + length]
        raise RuntimeError(f"no line of {voice} between {lo} and {hi} s")

    def pitch(self, voice: str, n: int = 12) -> float:
        """Median F0 (Hz) over a few lines, by autocorrelation of voiced 40 ms frames (cached)."""
        store = self.cache / "pitch.json"
        known = json.loads(store.read_text()) if store.exists() else {}
        if voice in known:
            return known[voice]
        rng = random.Random(0)
        f0s = []
        for _ in range(n):
            x = self.line(voice, rng, set(), 0.5, 12.0)
            for k in range(0, len(x) - 640, 320):
                frame = x[k : k + 640] - x[k : k + 640].mean()
                if np.sqrt((frame**2).mean()) < 0.02:
                    continue
                ac = np.correlate(frame, frame, "full")[639:]
                lag_lo, lag_hi = SR // 400, SR // 60
                lag = lag_lo + int(np.argmax(ac[lag_lo:lag_hi]))
                if ac[lag] > 0.4 * ac[0]:
                    f0s.append(SR / lag)
        known[voice] = float(np.median(f0s))
        store.write_text(json.dumps(known, indent=1))
        return known[voice]


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
    work.mkdir(parents=True, exist_ok=True)
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


def build(out: Path, *, half: str = "test", seed: int = 12, per_condition: int = 6, long_files: int = 1) -> list[Item]:
    """Write one half's WAVs and RTTMs under ``out``; returns the items (condition order)."""
    if half not in HALVES:
        raise ValueError(f"half is one of {HALVES}")
    out.mkdir(parents=True, exist_ok=True)
    voices = Voices(out.parent / "bench-speakers-cache")
    rng = random.Random(f"{seed}-{half}")
    nprng = np.random.default_rng(seed + (half == "test"))
    names = [v.name for v in VOICES if v.half == half]
    close = close_pitch_pairs(voices, names)
    items: list[Item] = []

    def add(condition: str, k: int, placed, channel=None) -> None:
        placed = equalise(placed, narrowband=any(voices.narrowband(who) for _, _, who in placed))
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
        pair = rng.sample(names, 2)
        add("two-voices", k, dialogue(voices, pair, rng, lines=rng.randint(14, 24)))
    for k in range(per_condition):
        add("same-gender-close-pitch", k, dialogue(voices, list(close[k % len(close)]), rng, lines=rng.randint(14, 24)))
    for k in range(per_condition):
        pair = rng.sample(names, 2)
        placed = dialogue(
            voices, pair, rng, lines=rng.randint(18, 28), gap=(0.05, 0.5), line_len=(0.4, 5.0), backchannels=0.35
        )
        add("short-turns-backchannels", k, placed)
    for k in range(per_condition):
        pair = rng.sample(names, 2)
        for _ in range(20):  # redraw until 10-20% of the speech is overlapped
            placed = dialogue(voices, pair, rng, lines=rng.randint(14, 22), gap=(-1.2, 0.4))
            if 0.10 <= _overlap_share(_mix(placed)[1]) <= 0.20:
                break
        add("overlap-10-20", k, placed)
    for k in range(per_condition):
        pair = list(close[k % len(close)])
        placed = dialogue(voices, pair, rng, lines=rng.randint(14, 24), gap=(-0.3, 0.8), line_len=(0.4, 6.0))
        add("telephone-close-pitch", k, placed, channel=lambda a: telephone(a, out / "work"))
    for k in range(per_condition):
        pair = rng.sample(names, 2)
        snr = rng.uniform(10, 20)
        bed = "music" if k % 2 else "noise"
        placed = dialogue(voices, pair, rng, lines=rng.randint(14, 24))

        def channel(a, snr=snr, bed=bed):
            return under(a, music(len(a), nprng) if bed == "music" else _pink(len(a), nprng), snr)

        add("noise-music", k, placed, channel=channel)
    for k in range(per_condition):
        n = 3 + k % 4  # 3, 4, 5, 6
        add(
            "many-speakers",
            k,
            dialogue(voices, rng.sample(names, n), rng, lines=rng.randint(8 * n, 10 * n), gap=(0.1, 0.9)),
        )
    for k in range(long_files):
        a, b, c = rng.sample(names, 3)
        used: set = set()
        first = dialogue(voices, [a, b], rng, lines=40, used=used)  # about 2 minutes
        at = max(s + len(x) / SR for s, x, _ in first) + 1.0
        middle = dialogue(voices, [a, c], rng, lines=200, start=at, used=used)  # about 10 minutes
        at = max(s + len(x) / SR for s, x, _ in middle) + 1.0
        last = dialogue(voices, [a, b], rng, lines=40, start=at, used=used)  # b returns
        add("long-returning", k, first + middle + last)
    one_voice_kinds = ["monologue", "lecture", "over-music"]
    for k in range(max(per_condition, len(names))):
        kind = one_voice_kinds[k % 3]
        who = names[k % len(names)]
        if kind == "monologue":
            add("one-voice", k, dialogue(voices, [who], rng, lines=rng.randint(20, 40), gap=(0.2, 0.9)))
        elif kind == "lecture":
            add("one-voice", k, dialogue(voices, [who], rng, lines=rng.randint(20, 40), gap=(0.5, 6.0)))
        else:
            placed = dialogue(voices, [who], rng, lines=rng.randint(20, 30), gap=(0.2, 0.9))
            add("one-voice", k, placed, channel=lambda a: under(a, music(len(a), nprng), 8.0))
    return items
