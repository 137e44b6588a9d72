"""`manage.py translation_models install … / list` against a package index on 127.0.0.1 that
serves packages built here from the tiny copy model (no downloads): a sound package is installed
and translates, a corrupt download and an index that does not answer leave nothing behind, and
`list` names each pair's backend."""

from __future__ import annotations

import hashlib
import socket
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.pipeline.tiny_marian import build_argos_package, build_tiny_marian, package_index
from transcription.pipeline.transcripts.captions import Cue
from transcription.pipeline.translate import (
    ChainTranslator,
    CT2Translator,
    TranslationOptions,
    find_translator,
    translate_cues,
)
from transcription.stages.translation import translation_models


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """An index on 127.0.0.1 listing en-de, de-en and en-it (sound; en-it with its SHA-256), en-fr
    (corrupt) and en-es (a sound zip whose SHA-256 is not the index's)."""
    root = tmp_path_factory.mktemp("index")
    model = build_tiny_marian(tmp_path_factory.mktemp("tiny"))
    packages = {}
    for source, target in (("en", "de"), ("de", "en"), ("en", "it")):
        packages[source, target] = build_argos_package(model, root / f"{source}_{target}.argosmodel", source, target)
    good = packages["en", "de"].read_bytes()
    packages["en", "fr"] = root / "en_fr.argosmodel"
    packages["en", "fr"].write_bytes(good[: len(good) // 2] + b"\0" * 100 + good[len(good) // 2 + 100 :])
    packages["en", "es"] = build_argos_package(model, root / "en_es.argosmodel", "en", "es")
    checksums = {("en", "it"): hashlib.sha256(packages["en", "it"].read_bytes()).hexdigest(), ("en", "es"): "0" * 64}
    with package_index(root, packages, checksums) as address:
        yield address


def run_command(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("translation_models", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_install_list_and_translate(index, settings, tmp_path):
    settings.TRANSLATION_PACKAGES_DIR = tmp_path / "packages"
    settings.TRANSLATION_PACKAGE_INDEX = index
    settings.TRANSLATION_MODELS = {}
    out, _ = run_command("install", "en-de", "de-en", "en-it")
    assert "en-de: installed in" in out and "en-it: installed in" in out
    assert set(translation_models()) == {"en-de", "de-en", "en-it"}

    listing, _ = run_command("list")
    rows = {line.split()[0]: line for line in listing.splitlines()}
    assert "ctranslate2 en-de" in rows["en-de"] and "neural" in rows["en-de"]
    assert "ctranslate2 en-it" in rows["en-it"], "an installed package wins over Apertium"
    assert "ctranslate2 de-en + ctranslate2 en-it" in rows["de-it"], "German to Italian through English"
    assert "apertium eng-spa" in rows["en-es"] and "rule-based" in rows["en-es"]
    assert "en-ja" not in rows and "install xx-yy" in listing

    translator = find_translator("de", "it", TranslationOptions(models=translation_models()))
    assert isinstance(translator, ChainTranslator)
    assert translator.translate(["hello world", ""]) == ["hello world", ""]  # the copy model, twice
    german = find_translator("en", "de", TranslationOptions(models=translation_models()))
    assert isinstance(german, CT2Translator)
    cues = [Cue(0.0, 1.0, ["hello world the quick"]), Cue(1.1, 2.0, ["brown fox jumps over the lazy dog"])]
    assert [c.lines for c in translate_cues(cues, german, language="de")] == [c.lines for c in cues]


def test_corrupt_download_and_unknown_pair_install_nothing(index, settings, tmp_path):
    settings.TRANSLATION_PACKAGES_DIR = tmp_path / "packages"
    settings.TRANSLATION_PACKAGE_INDEX = index
    err = StringIO()
    with pytest.raises(CommandError, match="not installed: en-fr, en-es, en-ja"):
        call_command("translation_models", "install", "en-fr", "en-es", "en-ja", stdout=StringIO(), stderr=err)
    assert "en-fr: not installed: the package is damaged" in err.getvalue()  # a zip CRC does not match
    assert "en-es: not installed: the download's SHA-256 is" in err.getvalue()
    assert "has no en-ja package" in err.getvalue()
    assert translation_models() == {} or "en-fr" not in translation_models()
    assert not (tmp_path / "packages" / "en-fr").exists()
    assert [p.name for p in (tmp_path / "packages").iterdir()] == [], "no half-unpacked folder left"


def test_an_index_that_does_not_answer(settings, tmp_path):
    settings.TRANSLATION_PACKAGES_DIR = tmp_path / "packages"
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts connections, never answers
    try:
        err = StringIO()
        with pytest.raises(CommandError, match="not installed: en-de"):
            call_command(
                "translation_models",
                "install",
                "en-de",
                "--index",
                f"http://127.0.0.1:{silent.getsockname()[1]}/index.json",
                "--timeout",
                "1",
                stderr=err,
            )
        assert "could not download" in err.getvalue() and "timed out" in err.getvalue()
    finally:
        silent.close()
