"""Translate subtitle cues, keeping their count and timings one to one.

The modules: ``backend`` (the Translator protocol, its errors), ``ctranslate``, ``apertium``,
``choice`` (``find_translator``), ``cues`` (``translate_cues``: sentences, speaker dashes),
``sharing`` (a sentence's translation cut back over its cues), ``casing``, ``english_words``
(whisper's English words put into the cues).

Nothing here knows about Django: settings come in as a ``TranslationOptions``.

    options = TranslationOptions(models={"en-de": "/models/opus-mt-en-de"}, packages_dir="/models/translation")
    translator = find_translator("en", "es", options)
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

from .apertium import PIVOT, ApertiumTranslator, apertium_modes
from .backend import DEFAULT_TIMEOUT, TranslationFailed, TranslationUnavailable, Translator, unavailable_message
from .choice import ChainTranslator, TranslationOptions, find_translator
from .ctranslate import CT2Translator, nllb_code
from .cues import sentence_groups, translate_cues
from .english_words import align_translated_words
from .sharing import distribute

__all__ = [
    "DEFAULT_TIMEOUT",
    "PIVOT",
    "TranslationUnavailable",
    "TranslationFailed",
    "Translator",
    "ApertiumTranslator",
    "CT2Translator",
    "ChainTranslator",
    "unavailable_message",
    "apertium_modes",
    "find_translator",
    "TranslationOptions",
    "translate_cues",
    "sentence_groups",
    "distribute",
    "align_translated_words",
    "nllb_code",
]
