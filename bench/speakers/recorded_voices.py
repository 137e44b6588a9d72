"""The recorded voices of the diarization bench: who they are, which half each belongs to, and
their lines as 16 kHz arrays (Festival's synthesised once into a cache). bench/speakers/dataset.py
lays them out into files."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass
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

# Asterisk's sound folders hold more than the voice: digital silences of 1-10 s (``silence/``), beeps,
# two-tone signals, the conference join/leave chimes and a recording of monkeys. They are not speech,
# yet drawn as a voice's lines they were marked as its speech in the reference.
ASTERISK_NOT_SPEECH = {
    "beep.wav",
    "beeperr.wav",
    "ascending-2tone.wav",
    "descending-2tone.wav",
    "confbridge-join.wav",
    "confbridge-leave.wav",
    "tt-monkeys.wav",
}


def _asterisk_speech(folder: Path) -> list[Path]:
    """The prompt recordings of one Asterisk sound folder: its tones, chimes and silences left out."""
    return sorted(
        p
        for p in folder.rglob("*.wav")
        if p.name not in ASTERISK_NOT_SPEECH and "silence" not in p.relative_to(folder).parts
    )


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
                self.paths[v.name] = [p for folder in v.source for p in _asterisk_speech(ASTERISK / folder)]
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
            return sa.trim(read_wav(path))
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
                start, end = max(voiced(x), key=lambda span: span[1] - span[0])
                if (end - start) / SR >= lo:
                    length = int(rng.uniform(lo, min(hi, (end - start) / SR)) * SR)
                    return x[start : start + length]
        raise RuntimeError(f"no line of {voice} between {lo} and {hi} s")

    def pitch(self, voice: str, n: int = 12) -> float:
        """Median F0 (Hz) over a few lines, by autocorrelation of voiced 40 ms frames (cached)."""
        store = self.cache / "pitch.json"
        known = json.loads(store.read_text()) if store.exists() else {}
        # keyed by the voice's lines too: the lines drawn here (and so the close-pitch pairs) change
        # when the voice's list of recordings does
        key = f"{voice}/{len(self.paths[voice])}"
        if key in known:
            return known[key]
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
        known[key] = float(np.median(f0s))
        store.write_text(json.dumps(known, indent=1))
        return known[key]


def read_wav(path: Path) -> np.ndarray:
    import wave

    with wave.open(str(path)) as w:
        assert w.getframerate() == SR and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0


# ---------------------------------------------------------------------------------------------
# Laying lines out in time
# ---------------------------------------------------------------------------------------------


# A silence this long inside a line ends a reference turn: NIST's rich-transcription evaluations
# bridge pauses under 0.3 s and split at longer ones.
PAUSE_S = 0.3
SILENCE_DB = 35.0  # below the line's loudest 10 ms by this much is silence (the level sa.trim uses)


def voiced(x: np.ndarray) -> list[tuple[int, int]]:
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
