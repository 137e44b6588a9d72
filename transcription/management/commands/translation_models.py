"""`manage.py translation_models list` and `manage.py translation_models install en-de en-fr …`.

list: every language pair this server translates, the backend that serves it (the one a job
would get) and what to expect of it. install: CTranslate2 packages from TRANSLATION_PACKAGE_INDEX,
checked and unpacked under TRANSLATION_PACKAGES_DIR; the asr workers use them at their next
translation, with no setting to edit.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from transcription.pipeline import translate
from transcription.pipeline.recognition.languages import language_label
from transcription.pipeline.translate import translation_packages
from transcription.stages.translation import translation_models

QUALITY = {
    "ctranslate2": "neural (OPUS-MT/Argos): fluent, the best here",
    "ctranslate2 pivot": "neural through English: fluent, some meaning lost on the way",
    "apertium": "rule-based: word for word, literal, stiff",
    "apertium pivot": "rule-based through Spanish: literal, errors of both steps",
    "speech": "the speech model's own translation of the audio: good",
}


def _kind(translator) -> str:
    if isinstance(translator, translate.ChainTranslator):
        return "ctranslate2 pivot"
    if isinstance(translator, translate.CT2Translator):
        return "ctranslate2"
    if isinstance(translator, translate.ApertiumTranslator):
        return "apertium pivot" if len(translator.modes) > 1 else "apertium"
    return "speech"


class Command(BaseCommand):
    help = "List the translation pairs this server serves, or install CTranslate2 packages (en-de …)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["list", "install"])
        parser.add_argument("pairs", nargs="*", help="for install: pairs such as en-de fr-en")
        parser.add_argument("--index", default=None, help="package index address (TRANSLATION_PACKAGE_INDEX)")
        parser.add_argument("--timeout", type=float, default=translation_packages.TIMEOUT, help="seconds")

    def handle(self, *args, action: str, pairs: list[str], index: str | None, timeout: float, **options):
        if action == "install":
            self._install(pairs, index or settings.TRANSLATION_PACKAGE_INDEX, timeout)
        else:
            self._list()

    def _install(self, pairs: list[str], index: str, timeout: float) -> None:
        if not pairs:
            raise CommandError("name the pairs to install, such as: translation_models install en-de en-fr")
        failed = []
        for pair in pairs:
            source, _, target = pair.partition("-")
            if not source or not target:
                failed.append(pair)
                self.stderr.write(f"{pair}: not a pair (write it as en-de)")
                continue
            try:
                folder = translation_packages.install(
                    source, target, index, settings.TRANSLATION_PACKAGES_DIR, timeout=timeout
                )
            except translation_packages.PackageError as error:
                failed.append(pair)
                self.stderr.write(f"{pair}: not installed: {error}")
            else:
                self.stdout.write(f"{pair}: installed in {folder}")
        if failed:
            raise CommandError(f"not installed: {', '.join(failed)}")

    def _list(self) -> None:
        models = translation_models()
        pairs = {tuple(key.split("-", 1)) for key in models if "-" in key}
        english_sources = {source for source, target in pairs if target == "en"}
        english_targets = {target for source, target in pairs if source == "en"}
        pairs |= {(source, target) for source in english_sources for target in english_targets if source != target}
        modes = translate.apertium_modes()
        pairs |= set(modes)
        pairs |= {(source, target) for source, pivot in modes for p, target in modes if pivot == p == translate.PIVOT}
        rows = []
        for source, target in sorted(pairs):
            if source == target:
                continue
            translator = translate.find_translator(source, target, translate.TranslationOptions(models=models))
            if translator is None:
                continue
            rows.append((f"{source}-{target}", f"{language_label(source)} → {language_label(target)}", translator))
        self.stdout.write(f"{'pair':<8} {'languages':<34} {'backend':<42} quality")
        for pair, names, translator in rows:
            self.stdout.write(f"{pair:<8} {names:<34} {translator.name:<42} {QUALITY[_kind(translator)]}")
        if "*" in models:
            self.stdout.write(f"*        any pair NLLB-200 knows           ctranslate2 {models['*']}")
        self.stdout.write(
            "any → en  speech in any language → English  the speech model (multilingual) " + QUALITY["speech"]
        )
        self.stdout.write(
            "Other pairs fail alone, refunded. Add one with: python manage.py translation_models install xx-yy"
        )
