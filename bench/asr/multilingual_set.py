"""The multilingual evaluation set: built offline from packages installed here.

Real recordings where this machine has them:

* English: the LibriVox clips shipped with pocketsphinx (``/usr/share/pocketsphinx/test/data/librivox``)
  and their transcription;
* Dutch and Czech: the voice actors of Fish Fillets NG (``fillets-ng-data-nl`` / ``-cs``); the text they
  speak is in the game's level scripts (package ``fillets-ng-data``, ``script/<level>/dialogs_<lang>.lua``),
  of which the lines used are copied in ``fillets_lines.tsv``.

Festival's voices where Debian has one (Italian, Czech, Russian, Finnish, Catalan): recordings of a
human speaker cut into diphones (or an HTS model trained on one), far nearer to people than espeak-ng's
formant synthesis; the same three sentences, the numbers read as words. Bench-only packages:
``apt-get install festival festvox-italp16k festvox-czech-dita festvox-ru festvox-suopuhe-lj
festvox-ca-ona-hts``; a voice that is not installed is skipped.

espeak-ng for every language, in three voice variants each (the default male voice, ``+f3``, and ``+m3``
read slower): three sentences of different kinds (a greeting, counting to ten, a long sentence), about
10 s. Plus files that switch language mid-way and long files (> 30 s, several Whisper windows).

Bed variants of a clip (``beds``): ``silence`` (4 s of silence before the speech, 5 s between its
first and second sentence, 3 s after: Whisper writes text into silence, and a long pause cuts a
batched chunk), ``music`` (3 s of music alone, then the speech over music 12 dB below it, then 2 s
of music: Drascula's soundtrack, ``drascula-music``). A bed variant keeps its clip's reference.

Every clip is a 16 kHz mono WAV with its reference text and language(s); ``build(folder)`` writes them
and returns the list.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

LIBRIVOX = "/usr/share/pocketsphinx/test/data/librivox"
FILLETS_SOUND = "/usr/share/games/fillets-ng/sound"
FILLETS_LINES = Path(__file__).with_name("fillets_lines.tsv")
VARIANTS = ("", "+f3", "+m3")  # espeak-ng default voice, a female variant, a male one read slower
SPEEDS = {"": 170, "+f3": 170, "+m3": 130}  # words a minute
# Music laid under speech (the bed variants): Drascula's soundtrack (Debian's drascula-music, DFSG
# free, in main), real recorded music with instruments and beats, not tones made here.
MUSIC = "/usr/share/scummvm/drascula/audio"
BED_SNR_DB = 12.0  # speech this much louder than the music under it

# Languages compared by characters, not words (no spaces between words).
CHARACTER_LANGUAGES = {"ja", "zh"}

# language -> espeak-ng voice, greeting, long sentence; ``say`` overrides what espeak reads when its
# dictionary lacks the script used in the reference (Japanese kanji: espeak reads kana only).
SENTENCES: dict[str, dict[str, str]] = {
    "de": {
        "voice": "de",
        "greeting": "Guten Morgen, wie geht es Ihnen?",
        "long": "Victor jagt zwölf Boxkämpfer quer über den großen Sylter Deich.",
    },
    "es": {
        "voice": "es",
        "greeting": "Hola, buenos días, ¿cómo estás?",
        "long": "El veloz murciélago hindú comía feliz cardillo y kiwi.",
    },
    "fr": {
        "voice": "fr-fr",
        "greeting": "Bonjour, comment allez-vous ?",
        "long": "Portez ce vieux whisky au juge blond qui fume.",
    },
    "it": {
        "voice": "it",
        "greeting": "Ciao, buongiorno, come stai?",
        "long": "Quel vituperabile xenofobo zelante assaggia il whisky ed esclama alleluia.",
    },
    "pt": {
        "voice": "pt",
        "greeting": "Olá, bom dia, como vai você?",
        "long": "Um pequeno jabuti xereta viu dez cegonhas felizes.",
    },
    "pl": {
        "voice": "pl",
        "greeting": "Dzień dobry, jak się masz?",
        "long": "Pchnąć w tę łódź jeża lub ośm skrzyń fig.",
    },
    "ru": {
        "voice": "ru",
        "greeting": "Здравствуйте, как у вас дела?",
        "long": "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    },
    "tr": {
        "voice": "tr",
        "greeting": "Merhaba, nasılsınız?",
        "long": "Pijamalı hasta yağız şoföre çabucak güvendi.",
    },
    "sv": {
        "voice": "sv",
        "greeting": "Hej, hur mår du idag?",
        "long": "Flygande bäckasiner söka vila på mjuka tuvor.",
    },
    "nl": {
        "voice": "nl",
        "greeting": "Goedemorgen, hoe gaat het met je?",
        "long": "Pa's wijze lynx bezag vroom het fikse aquaduct.",
    },
    "cs": {
        "voice": "cs",
        "greeting": "Dobrý den, jak se máte?",
        "long": "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    },
    "hi": {
        "voice": "hi",
        "greeting": "नमस्ते, आप कैसे हैं?",
        "long": "मैं हर सुबह अपने दोस्तों के साथ पार्क में टहलने जाता हूँ।",
    },
    "fi": {
        "voice": "fi",
        "greeting": "Hyvää huomenta, mitä kuuluu?",
        "long": "Tänään on kaunis päivä, ja menemme ystävien kanssa rannalle uimaan.",
    },
    "ca": {
        "voice": "ca",
        "greeting": "Bon dia, com estàs?",
        "long": "Avui fa molt bon temps i anirem a passejar pel parc amb els amics.",
    },
    "ja": {
        "voice": "ja",
        "greeting": "こんにちは、お元気ですか。",
        "greeting_say": "こんにちは、おげんきですか。",
        "count": "1、2、3、4、5、6、7、8、9、10。",
        "count_say": "いち、に、さん、よん、ご、ろく、なな、はち、きゅう、じゅう。",
        "long": "今日はとても良い天気なので、友達と一緒に公園へ散歩に行きました。",
        "long_say": "きょうはとてもいいてんきなので、ともだちといっしょにこうえんへさんぽにいきました。",
    },
    "zh": {
        "voice": "cmn",
        "greeting": "你好，你今天好吗？",
        "count": "一、二、三、四、五、六、七、八、九、十。",
        "long": "我每天早上七点起床，然后和家人一起吃早饭。",
    },
}
COUNT = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10."

# Number words 1..10 per language: the reference counts in digits, Whisper writes either.
NUMBER_WORDS: dict[str, list[str]] = {
    "en": "one two three four five six seven eight nine ten".split(),
    "de": "eins zwei drei vier fünf sechs sieben acht neun zehn".split(),
    "es": "uno dos tres cuatro cinco seis siete ocho nueve diez".split(),
    "fr": "un deux trois quatre cinq six sept huit neuf dix".split(),
    "it": "uno due tre quattro cinque sei sette otto nove dieci".split(),
    "pt": "um dois três quatro cinco seis sete oito nove dez".split(),
    "pl": "jeden dwa trzy cztery pięć sześć siedem osiem dziewięć dziesięć".split(),
    "ru": "один два три четыре пять шесть семь восемь девять десять".split(),
    "tr": "bir iki üç dört beş altı yedi sekiz dokuz on".split(),
    "sv": "ett två tre fyra fem sex sju åtta nio tio".split(),
    "nl": "een twee drie vier vijf zes zeven acht negen tien".split(),
    "cs": "jedna dva tři čtyři pět šest sedm osm devět deset".split(),
    "hi": "एक दो तीन चार पांच छह सात आठ नौ दस".split(),
    "fi": "yksi kaksi kolme neljä viisi kuusi seitsemän kahdeksan yhdeksän kymmenen".split(),
    "ca": "un dos tres quatre cinc sis set vuit nou deu".split(),
    "ja": "一 二 三 四 五 六 七 八 九 十".split(),
    "zh": "一 二 三 四 五 六 七 八 九 十".split(),
}


@dataclass
class Clip:
    name: str
    language: str  # the language spoken most (what detection should find); "" for no single one
    kind: str  # short | real | switch | long
    path: Path
    reference: str
    languages: tuple[str, ...] = ()


def _run(args: list[str]) -> None:
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _to_wav(source: str | Path, out: Path) -> None:
    _run(["ffmpeg", "-v", "error", "-y", "-i", str(source), "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(out)])


def _concat(parts: list[Path], out: Path, gap: float = 0.6) -> None:
    """Join WAVs with ``gap`` seconds of silence between them (and 0.3 s around)."""
    with tempfile.TemporaryDirectory() as tmp:
        silence = Path(tmp) / "gap.wav"
        _run(
            ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", str(gap)]
            + ["-c:a", "pcm_s16le", str(silence)]
        )
        edge = Path(tmp) / "edge.wav"
        _run(
            ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "0.3"]
            + ["-c:a", "pcm_s16le", str(edge)]
        )
        files = [edge]
        for i, part in enumerate(parts):
            normalised = Path(tmp) / f"{i}.wav"
            _to_wav(part, normalised)
            files += [normalised, silence] if i < len(parts) - 1 else [normalised]
        files.append(edge)
        listing = Path(tmp) / "list.txt"
        listing.write_text("".join(f"file '{f}'\n" for f in files))
        _run(
            ["ffmpeg", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", str(listing)]
            + ["-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(out)]
        )


def _speak(text: str, voice: str, out: Path, speed: int = 170) -> None:
    _run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(out), text])


# language -> Festival voices (name, the text encoding the voice reads). Hindi's NSK voice was tried and
# left out: Whisper hears it as Urdu, in Arabic script.
FESTIVAL_VOICES: dict[str, list[tuple[str, str]]] = {
    "it": [("lp_diphone", "iso-8859-1"), ("pc_diphone", "iso-8859-1")],
    "cs": [("czech_dita", "iso-8859-2")],
    "ru": [("msu_ru_nsh_clunits", "utf-8")],
    "fi": [("suo_fi_lj_diphone", "iso-8859-1")],
    "ca": [("upc_ca_ona_hts", "iso-8859-1")],
}


def _festival_installed(voice: str) -> bool:
    return shutil.which("text2wave") is not None and bool(glob.glob(f"/usr/share/festival/voices/*/{voice}"))


def _festival(text: str, voice: str, encoding: str, out: Path) -> None:
    with tempfile.NamedTemporaryFile("wb", suffix=".txt") as f:
        f.write(text.encode(encoding))
        f.flush()
        raw = out.with_suffix(".raw.wav")
        _run(["text2wave", "-eval", f"(voice_{voice})", "-o", str(raw), f.name])
        _to_wav(raw, out)
        raw.unlink()


def _sentences(language: str) -> list[tuple[str, str]]:
    """(reference, what espeak reads) for the greeting, counting and the long sentence."""
    s = SENTENCES[language]
    return (
        [(s[k], s.get(f"{k}_say", s[k])) for k in ("greeting", "count", "long")]
        if "count" in s
        else [
            (s["greeting"], s.get("greeting_say", s["greeting"])),
            (COUNT, COUNT),
            (s["long"], s.get("long_say", s["long"])),
        ]
    )


def _join(language: str, texts: list[str]) -> str:
    return ("" if language in CHARACTER_LANGUAGES else " ").join(texts)


def _librivox() -> list[tuple[Path, str]]:
    refs = {}
    for line in open(os.path.join(LIBRIVOX, "transcription")):
        m = re.match(r"\s*<s>(.*)</s>\s*\((.+)\)\s*$", line)
        if m:
            refs[m.group(2).strip()] = m.group(1).strip()
    return [(Path(c), refs[Path(c).stem]) for c in sorted(glob.glob(os.path.join(LIBRIVOX, "*.wav")))]


def _fillets(language: str) -> list[tuple[Path, str]]:
    lines = []
    with open(FILLETS_LINES, encoding="utf-8") as f:
        for row in csv.reader((r for r in f if not r.startswith("#")), delimiter="\t"):
            level, line, lang, text = row
            sound = Path(FILLETS_SOUND) / level / lang / f"{line}.ogg"
            if lang == language and sound.exists():
                lines.append((sound, text))
    return lines


def build(
    folder: Path,
    *,
    languages: tuple[str, ...] | None = None,
    beds: tuple[str, ...] = (),
    beds_on_every_clip: bool = False,
    switching: bool = True,
) -> list[Clip]:
    """The set's clips, written into ``folder``. ``languages``: the espeak-ng languages (all of
    SENTENCES when None); ``beds``: the bed variants made ("silence", "music"), of the first voice of
    each language and source, or of every short and real clip with ``beds_on_every_clip``."""
    folder.mkdir(parents=True, exist_ok=True)
    spoken: dict[tuple[str, str], list[Path]] = {}  # (language, variant) -> sentence WAVs
    clips = _espeak_clips(folder, spoken, languages or tuple(SENTENCES))
    clips += _festival_clips(folder)
    librivox = _librivox()
    clips += _real_clips(folder, librivox)
    if switching:
        clips += _switching_clips(folder)
    clips += _long_clips(folder, librivox, spoken)
    bedded: list[Clip] = []
    sources: set[tuple[str, str]] = set()
    for clip in clips:
        if clip.kind not in ("short", "real"):
            continue
        source = (clip.language, clip.name.split("-")[1])
        if not beds_on_every_clip and source in sources:
            continue
        sources.add(source)
        bedded += [_bedded(clip, bed, folder) for bed in beds]
    return clips + bedded


def _samples(path: Path):
    import numpy as np

    with wave.open(str(path)) as f:
        return np.frombuffer(f.readframes(f.getnframes()), dtype="<i2").astype(np.float32) / 32768


def _write(path: Path, samples) -> None:
    import numpy as np

    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(16000)
        f.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def _music(seconds: float, folder: Path, seed: int):
    """``seconds`` of Drascula's soundtrack, from a track and offset chosen by ``seed``."""
    tracks = sorted(glob.glob(os.path.join(MUSIC, "*.ogg")))
    if not tracks:
        raise FileNotFoundError(
            f"no music in {MUSIC}: apt-get install drascula-music (bin/install-system-packages bench)"
        )
    track = tracks[seed % len(tracks)]
    out = folder / f"music-{seed}.wav"
    _run(
        ["ffmpeg", "-v", "error", "-y", "-ss", str(5 + seed % 20), "-t", f"{seconds:.2f}", "-i", track]
        + ["-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(out)]
    )
    samples = _samples(out)
    out.unlink()
    return samples


def _bedded(clip: Clip, bed: str, folder: Path) -> Clip:
    """The clip with silence around and inside it, or over a music bed."""
    import numpy as np

    speech = _samples(clip.path)
    rate = 16000
    if bed == "silence":
        # the longest pause inside the speech (between two sentences, as _concat joins them) grows to 5 s
        quiet = np.convolve(np.abs(speech) > 1e-3, np.ones(rate // 10), "same") == 0
        edges = np.flatnonzero(np.diff(np.concatenate([[0], quiet.astype(int), [0]])))
        pauses = [(a, b) for a, b in zip(edges[::2], edges[1::2], strict=True) if 0 < a and b < len(speech)]
        middle = max(pauses, key=lambda p: p[1] - p[0], default=(len(speech) // 2, len(speech) // 2))
        cut = (middle[0] + middle[1]) // 2
        zeros = lambda seconds: np.zeros(int(seconds * rate), dtype=np.float32)  # noqa: E731
        mixed = np.concatenate([zeros(4), speech[:cut], zeros(5), speech[cut:], zeros(3)])
    elif bed == "music":
        lead, tail = 3 * rate, 2 * rate
        music = _music((lead + len(speech) + tail) / rate + 0.5, folder, seed=sum(map(ord, clip.name)))
        music = np.resize(music, lead + len(speech) + tail)
        voiced = speech[np.abs(speech) > 1e-3]
        power = float((voiced**2).mean()) if len(voiced) else 1e-4
        music = music * np.sqrt(power / max(float((music**2).mean()), 1e-9) / 10 ** (BED_SNR_DB / 10))
        mixed = music.copy()
        mixed[lead : lead + len(speech)] += speech
    else:
        raise ValueError(f"no bed named {bed!r}")
    name = f"{clip.name}-{bed}"
    path = folder / f"{name}.wav"
    _write(path, mixed)
    return Clip(name, clip.language, clip.kind, path, clip.reference, clip.languages)


def _espeak_clips(
    folder: Path, spoken: dict[tuple[str, str], list[Path]], languages: tuple[str, ...] = tuple(SENTENCES)
) -> list[Clip]:
    """espeak-ng: three sentences per language and variant (their WAVs kept in ``spoken``)."""
    clips: list[Clip] = []
    for language in languages:
        sentences = _sentences(language)
        for variant in VARIANTS:
            voice = SENTENCES[language]["voice"] + variant
            parts = []
            for i, (_, say) in enumerate(sentences):
                part = folder / f"{language}{variant.replace('+', '-')}-s{i}.wav"
                _speak(say, voice, part, SPEEDS[variant])
                parts.append(part)
            spoken[(language, variant)] = parts
            name = f"{language}-espeak{variant.replace('+', '-')}"
            path = folder / f"{name}.wav"
            _concat(parts, path)
            reference = _join(language, [ref for ref, _ in sentences])
            clips.append(Clip(name, language, "short", path, reference, (language,)))
    return clips


def _festival_clips(folder: Path) -> list[Clip]:
    """Festival: the same sentences, numbers read as words (its text rules do not read digits everywhere)."""
    clips: list[Clip] = []
    for language, voices in FESTIVAL_VOICES.items():
        sentences = _sentences(language)
        said = [sentences[0][0], ", ".join(NUMBER_WORDS[language]) + ".", sentences[2][0]]
        for voice, encoding in voices:
            if not _festival_installed(voice):
                continue
            parts = []
            for i, text in enumerate(said):
                part = folder / f"{language}-{voice}-s{i}.wav"
                _festival(text, voice, encoding, part)
                parts.append(part)
            label = re.sub(r"_(diphone|clunits|hts)$", "", voice)
            name = f"{language}-festival-{label}"
            path = folder / f"{name}.wav"
            _concat(parts, path)
            clips.append(
                Clip(name, language, "short", path, _join(language, [ref for ref, _ in sentences]), (language,))
            )
    return clips


def _real_clips(folder: Path, librivox: list[tuple[Path, str]]) -> list[Clip]:
    """Real recordings."""
    clips: list[Clip] = []
    for name, picked in (("en-librivox-1", librivox[:2]), ("en-librivox-2", librivox[2:])):
        path = folder / f"{name}.wav"
        _concat([p for p, _ in picked], path, gap=0.4)
        clips.append(Clip(name, "en", "real", path, " ".join(t for _, t in picked), ("en",)))
    for language in ("nl", "cs"):
        lines = _fillets(language)
        if lines:
            name = f"{language}-fillets"
            path = folder / f"{name}.wav"
            _concat([p for p, _ in lines], path, gap=0.5)
            clips.append(Clip(name, language, "real", path, " ".join(t for _, t in lines), (language,)))
    return clips


def _switching_clips(folder: Path) -> list[Clip]:
    """Switching language mid-file: greeting + long sentence of one, then of the other."""
    clips: list[Clip] = []
    english = [("Good morning, how are you today?", "en-us"), ("The quick brown fox jumps over the lazy dog.", "en-us")]
    for first, second in (("en", "es"), ("de", "fr"), ("it", "pt")):
        parts, texts = [], []
        for language in (first, second):
            if language == "en":
                pieces = english
            else:
                s = SENTENCES[language]
                pieces = [(s["greeting"], s["voice"]), (s["long"], s["voice"])]
            for j, (text, voice) in enumerate(pieces):
                part = folder / f"switch-{first}-{second}-{language}{j}.wav"
                _speak(text, voice, part)
                parts.append(part)
                texts.append(text)
        name = f"switch-{first}-{second}"
        path = folder / f"{name}.wav"
        _concat(parts, path)
        clips.append(Clip(name, "", "switch", path, " ".join(texts), (first, second)))
    return clips


def _long_clips(
    folder: Path, librivox: list[tuple[Path, str]], spoken: dict[tuple[str, str], list[Path]]
) -> list[Clip]:
    """Long files: more than one 30 s window."""
    clips: list[Clip] = []
    name = "en-librivox-long"
    path = folder / f"{name}.wav"
    _concat([p for p, _ in librivox] * 3, path, gap=0.4)
    clips.append(Clip(name, "en", "long", path, " ".join([" ".join(t for _, t in librivox)] * 3), ("en",)))
    for language in ("es", "ja"):
        if (language, VARIANTS[0]) not in spoken:
            continue
        parts = [p for variant in VARIANTS[:2] for p in spoken[(language, variant)]] * 2
        texts = [ref for _ in VARIANTS[:2] for ref, _ in _sentences(language)] * 2
        name = f"{language}-espeak-long"
        path = folder / f"{name}.wav"
        _concat(parts, path, gap=0.8)
        clips.append(Clip(name, language, "long", path, _join(language, texts), (language,)))
    return clips
