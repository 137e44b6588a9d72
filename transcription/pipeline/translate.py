"""Translate subtitle cues, keeping their count and timings one to one.

Nothing here knows about Django: settings come in as arguments.

    translator = find_translator("en", "es", ct2_models={"en-de": "/models/opus-mt-en-de"})
    if translator is None:
        raise TranslationUnavailable("en", "es")     # str(): a sentence for the customer
    spanish = translate_cues(cues, translator, language="es")

Backends, in the order ``find_translator`` prefers them for a language pair:

1. **CTranslate2** (``CT2Translator``): the production path for quality and coverage. A pair
   ("en-de") maps to an OPUS-MT/Marian model folder converted for CTranslate2 (``model.bin``,
   vocabularies, ``source.spm`` and ``target.spm``), to an installed Argos package
   (``translation_packages``: ``model/`` and one ``sentencepiece.model``), or "*" to a
   multilingual NLLB folder (``sentencepiece.bpe.model``) serving any pair it knows; X -> en and
   en -> Y chain through English (``ChainTranslator``). Models are loaded once per process, int8 on
   the CPU. Nothing is downloaded here: ``translation_packages.install`` does that, on request.
2. **Apertium, direct** (``ApertiumTranslator``): Debian's rule-based translator works offline
   with no model files, so a fresh server can translate English to Spanish, Catalan, Galician and
   Esperanto (and back) out of the box. Modes are discovered from ``apertium -l``.
3. **Apertium through Spanish**: Apertium's Romance pairs mostly start from Spanish, so English to
   Portuguese, Italian, French, Occitan, Asturian and Aragonese go English -> Spanish -> target,
   two processes chained. Quality drops at each step, hence last.

No backend for a pair -> ``find_translator`` returns None and ``unavailable_message`` says so.

Speech to English from any spoken language is not done here: whisper's own ``task="translate"``
produces English words with timestamps, and ``align_translated_words`` puts them into the cues
of the original transcript.

Sentences, not fragments: the cues up to one that ends a sentence are translated as one text
(Apertium gets one ``<p>`` block per sentence in its HTML format, never plain text mode, which moves
words across lines, and the number of blocks that come back is checked; CTranslate2 one batch entry
per sentence), and ``distribute`` cuts the translation back into those cues, at word boundaries, by
each cue's share of the source's characters, so the count and the times of the cues are kept one
for one. The layout rule then holds in every language: at most 2 lines of ``line_limit`` characters
(42; 16 full-width ones for CJK), words moved between the cues of a sentence (or a sentence into a
neighbouring cue) where a part would not fit, and a cue that continues a sentence starts in lower
case. A cue made of two speaker-dash lines is translated line by line so each speaker keeps their
line. Through Spanish, Spanish words the second Apertium leg does not know are dropped.
"""

from __future__ import annotations

import functools
import html
import json
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import threading
from bisect import bisect_right
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import langcodes

from .captions import Cue
from .languages import language_label, short_code
from .linebreaks import (
    MAX_LINE_CHARS,
    MAX_LINES,
    ends_on,
    fits,
    function_words,
    line_limit,
    wrap_lines,
    wrap_tokens,
)
from .types import Word
from .words import CLAUSE_END, ends_sentence, language_key

__all__ = [
    "TranslationUnavailable",
    "TranslationFailed",
    "Translator",
    "ApertiumTranslator",
    "CT2Translator",
    "ChainTranslator",
    "unavailable_message",
    "apertium_modes",
    "find_translator",
    "translate_cues",
    "align_translated_words",
    "nllb_code",
]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 300.0  # seconds for one backend call over all of a job's cues
PIVOT = "es"
_DASH = "- "


# --------------------------------------------------------------------------------------------
# Errors and language names
# --------------------------------------------------------------------------------------------


class TranslationUnavailable(Exception):
    """No backend on this server translates the pair. ``str(e)`` is a sentence for the customer:
    ``TranslationUnavailable("en", "ja")`` writes it (``unavailable_message``), and
    ``TranslationUnavailable(message)`` takes one as it is."""

    def __init__(self, *args: str):
        if len(args) == 2:
            self.source, self.target = args
            super().__init__(unavailable_message(*args))
        else:
            self.source = self.target = None
            super().__init__(*args)


class TranslationFailed(Exception):
    """A backend that should work did not (crash, timeout, broken model folder). ``str(e)`` is a
    sentence for the customer; details go to the log."""


class Translator(Protocol):
    name: str

    def translate(self, texts: list[str]) -> list[str]:
        """Exactly one output per input, in the same order; "" stays ""."""
        ...


def unavailable_message(source: str, target: str) -> str:
    """Names the pair and how the server's operator adds it."""
    pair = f"{short_code(source)}-{short_code(target)}"
    return (
        f"Translation from {language_label(source)} to {language_label(target)} is not available on this server"
        f" (pair {pair}); its operator can add it with: python manage.py translation_models install {pair}"
    )


def _pair(source: str | None, target: str | None) -> str:
    """ "Translation from English to Spanish", or just "Translation"."""
    if source and target:
        return f"Translation from {language_label(source)} to {language_label(target)}"
    return "Translation"


def _failed(source: str | None, target: str | None, why: str = "") -> str:
    return f"{_pair(source, target)} failed on this server{': ' + why if why else ''}."


# --------------------------------------------------------------------------------------------
# Apertium
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def apertium_modes() -> dict[tuple[str, str], str]:
    """{(source, target): mode} from ``apertium -l``, codes normalised ("eng-spa" -> ("en", "es")).
    Variant modes ("eng-cat_valencia", "es-pt_BR", "eo-en-bytecode") are left out: the plain one
    is used. Empty when Apertium is not installed. Cached for the process."""
    if shutil.which("apertium") is None:
        log.warning("apertium is not installed: no Apertium translation")
        return {}
    try:
        listing = subprocess.run(["apertium", "-l"], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        log.warning("apertium -l failed: %s", error)
        return {}
    modes: dict[tuple[str, str], str] = {}
    for line in listing.stdout.splitlines():
        mode = line.strip()
        parts = mode.split("-")
        if len(parts) != 2 or not all(re.fullmatch(r"[a-z]{2,3}", part) for part in parts):
            continue
        pair = (short_code(parts[0]), short_code(parts[1]))
        modes.setdefault(pair, mode)
    return modes


# A mark Apertium puts before a word it could not handle: "*" unknown (dropped by -u), "#"
# generation error, "@" transfer error.
_MARK = re.compile(r"(?<![\w*#@])[*#@]+(?=[^\W\d_])")


_UNKNOWN = re.compile(r"(?<![\w*])\*([^\W\d_][\w'’-]*)")


def _unknown_first_word_capital(text: str, source: str) -> str:
    """Apertium gives a sentence's capital to the word after a first word it does not know
    ("Zorblat bought" -> "Zorblat Compró"): that word goes back to lower case, unless the source
    writes it with a capital too."""
    words = text.split(" ")
    source_words = set(source.split())
    for at in range(1, len(words)):
        first, word = words[at - 1], words[at]
        starts = at == 1 or ends_sentence(words[at - 2])
        if (
            starts
            and first in source_words
            and word[:1].isupper()
            and not (len(word) > 1 and word.isupper())  # not an acronym
            and word.strip(".,;:!?") not in {w.strip(".,;:!?") for w in source_words}
        ):
            words[at] = word[0].lower() + word[1:]
    return " ".join(words)


def _drop_pivot_words(text: str, source: str) -> str:
    """``text`` from a second Apertium leg run without ``-u``: each word marked unknown ("*cuantos")
    is dropped, unless the source has it too (a name or a word no leg knows, passed through as it
    is), in which case only the mark goes."""
    known = {word.lower() for word in re.findall(r"[^\W\d_][\w'’-]*", source)}
    return re.sub(r"\s+", " ", _UNKNOWN.sub(lambda m: m.group(1) if m.group(1).lower() in known else "", text)).strip()


def _run_killable(command: list[str], stdin: str, timeout: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr). ``apertium`` is a shell script running a pipeline of
    programs: on timeout the whole process group is killed, not just the shell, so that nothing
    keeps running (or keeps the pipes open) after TimeoutExpired is raised."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()
        raise
    return process.returncode, stdout, stderr


class ApertiumTranslator:
    """One or more Apertium modes chained (``["eng-spa", "es-pt"]`` pivots through Spanish)."""

    def __init__(
        self,
        modes: list[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        source: str | None = None,
        target: str | None = None,
    ):
        if not modes:
            raise ValueError("at least one Apertium mode")
        self.modes = list(modes)
        self.timeout = timeout
        self.source, self.target = source, target
        self.name = "apertium " + " + ".join(self.modes)

    def translate(self, texts: list[str]) -> list[str]:
        clean = [re.sub(r"\s+", " ", text).strip() for text in texts]
        todo = [index for index, text in enumerate(clean) if text]
        out = [""] * len(texts)
        if not todo:
            return out
        current = [clean[index] for index in todo]
        for leg, mode in enumerate(self.modes):
            # Later legs keep their unknown-word marks: a word the pivot leg left unknown is a
            # pivot-language word (Spanish in French) unless the source itself has it (a name).
            current = self._run(mode, current, unknown_marks=leg > 0)
            if leg > 0:
                current = [_drop_pivot_words(text, source) for text, source in zip(current, (clean[i] for i in todo))]
        for index, text in zip(todo, current):
            # strip the marks, but not ones the customer wrote ("#hashtag", "@name")
            keep = set(clean[index]) & set("*#@")
            out[index] = _MARK.sub(lambda m, keep=keep: "".join(ch for ch in m.group(0) if ch in keep), text)
            out[index] = _unknown_first_word_capital(re.sub(r"\s+", " ", out[index]).strip(), clean[index])
        return out

    def _run(self, mode: str, texts: list[str], *, unknown_marks: bool = False) -> list[str]:
        document = "".join(f"<p>{html.escape(text, quote=False)}</p>\n" for text in texts)
        command = ["apertium", "-f", "html", *([] if unknown_marks else ["-u"]), mode]
        try:
            returncode, stdout, stderr = _run_killable(command, document, self.timeout)
        except subprocess.TimeoutExpired:
            log.error("apertium %s: timed out after %s s on %d texts", mode, self.timeout, len(texts))
            raise TranslationFailed(
                f"{_pair(self.source, self.target)} took longer than {self.timeout:g} seconds and was stopped."
            ) from None
        except OSError as error:
            log.error("apertium %s: could not run: %s", mode, error)
            raise TranslationFailed(_failed(self.source, self.target)) from error
        if returncode != 0:
            log.error("apertium %s: exit %s: %s", mode, returncode, stderr[-2000:])
            raise TranslationFailed(_failed(self.source, self.target))
        blocks = re.findall(r"<p>(.*?)</p>", stdout, flags=re.DOTALL)
        if len(blocks) != len(texts):
            log.error("apertium %s: %d blocks in, %d out: %r", mode, len(texts), len(blocks), stdout[:2000])
            raise TranslationFailed(_failed(self.source, self.target))
        return [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]*>", "", block))).strip() for block in blocks]


# --------------------------------------------------------------------------------------------
# CTranslate2
# --------------------------------------------------------------------------------------------

# ISO 639-1 (or 639-3) -> NLLB-200 code, where the generic alpha3_Script rule gets it wrong or
# for the commonest languages.
NLLB_CODES = {
    "en": "eng_Latn",
    "es": "spa_Latn",
    "fr": "fra_Latn",
    "de": "deu_Latn",
    "it": "ita_Latn",
    "pt": "por_Latn",
    "ca": "cat_Latn",
    "gl": "glg_Latn",
    "nl": "nld_Latn",
    "sv": "swe_Latn",
    "da": "dan_Latn",
    "nb": "nob_Latn",
    "no": "nob_Latn",
    "fi": "fin_Latn",
    "pl": "pol_Latn",
    "cs": "ces_Latn",
    "ro": "ron_Latn",
    "hu": "hun_Latn",
    "el": "ell_Grek",
    "tr": "tur_Latn",
    "ru": "rus_Cyrl",
    "uk": "ukr_Cyrl",
    "bg": "bul_Cyrl",
    "ar": "arb_Arab",
    "he": "heb_Hebr",
    "fa": "pes_Arab",
    "hi": "hin_Deva",
    "bn": "ben_Beng",
    "ur": "urd_Arab",
    "ja": "jpn_Jpan",
    "ko": "kor_Hang",
    "zh": "zho_Hans",
    "vi": "vie_Latn",
    "th": "tha_Thai",
    "id": "ind_Latn",
    "ms": "zsm_Latn",
    "sw": "swh_Latn",
    "et": "est_Latn",
    "lv": "lvs_Latn",
    "eu": "eus_Latn",
    "ast": "ast_Latn",
    "oc": "oci_Latn",
    "eo": "epo_Latn",
    "tl": "tgl_Latn",
}


def nllb_code(code: str) -> str | None:
    """NLLB-200 language token for an ISO code ("es" -> "spa_Latn"); None when unknown."""
    code = short_code(code)
    if code in NLLB_CODES:
        return NLLB_CODES[code]
    try:
        language = langcodes.Language.get(code)
        script = language.maximize().script
        alpha3 = language.to_alpha3()
    except (ValueError, LookupError):
        return None
    return f"{alpha3}_{script}" if script else None


_MODELS: dict[str, tuple[object, object, object]] = {}  # folder -> (translator, source sp, target sp)
_MODELS_LOCK = threading.Lock()


def _ct2_load(folder: Path) -> tuple[object, object, object]:
    """(ctranslate2.Translator, source SentencePieceProcessor, target one), once per folder."""
    key = str(folder.resolve())
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        import ctranslate2
        import sentencepiece

        model_folder = folder
        if (folder / "model" / "model.bin").is_file():  # an installed package (translation_packages)
            model_folder = folder / "model"
        if not (model_folder / "model.bin").is_file():
            raise FileNotFoundError(f"{folder}/model.bin")
        if (folder / "sentencepiece.model").is_file():
            source_sp = target_sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "sentencepiece.model"))
        elif (folder / "sentencepiece.bpe.model").is_file():
            source_sp = target_sp = sentencepiece.SentencePieceProcessor(
                model_file=str(folder / "sentencepiece.bpe.model")
            )
        else:
            source_sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "source.spm"))
            target_sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "target.spm"))
        try:
            model = ctranslate2.Translator(str(model_folder), device="cpu", compute_type="int8")
        except (ValueError, RuntimeError) as error:  # int8 not supported for this model or this CPU
            log.info("ctranslate2 %s: int8 unavailable (%s); default compute type", folder, error)
            model = ctranslate2.Translator(str(model_folder), device="cpu")
        _MODELS[key] = (model, source_sp, target_sp)
        return _MODELS[key]


def _vocabulary(folder: Path) -> set[str] | None:
    """The target vocabulary of a converted folder, when it is stored in a readable file."""
    for name in ("shared_vocabulary", "target_vocabulary"):
        if (folder / f"{name}.json").is_file():
            return set(json.loads((folder / f"{name}.json").read_text(encoding="utf-8")))
        if (folder / f"{name}.txt").is_file():
            return set((folder / f"{name}.txt").read_text(encoding="utf-8").splitlines())
    return None


class CT2Translator:
    """A CTranslate2 model folder: OPUS-MT/Marian (``source.spm``, ``target.spm``; one pair) or
    NLLB (``sentencepiece.bpe.model``; language tokens chosen per call). Loading is lazy (first
    ``translate`` or ``load``) and cached per folder for the process; a missing or broken folder
    raises TranslationFailed then."""

    BEAM_SIZE = 4
    MAX_DECODING_LENGTH = 256
    MAX_BATCH_SIZE = 32

    def __init__(self, folder: str | Path, *, source: str, target: str):
        self.folder = Path(folder)
        self.source, self.target = short_code(source), short_code(target)
        self.name = f"ctranslate2 {self.folder.name}"

    @property
    def is_nllb(self) -> bool:
        return (self.folder / "sentencepiece.bpe.model").is_file()

    def load(self) -> None:
        try:
            _ct2_load(self.folder)
        except Exception as error:  # noqa: BLE001 - whatever breaks, the customer gets one sentence
            log.error("ctranslate2 model %s could not be loaded: %r", self.folder, error)
            raise TranslationFailed(
                _failed(self.source, self.target, "its translation model could not be loaded")
            ) from error

    def translate(self, texts: list[str]) -> list[str]:
        self.load()
        model, source_sp, target_sp = _ct2_load(self.folder)
        clean = [re.sub(r"\s+", " ", text).strip() for text in texts]
        todo = [index for index, text in enumerate(clean) if text]
        out = [""] * len(texts)
        if not todo:
            return out
        batch = [source_sp.encode(clean[index], out_type=str) for index in todo]
        options = dict(
            beam_size=self.BEAM_SIZE, max_decoding_length=self.MAX_DECODING_LENGTH, max_batch_size=self.MAX_BATCH_SIZE
        )
        prefix_token = None
        if self.is_nllb:
            source_code, prefix_token = nllb_code(self.source), nllb_code(self.target)
            vocabulary = _vocabulary(self.folder)
            if (
                not source_code
                or not prefix_token
                or (vocabulary is not None and not {source_code, prefix_token} <= vocabulary)
            ):
                raise TranslationFailed(unavailable_message(self.source, self.target))
            batch = [[source_code, *tokens, "</s>"] for tokens in batch]
            options["target_prefix"] = [[prefix_token]] * len(batch)
        try:
            results = model.translate_batch(batch, **options)  # type: ignore[attr-defined]
        except Exception as error:  # noqa: BLE001
            log.error("ctranslate2 %s: translate_batch failed: %r", self.folder, error)
            raise TranslationFailed(_failed(self.source, self.target)) from error
        for index, result in zip(todo, results):
            tokens = list(result.hypotheses[0])
            if prefix_token is not None and tokens[:1] == [prefix_token]:
                tokens = tokens[1:]
            out[index] = re.sub(r"\s+", " ", target_sp.decode_pieces(tokens)).strip()  # type: ignore[attr-defined]
        return out


class ChainTranslator:
    """Two translators one after the other: X -> English -> Y with CTranslate2 models."""

    def __init__(self, first: Translator, second: Translator):
        self.first, self.second = first, second
        self.name = f"{first.name} + {second.name}"

    def translate(self, texts: list[str]) -> list[str]:
        return self.second.translate(self.first.translate(texts))


class _Identity:
    name = "identity"

    def translate(self, texts: list[str]) -> list[str]:
        return list(texts)


# --------------------------------------------------------------------------------------------
# Choosing a backend
# --------------------------------------------------------------------------------------------


def _ct2_folder(source: str, target: str, ct2_models: dict[str, str] | None) -> str | None:
    for key, folder in (ct2_models or {}).items():
        if key == "*" or "-" not in key:
            continue
        left, right = key.split("-", 1)
        if (short_code(left), short_code(right)) == (source, target):
            return folder
    folder = (ct2_models or {}).get("*")
    if folder and nllb_code(source) and nllb_code(target):
        return folder
    return None


def find_translator(
    source: str, target: str, *, ct2_models: dict[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT
) -> Translator | None:
    """The best backend for ``source`` -> ``target`` (ISO 639-1, or 639-3 where there is no 639-1;
    other tags are normalised), or None when nothing here translates the pair.

    Preference: a CTranslate2 folder configured for the pair in ``ct2_models`` ("en-de": folder;
    "*": an NLLB folder for any pair), then two CTranslate2 folders through English (X -> en,
    en -> Y), then an Apertium mode for the pair, then two Apertium modes through Spanish. Never raises and loads nothing: a broken CTranslate2 folder shows up as
    TranslationFailed from ``translate``. The same language both sides gives a translator that
    copies."""
    source, target = short_code(source), short_code(target)
    if source == target:
        return _Identity()
    folder = _ct2_folder(source, target, ct2_models)
    if folder:
        return CT2Translator(folder, source=source, target=target)
    into_english, from_english = _ct2_folder(source, "en", ct2_models), _ct2_folder("en", target, ct2_models)
    if "en" not in (source, target) and into_english and from_english:
        return ChainTranslator(
            CT2Translator(into_english, source=source, target="en"),
            CT2Translator(from_english, source="en", target=target),
        )
    modes = apertium_modes()
    if (source, target) in modes:
        return ApertiumTranslator([modes[source, target]], timeout=timeout, source=source, target=target)
    if PIVOT not in (source, target) and (source, PIVOT) in modes and (PIVOT, target) in modes:
        return ApertiumTranslator(
            [modes[source, PIVOT], modes[PIVOT, target]], timeout=timeout, source=source, target=target
        )
    return None


# --------------------------------------------------------------------------------------------
# Cues
# --------------------------------------------------------------------------------------------

_DASH_LINE = re.compile(r"^\s*[-–—]\s*(.*)$")


def _speaker_lines(lines: list[str]) -> list[str] | None:
    """The speakers' texts when every line (two or more) is a "- text" line, else None."""
    if len(lines) < 2:
        return None
    matches = [_DASH_LINE.match(line) for line in lines]
    if not all(match and match.group(1).strip() for match in matches):
        return None
    return [match.group(1).strip() for match in matches]  # type: ignore[union-attr]


# A sentence is translated in one piece, but a run of cues that never ends a sentence (no
# punctuation in a transcript without it) is cut after this many cues, so that one translation
# unit stays a size the backends handle well and the distribution below stays cheap.
MAX_CUES_PER_SENTENCE = 6


def _text_of(cue: Cue) -> str:
    return re.sub(r"\s+", " ", " ".join(cue.lines)).strip()


def sentence_groups(cues: list[Cue]) -> list[tuple[str, list[int]]]:
    """("dash" | "text" | "empty", cue indices): consecutive text cues up to and including the one
    that ends a sentence form one group (at most MAX_CUES_PER_SENTENCE); a speaker-dash cue or an
    empty cue is a group of its own."""
    groups: list[tuple[str, list[int]]] = []
    current: list[int] = []
    for index, cue in enumerate(cues):
        text = _text_of(cue)
        if _speaker_lines(cue.lines) is not None or not text:
            if current:
                groups.append(("text", current))
                current = []
            groups.append(("dash" if text else "empty", [index]))
            continue
        current.append(index)
        if ends_sentence(text.split()[-1]) or len(current) >= MAX_CUES_PER_SENTENCE:
            groups.append(("text", current))
            current = []
    if current:
        groups.append(("text", current))
    return groups


def _join(tokens: list[tuple[str, bool]], i: int, j: int) -> str:
    return "".join(("" if k == i or tokens[k][1] else " ") + tokens[k][0] for k in range(i, j))


def distribute(translation: str, shares: list[int], *, language: str | None = None) -> list[str]:
    """See ``_distribute``; cached, since growing a block asks about the same sentences again."""
    return list(_distribute(translation, tuple(shares), language))


@functools.lru_cache(maxsize=1024)
def _distribute(translation: str, shares: tuple[int, ...], language: str | None) -> tuple[str, ...]:
    """``translation`` (of a sentence spoken over ``len(shares)`` cues) cut at word boundaries into
    one text per cue, each cue's part as close as possible to its share of the source (``shares``:
    the source cues' characters), under the layout rule: a part that cannot be laid out on
    ``MAX_LINES`` lines of ``line_limit(language)`` characters costs far more than any shift of
    words to a neighbour, so words move between the sentence's cues until every part fits (when
    the sentence fits at all). Every cue gets at least one word while there are enough words.
    Dynamic programming over the cut positions."""
    tokens = wrap_tokens(translation)
    count = len(shares)
    if count == 1 or not tokens:
        return (_join(tokens, 0, len(tokens)),) + ("",) * (count - 1)
    limit = line_limit(language)
    no_break, weak_break = function_words(language)
    n = len(tokens)
    prefix = [0]
    for index, (token, glue) in enumerate(tokens):
        prefix.append(prefix[-1] + (0 if index == 0 or glue else 1) + len(token))
    total_share = sum(shares) or 1
    targets = [prefix[n] * sum(shares[: k + 1]) / total_share for k in range(count)]

    @functools.cache
    def misfit(i: int, j: int) -> float:
        """What laying out tokens i..j-1 as one cue breaks: 0 when it fits."""
        if i == j:
            return 0.0
        length = prefix[j] - prefix[i] - (0 if i == 0 or tokens[i][1] else 1)
        if length > MAX_LINES * limit + 1:
            return 1000.0 * (length - MAX_LINES * limit)
        if length <= limit:
            return 0.0
        return _part_misfit(_join(tokens, i, j), limit, language)

    def length(i: int, j: int) -> int:
        return prefix[j] - prefix[i] - (0 if i == 0 or tokens[i][1] else 1)

    def cut_cost(j: int, k: int) -> float:
        """Cutting before token j as the end of cue k: distance from its share, glue, function words."""
        cost = abs(prefix[j] - targets[k])
        if 0 < j < n:
            cost += 40.0 if tokens[j][1] else 0.0
            cost += 15.0 if ends_on(tokens[j - 1][0], no_break) else 0.0
            cost += 8.0 if ends_on(tokens[j - 1][0], weak_break) else 0.0  # "est | parti"
            cost += 100.0 if tokens[j - 1][0] in _LEADING_PUNCT else 0.0  # never after an opening "-" or "¿"
            cost -= 5.0 if ends_sentence(tokens[j - 1][0]) or CLAUSE_END.search(tokens[j - 1][0]) else 0.0
        return cost

    cuts_cost = [[cut_cost(j, k) for j in range(n + 1)] for k in range(count - 1)]
    need_words = n >= count
    room = MAX_LINES * limit + 1
    # first[j]: the first token a part ending before token j may start at and still fit (one token at least)
    first, i = [0] * (n + 1), 0
    for j in range(1, n + 1):
        while i < j - 1 and length(i, j) > room:
            i += 1
        first[j] = i

    def solve(windowed: bool) -> list[int] | None:
        """The cuts (token indices, 0 and n included) at the least cost. ``windowed``: only parts
        short enough to fit are tried (fast); None when that finds no way where every part fits."""
        best: dict[int, float] = {}
        for j in range(1 if need_words else 0, n + 1):
            if windowed and j > 1 and first[j] > 0:
                break
            best[j] = misfit(0, j) + cuts_cost[0][j]
        back: list[dict[int, int]] = [{}]
        for k in range(1, count):
            last = k == count - 1
            here: dict[int, float] = {}
            came: dict[int, int] = {}
            for j in [n] if last else range(n + 1):
                extra = 0.0 if last else cuts_cost[k][j]
                chosen, lowest = None, math.inf
                for i in range(first[j] if windowed else 0, j if need_words else j + 1):
                    before = best.get(i)
                    if before is None:
                        continue
                    total = before + misfit(i, j) + extra
                    if total < lowest:
                        chosen, lowest = i, total
                if chosen is not None:
                    here[j], came[j] = lowest, chosen
            best = here
            back.append(came)
        if n not in best:
            return None
        cuts = [n]
        for k in range(count - 1, 0, -1):
            cuts.append(back[k][cuts[-1]])
        cuts.append(0)
        cuts.reverse()
        if windowed and any(misfit(cuts[k], cuts[k + 1]) for k in range(count)):
            return None  # the full search may gather what cannot fit into fewer cues
        return cuts

    cuts = solve(windowed=True) or solve(windowed=False)
    assert cuts is not None
    return tuple(_join(tokens, cuts[k], cuts[k + 1]) for k in range(count))


@functools.lru_cache(maxsize=4096)
def _part_misfit(text: str, limit: int, language: str | None) -> float:
    """0 when ``text`` lays out on MAX_LINES lines of ``limit`` characters, else a large cost
    growing with the overflow. Cached: growing a block asks about the same parts again."""
    lines = wrap_lines(text, limit, MAX_LINES, language=language)
    return 0.0 if fits(lines, limit) else 1000.0 * (1 + sum(max(0, len(line) - limit) for line in lines))


_LEADING_PUNCT = "\"'“‘«¿¡([—–-"


def _always_capitalised(word: str, source: str, translation: str, language: str | None) -> bool:
    """Whether ``word`` keeps its capital inside a sentence: "I" in English, acronyms, any German
    noun, and a word written with a capital inside the source or the rest of the translation
    (a name)."""
    bare = word.strip(_LEADING_PUNCT + ".,;:!?…»”’)")
    if not bare or not bare[0].isupper():
        return True
    if language_key(language) == "de" or (bare == "I" and language_key(language) == "en"):
        return True
    if len(bare) > 1 and bare.isupper():
        return True
    # inside the source once, or inside the translation somewhere besides this cue's start
    for text, enough in ((source, 1), (translation, 2)):
        words = text.split()
        inside = sum(
            1
            for before, after in zip(words, words[1:])
            if after.strip(_LEADING_PUNCT + ".,;:!?…»”’)") == bare and not ends_sentence(before)
        )
        if inside >= enough:
            return True
    return False


def _capitalised_like(translation: str, source: str) -> str:
    """The translation of a sentence starts with a capital when the source's does (Apertium may
    put a pronoun of its own first: "ils ne sont pas là")."""
    start = next((ch for ch in source if ch.isalpha()), "")
    at = next((i for i, ch in enumerate(translation) if ch.isalpha()), None)
    if start.isupper() and at is not None and translation[at].islower():
        return translation[:at] + translation[at].upper() + translation[at + 1 :]
    return translation


def _continue_lowercase(parts: list[str], source: str, translation: str, language: str | None) -> list[str]:
    """A cue that continues a sentence does not start with a capital letter unless its first word
    always has one (``_always_capitalised``)."""
    out = list(parts)
    for k in range(1, len(out)):
        previous = next((part for part in reversed(out[:k]) if part), "")
        words = out[k].split()
        if not words or not previous or ends_sentence(previous.split()[-1]):
            continue
        first = words[0]
        if _always_capitalised(first, source, translation, language):
            continue
        at = next(i for i, ch in enumerate(first) if ch not in _LEADING_PUNCT)
        out[k] = out[k].replace(first, first[:at] + first[at].lower() + first[at + 1 :], 1)
    return out


def translate_cues(cues: list[Cue], translator: Translator, *, language: str | None = None) -> list[Cue]:
    """New cues with the same count and start/end, their text translated with ``translator``.

    The cues of one sentence are translated together, as one text (``sentence_groups``), and the
    translation is cut back into those cues by each cue's share of the source's characters, at
    word boundaries, moving words between the sentence's cues where a part would not fit
    (``distribute``); each part is then laid out on at most 2 balanced lines of
    ``line_limit(language)`` characters, and a part that continues a sentence starts in lower case
    (``_continue_lowercase``). A cue of speaker-dash lines keeps one "- " line per speaker (each
    translated on its own). Empty cues stay empty. All texts go to the backend in one call."""
    groups = sentence_groups(cues)
    units: list[str] = []
    plans: list[tuple[int, int]] = []  # (first unit, unit count) per group
    for kind, indices in groups:
        if kind == "dash":
            speakers = _speaker_lines(cues[indices[0]].lines) or []
            plans.append((len(units), len(speakers)))
            units.extend(speakers)
        elif kind == "text":
            plans.append((len(units), 1))
            units.append(" ".join(_text_of(cues[index]) for index in indices))
        else:
            plans.append((len(units), 0))
    translated = translator.translate(units) if units else []
    if len(translated) != len(units):
        log.error("%s returned %d texts for %d", translator.name, len(translated), len(units))
        raise TranslationFailed("Translation failed on this server.")
    limit = line_limit(language)
    out = list(cues)
    blocks: list[tuple[list[int], str, str]] = []  # text groups: (cue indices, source, translation)
    for (kind, indices), (first, count) in zip(groups, plans):
        parts = translated[first : first + count]
        if kind == "dash":
            lines = [
                _DASH + (_DASH_LINE.match(part).group(1) if _DASH_LINE.match(part) else part).strip() for part in parts
            ]
            out[indices[0]] = replace(cues[indices[0]], lines=lines)
        elif kind == "text":
            blocks.append((indices, units[first], _capitalised_like(parts[0], units[first])))
        else:
            out[indices[0]] = replace(cues[indices[0]], lines=[])
    for indices, source, translation in _fitted_blocks(cues, blocks, language):
        texts = distribute(translation, [len(_text_of(cues[index])) for index in indices], language=language)
        texts = _continue_lowercase(texts, source, translation, language)
        for index, text in zip(indices, texts):
            out[index] = replace(cues[index], lines=wrap_lines(text, limit, MAX_LINES, language=language))
    return out


MAX_CUES_PER_BLOCK = 12


def _fitted_blocks(
    cues: list[Cue], blocks: list[tuple[list[int], str, str]], language: str | None
) -> list[tuple[list[int], str, str]]:
    """Sentence groups whose translation cannot be laid out in their own cues (a one-cue sentence
    that came out longer than two lines) are joined with the following groups of adjacent cues (then
    the previous ones) until it can, so that words, or a short sentence, may move into a
    neighbouring cue with room rather than overflow; at most MAX_CUES_PER_BLOCK cues together.
    ``distribute`` still keeps each part as close to its own cue's share as the layout allows."""
    limit = line_limit(language)

    def fit(block: tuple[list[int], str, str]) -> bool:
        indices, _, translation = block
        parts = distribute(translation, [len(_text_of(cues[index])) for index in indices], language=language)
        return all(fits(wrap_lines(part, limit, MAX_LINES, language=language), limit) for part in parts)

    def joined(a: tuple[list[int], str, str], b: tuple[list[int], str, str]) -> tuple[list[int], str, str]:
        return (a[0] + b[0], f"{a[1]} {b[1]}", f"{a[2]} {b[2]}")

    def adjacent(a: tuple[list[int], str, str], b: tuple[list[int], str, str]) -> bool:
        return b[0][0] == a[0][-1] + 1 and len(a[0]) + len(b[0]) <= MAX_CUES_PER_BLOCK

    out: list[tuple[list[int], str, str]] = []
    pending = list(blocks)
    while pending:
        block = pending.pop(0)
        # grow the block over its neighbours, the next group first, until it fits or cannot grow
        while not fit(block):
            if pending and adjacent(block, pending[0]):
                block = joined(block, pending.pop(0))
            elif out and adjacent(out[-1], block):
                block = joined(out.pop(), block)
            else:
                break
        out.append(block)
    return out


def _nearest_cue(cues: list[Cue], starts: list[float], time: float) -> int:
    index = bisect_right(starts, time) - 1
    candidates = [i for i in (index, index + 1) if 0 <= i < len(cues)]

    def distance(i: int) -> float:
        cue = cues[i]
        return 0.0 if cue.start <= time <= cue.end else min(abs(time - cue.start), abs(time - cue.end))

    return min(candidates, key=lambda i: (distance(i), i))


def align_translated_words(cues: list[Cue], words: list[Word]) -> list[Cue]:
    """Cues of the original transcript with their text replaced by ``words`` (whisper's
    ``task="translate"`` output for the same audio, English with timestamps).

    Each word goes to the cue whose span contains its midpoint (the nearest one when none does);
    count and timings stay one to one. A cue left without words takes the nearest boundary word
    from the closest cue with two or more (passed along through any cues in between, so word order
    is kept), so no cue stays empty while there are at least as many words as cues. Lines are
    re-wrapped as in ``translate_cues``."""
    if not cues:
        return []
    starts = [cue.start for cue in cues]
    buckets: list[list[Word]] = [[] for _ in cues]
    for word in sorted((w for w in words if w.text.strip()), key=lambda w: (w.start, w.end)):
        buckets[_nearest_cue(cues, starts, (word.start + word.end) / 2)].append(word)

    moved = True
    while moved:
        moved = False
        for empty in (i for i, bucket in enumerate(buckets) if not bucket):
            donors = [j for j, bucket in enumerate(buckets) if len(bucket) >= 2]
            if not donors:
                break
            donor = min(donors, key=lambda j: (abs(j - empty), -len(buckets[j])))
            step = 1 if donor < empty else -1
            at = donor
            while at != empty:  # pass one word along: donor's boundary word to its neighbour, ...
                if step == 1:
                    buckets[at + 1].insert(0, buckets[at].pop())
                else:
                    buckets[at - 1].append(buckets[at].pop(0))
                at += step
            moved = True
            break

    out = []
    for cue, bucket in zip(cues, buckets):
        text = re.sub(
            r"\s+", " ", "".join(word.text if word.text[:1].isspace() else " " + word.text for word in bucket)
        ).strip()
        out.append(replace(cue, lines=wrap_lines(text, MAX_LINE_CHARS, MAX_LINES, language="en")))
    return out
