"""Which backend translates a pair on this server: ``find_translator``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from transcription.pipeline.recognition.languages import short_code

from .apertium import PIVOT, ApertiumTranslator, apertium_modes
from .backend import DEFAULT_TIMEOUT, Translator
from .ctranslate import CT2Translator, nllb_code
from .translation_packages import installed


@dataclass(frozen=True)
class TranslationOptions:
    """The operator's translation backends, handed whole to :func:`find_translator` (the service
    builds them from its settings: transcription.stages.pipeline_options). ``models``: CTranslate2
    folders by pair ("en-de": folder; "*": an NLLB folder for any pair), over the packages installed
    under ``packages_dir`` (looked at on each call: a package installed meanwhile is found);
    ``timeout``: seconds an Apertium run may take."""

    models: Mapping[str, str] = field(default_factory=dict)
    packages_dir: str | os.PathLike[str] | None = None
    timeout: float = DEFAULT_TIMEOUT

    def ct2_models(self) -> dict[str, str]:
        """CTranslate2 folders by pair: the installed packages, then ``models`` over them."""
        packages = installed(Path(self.packages_dir)) if self.packages_dir is not None else {}
        return {**packages, **self.models}


NO_TRANSLATION_OPTIONS = TranslationOptions()


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
    multilingual = (ct2_models or {}).get("*")
    if multilingual and nllb_code(source) and nllb_code(target):
        return multilingual
    return None


def find_translator(
    source: str, target: str, options: TranslationOptions = NO_TRANSLATION_OPTIONS
) -> Translator | None:
    """The best backend for ``source`` -> ``target`` (ISO 639-1, or 639-3 where there is no 639-1;
    other tags are normalised), or None when nothing here translates the pair.

    Preference: a CTranslate2 folder for the pair in ``options.ct2_models()`` ("en-de": folder;
    "*": an NLLB folder for any pair), then two CTranslate2 folders through English (X -> en,
    en -> Y), then an Apertium mode for the pair, then two Apertium modes through Spanish. Never raises and loads nothing: a broken CTranslate2 folder shows up as
    TranslationFailed from ``translate``. The same language both sides gives a translator that
    copies."""
    source, target = short_code(source), short_code(target)
    if source == target:
        return _Identity()
    ct2_models, timeout = options.ct2_models(), options.timeout
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
