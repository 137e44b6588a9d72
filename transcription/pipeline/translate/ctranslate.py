"""CTranslate2 model folders: OPUS-MT/Marian (one pair) or NLLB (any pair it knows), loaded once per
process, int8 on the CPU. Nothing is downloaded here (``translation_packages`` does that)."""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

import langcodes

from transcription.pipeline.recognition.languages import short_code

from .backend import TranslationFailed, failed_message, unavailable_message

log = logging.getLogger(__name__)

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


_MODELS: dict[str, tuple[Any, Any, Any]] = {}  # folder -> (translator, source sp, target sp)
_MODELS_LOCK = threading.Lock()


def _ct2_load(folder: Path) -> tuple[Any, Any, Any]:
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
                failed_message(self.source, self.target, "its translation model could not be loaded")
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
        options: dict[str, Any] = dict(
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
            results = model.translate_batch(batch, **options)
        except Exception as error:  # noqa: BLE001
            log.error("ctranslate2 %s: translate_batch failed: %r", self.folder, error)
            raise TranslationFailed(failed_message(self.source, self.target)) from error
        for index, result in zip(todo, results):
            tokens = list(result.hypotheses[0])
            if prefix_token is not None and tokens[:1] == [prefix_token]:
                tokens = tokens[1:]
            out[index] = re.sub(r"\s+", " ", target_sp.decode_pieces(tokens)).strip()
        return out
