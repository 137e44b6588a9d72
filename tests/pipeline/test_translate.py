"""Tests for transcription.pipeline.translate (and captions.from_srt / wrap_lines).

Everything runs for real: Debian's Apertium, and CTranslate2 on a tiny Marian copy model that
``tiny_marian`` trains and converts here (no downloads), so "hello world" must come back exactly.
Apertium is installed by bin/install-system-packages: without it these tests fail, never skip.
"""

from __future__ import annotations

import re
import shutil

import pytest

from transcription.pipeline.recognition.languages import language_label
from transcription.pipeline.transcripts.captions import Cue, from_srt, to_srt
from transcription.pipeline.transcripts.linebreaks import wrap_lines
from transcription.pipeline.translate import (
    ApertiumTranslator,
    CT2Translator,
    TranslationFailed,
    TranslationOptions,
    TranslationUnavailable,
    align_translated_words,
    find_translator,
    nllb_code,
    translate_cues,
    unavailable_message,
)
from transcription.pipeline.types import Word

from .tiny_marian import build_tiny_marian

CUES = [
    Cue(0.5, 2.4, ["The cat is on the table."]),
    Cue(2.48, 5.2, ["I think we should go to the market", "before it closes tonight."]),
    Cue(5.28, 7.0, ["- Where are you going?", "- To the library."]),
    Cue(7.08, 9.5, ["Zorblat bought a new house."]),
    Cue(9.58, 12.0, ["My brother lives in a big city", "and he works in a hospital."]),
    Cue(12.08, 14.0, ["Thank you very much."]),
]

MARKS = re.compile(r"(?:^|\s)[*#@]\w")


def words_of(cues: list[Cue]) -> str:
    return " ".join(" ".join(cue.lines) for cue in cues).lower()


def check_shape(source: list[Cue], translated: list[Cue]) -> None:
    assert len(translated) == len(source)
    for before, after in zip(source, translated):
        assert (after.start, after.end) == (before.start, before.end)
        assert after.lines, f"empty translation of {before.lines}"
        assert 1 <= len(after.lines) <= 2
        for line in after.lines:
            assert not MARKS.search(line), line
            assert line == line.strip() and "  " not in line
        if all(len(line) <= 36 for line in before.lines):  # short source: the target fits
            assert all(len(line) <= 42 for line in after.lines), after.lines


# ---------------------------------------------------------------------------------------------
# Apertium
# ---------------------------------------------------------------------------------------------


def test_english_to_spanish_keeps_cues_and_translates():
    translator = find_translator("en", "es")
    assert isinstance(translator, ApertiumTranslator)
    assert translator.name == "apertium eng-spa"
    spanish = translate_cues(CUES, translator, language="es")
    check_shape(CUES, spanish)
    text = words_of(spanish)
    assert "el gato" in text and "mesa" in text
    assert "biblioteca" in text and "hermano" in text and "hospital" in text
    assert "the cat" not in text and "library" not in text
    assert "Zorblat" in spanish[3].text  # an unknown proper noun comes through, unmarked
    assert spanish[2].lines[0].startswith("- ") and spanish[2].lines[1].startswith("- ")
    assert len(spanish[2].lines) == 2 and "biblioteca" in spanish[2].lines[1].lower()


def test_english_to_catalan():
    translator = find_translator("eng", "cat")  # 639-3 codes work too
    assert translator is not None and translator.name == "apertium eng-cat"
    catalan = translate_cues(CUES, translator, language="ca")
    check_shape(CUES, catalan)
    text = words_of(catalan)
    assert "el gat" in text and "taula" in text and "biblioteca" in text
    assert "germà" in text and "the cat" not in text
    assert [line[:2] for line in catalan[2].lines] == ["- ", "- "]


def test_english_to_portuguese_pivots_through_spanish():
    translator = find_translator("en", "pt")
    assert translator is not None and translator.name == "apertium eng-spa + es-pt"
    portuguese = translate_cues(CUES, translator, language="pt")
    check_shape(CUES, portuguese)
    text = words_of(portuguese)
    assert "o gato" in text and "mesa" in text and "irmão" in text and "obrigado" in text
    assert "el gato" not in text


def test_unsupported_pair():
    assert find_translator("en", "ja") is None
    message = unavailable_message("en", "ja")
    assert message.startswith("Translation from English to Japanese is not available on this server")
    assert "en-ja" in message and "python manage.py translation_models install en-ja" in message
    assert str(TranslationUnavailable("en", "ja")) == message
    assert str(TranslationUnavailable(message)) == message
    assert language_label("es") == "Spanish" and language_label("ast") == "Asturian"


def test_markup_characters_and_empty_texts_survive():
    translator = find_translator("en", "es")
    out = translator.translate(["Tom & Jerry <3 cheese > bread.", "", "[music]", "The #1 dog, @home."])
    assert len(out) == 4
    assert "Tom & Jerry <3" in out[0] and ">" in out[0] and "queso" in out[0]
    assert "&amp;" not in out[0] and "&lt;" not in out[0]
    assert out[1] == ""
    assert out[2].lower() in {"[music]", "[música]"}
    assert "#1" in out[3] and "@" in out[3]  # the customer's own marks stay


def test_apertium_failures_are_translation_failed():
    with pytest.raises(TranslationFailed, match="failed"):
        ApertiumTranslator(["xx-yy"]).translate(["Hello."])
    slow = ApertiumTranslator(["eng-spa"], timeout=0.001, source="en", target="es")
    with pytest.raises(TranslationFailed, match="English to Spanish took longer"):
        slow.translate(["Hello there."] * 200)


# ---------------------------------------------------------------------------------------------
# CTranslate2
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_marian(tmp_path_factory):
    return build_tiny_marian(tmp_path_factory.mktemp("tiny-marian"))


def test_ctranslate2_copy_model_round_trip(tiny_marian):
    translator = find_translator("en", "es", TranslationOptions(models={"en-es": str(tiny_marian)}))
    assert isinstance(translator, CT2Translator)
    assert translator.name == f"ctranslate2 {tiny_marian.name}"
    texts = ["hello world", "", "the quick brown fox jumps over the lazy dog", "zebra queen xylophone"]
    assert translator.translate(texts) == texts
    # loaded once per folder
    from transcription.pipeline.translate import ctranslate

    assert str(tiny_marian.resolve()) in ctranslate._MODELS
    cues = [Cue(0.0, 1.5, ["hello world"]), Cue(1.6, 3.0, ["- good morning", "- very good night"])]
    out = translate_cues(cues, translator, language="es")
    assert [(c.start, c.end, c.lines) for c in out] == [(c.start, c.end, c.lines) for c in cues]


def test_ctranslate2_pair_keys_and_preference(tiny_marian):
    models = {"eng-spa": str(tiny_marian)}
    assert isinstance(find_translator("en", "es", TranslationOptions(models=models)), CT2Translator)
    other = find_translator("en", "ca", TranslationOptions(models=models))  # no CTranslate2 model for this pair
    assert not isinstance(other, CT2Translator)


def test_ctranslate2_broken_folder(tmp_path, tiny_marian):
    missing = find_translator("en", "de", TranslationOptions(models={"en-de": str(tmp_path / "nope")}))
    assert isinstance(missing, CT2Translator)
    with pytest.raises(TranslationFailed, match="English to German .*could not be loaded"):
        missing.translate(["hello"])
    broken = tmp_path / "broken"
    shutil.copytree(tiny_marian, broken)
    (broken / "model.bin").write_bytes(b"not a model")
    with pytest.raises(TranslationFailed, match="could not be loaded"):
        CT2Translator(broken, source="en", target="de").translate(["hello world"])


@pytest.fixture(scope="session")
def tiny_nllb(tmp_path_factory):
    return build_tiny_marian(tmp_path_factory.mktemp("tiny-nllb"), nllb=True)


def test_ctranslate2_nllb_layout(tiny_nllb, tiny_marian):
    models = {"*": str(tiny_nllb)}
    translator = find_translator("en", "es", TranslationOptions(models=models))
    assert isinstance(translator, CT2Translator) and translator.is_nllb
    texts = ["hello world", "very good morning", ""]
    # the forced "spa_Latn" prefix is stripped; a wrong source/prefix layout would shift the copy
    assert translator.translate(texts) == texts
    # a pair-specific folder wins over "*"
    models["en-es"] = str(tiny_marian)
    assert find_translator("en", "es", TranslationOptions(models=models)).name == f"ctranslate2 {tiny_marian.name}"
    # a language the NLLB folder lacks: readable failure naming the pair
    japanese = find_translator("en", "ja", TranslationOptions(models=models))
    with pytest.raises(TranslationFailed, match="English to Japanese is not available"):
        japanese.translate(["hello world"])


def test_nllb_codes():
    assert nllb_code("es") == "spa_Latn" and nllb_code("spa") == "spa_Latn"
    assert nllb_code("ja") == "jpn_Jpan" and nllb_code("ar") == "arb_Arab"
    assert nllb_code("sk") == "slk_Latn"  # generic rule: alpha3 + script
    assert nllb_code("sr") == "srp_Cyrl"


# ---------------------------------------------------------------------------------------------
# translate_cues and align_translated_words, pure
# ---------------------------------------------------------------------------------------------


class Upper:
    name = "upper"

    def __init__(self):
        self.calls: list[list[str]] = []

    def translate(self, texts):
        self.calls.append(list(texts))
        return [
            f"{text.upper()} AND SOME MUCH LONGER WORDS ADDED" if text.startswith("long") else text.upper()
            for text in texts
        ]


def test_translate_cues_shapes():
    cues = [
        Cue(0, 1, ["long text", "on two lines"]),
        Cue(1, 2, ["- yes", "- no"]),
        Cue(2, 3, []),
        Cue(3, 4, ["[music]"]),
        Cue(4, 5, ["- not a dialogue"]),
    ]
    fake = Upper()
    out = translate_cues(cues, fake)
    # "[music]" and the next cue end no sentence: they go to the backend as one text
    assert fake.calls == [["long text on two lines", "yes", "no", "[music] - not a dialogue"]]
    assert [(c.start, c.end) for c in out] == [(c.start, c.end) for c in cues]
    assert out[0].lines == ["LONG TEXT ON TWO LINES", "AND SOME MUCH LONGER WORDS ADDED"]  # not "... AND"
    assert out[1].lines == ["- YES", "- NO"]
    assert out[2].lines == []
    assert out[3].lines == ["[MUSIC]"]
    assert out[4].lines == ["- NOT A DIALOGUE"]


def test_translate_cues_wrong_count_fails():
    class Bad:
        name = "bad"

        def translate(self, texts):
            return texts[:-1]

    with pytest.raises(TranslationFailed):
        translate_cues([Cue(0, 1, ["a"]), Cue(1, 2, ["b"])], Bad())


def test_wrap_lines():
    assert wrap_lines("") == []
    assert wrap_lines("Short line.") == ["Short line."]
    lines = wrap_lines("The quick brown fox jumps over the lazy dog and runs away into the forest.")
    assert len(lines) == 2 and all(len(line) <= 42 for line in lines)
    assert abs(len(lines[0]) - len(lines[1])) <= 8
    assert not lines[0].endswith(" the")
    long = " ".join(["word"] * 40)  # 199 characters: still two balanced lines, no word lost
    lines = wrap_lines(long)
    assert len(lines) == 2 and abs(len(lines[0]) - len(lines[1])) <= 5
    assert " ".join(lines) == long
    cjk = "今日はとても良い天気ですね。散歩に行きましょうか。公園で友達に会えるかもしれません。今夜"
    lines = wrap_lines(cjk)
    assert "".join(lines) == cjk and len(lines) == 2 and all(len(line) <= 42 for line in lines)


def w(start: float, end: float, text: str) -> Word:
    return Word(start, end, " " + text)


def test_align_translated_words():
    cues = [Cue(0.0, 2.0, ["uno dos"]), Cue(2.1, 4.0, ["tres"]), Cue(4.1, 6.0, ["cuatro"]), Cue(8.0, 9.0, ["cinco"])]
    words = [
        w(0.1, 0.5, "One"),
        w(0.6, 1.0, "two,"),
        w(1.1, 1.9, "three"),
        w(2.2, 3.0, "four"),
        w(3.1, 3.9, "five"),
        w(6.5, 7.0, "six"),
        w(9.5, 9.8, "seven."),
    ]
    out = align_translated_words(cues, words)
    assert [(c.start, c.end) for c in out] == [(c.start, c.end) for c in cues]
    assert [c.text for c in out] == ["One two, three", "four five", "six", "seven."]  # nearest cue


def test_align_fills_empty_cues_in_order():
    cues = [Cue(0.0, 1.0, ["a"]), Cue(1.1, 2.0, ["b"]), Cue(2.1, 3.0, ["c"]), Cue(3.1, 8.0, ["d"])]
    words = [w(3.2 + 0.5 * k, 3.6 + 0.5 * k, f"w{k}") for k in range(5)]  # all in the last cue
    out = align_translated_words(cues, words)
    assert all(c.lines for c in out)
    assert " ".join(c.text for c in out) == "w0 w1 w2 w3 w4"  # order kept
    assert [(c.start, c.end) for c in out] == [(c.start, c.end) for c in cues]
    # fewer words than cues: nothing invented, nothing lost
    out = align_translated_words(cues, words[:2])
    assert " ".join(c.text for c in out if c.lines) == "w0 w1"
    assert sum(1 for c in out if c.lines) == 2
    assert align_translated_words([], words) == []
    long = [w(0.1 * k, 0.1 * k + 0.05, f"word{k}") for k in range(20)]
    out = align_translated_words([Cue(0.0, 2.0, ["x"])], long)
    assert len(out[0].lines) == 2 and " ".join(out[0].lines).split() == [f"word{k}" for k in range(20)]


# ---------------------------------------------------------------------------------------------
# from_srt
# ---------------------------------------------------------------------------------------------


def test_from_srt_round_trip():
    cues = [
        Cue(0.0, 1.5, ["Hello there."]),
        Cue(1.58, 4.321, ["- Tom & Jerry <i>not italic</i>", "- {braces} and a \\ backslash"]),
        Cue(5.0, 7.0, ["12 monkeys", "3"]),
        Cue(3600.001, 3602.5, ["¿Dónde está la biblioteca?"]),
    ]
    srt = to_srt(cues)
    parsed = from_srt(srt)
    assert to_srt(parsed) == srt
    assert [(c.start, c.end) for c in parsed] == [(c.start, c.end) for c in cues]
    assert parsed[0].lines == ["Hello there."]
    # the word joiners SubRip's escapes put after "<" keep a reader from taking the text for a tag
    assert parsed[1].lines[0] == "- Tom & Jerry <\u2060i>not italic<\u2060/i>"
    assert parsed[3].lines == ["¿Dónde está la biblioteca?"]
    assert from_srt("") == []


class Recorder:
    name = "recorder"

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def translate(self, texts):
        self.calls.append(list(texts))
        return [self.answer(text) for text in texts]


def test_a_sentence_spanning_two_cues_is_translated_as_one():
    cues = [Cue(0.0, 2.0, ["I think we should go to the market"]), Cue(2.1, 4.0, ["before it closes tonight."])]
    spanish = Recorder(lambda text: "Creo que deberíamos ir al mercado antes de que cierre esta noche.")
    out = translate_cues(cues, spanish, language="es")
    assert spanish.calls == [["I think we should go to the market before it closes tonight."]]
    assert [(c.start, c.end) for c in out] == [(0.0, 2.0), (2.1, 4.0)]
    # cut by the source cues' shares (34 and 25 characters: 37 of the 65), at a word boundary
    assert out[0].text == "Creo que deberíamos ir al mercado antes"
    assert out[1].text == "de que cierre esta noche."
    shouting = Recorder(lambda text: "Creo que deberíamos ir al mercado antes. De que cierre esta noche.")
    assert translate_cues(cues, shouting, language="es")[1].text.startswith("De")  # a new sentence keeps it
    capital = Recorder(lambda text: "Creo que deberíamos ir al mercado antes De que cierre esta noche.")
    assert translate_cues(cues, capital, language="es")[1].text.startswith("de que"), "a continuation: lower case"
    # a name (capitalised inside the source) and German nouns keep their capital
    from transcription.pipeline.translate.casing import continue_lowercase

    source = "We went to the market with John and Mary."
    assert continue_lowercase(["Fuimos al mercado con", "John y Mary."], source, "", "es")[1] == "John y Mary."
    assert continue_lowercase(["Fuimos al mercado y", "Compramos pan."], source, "", "es")[1] == "compramos pan."
    assert continue_lowercase(["Wir gingen zum", "Markt mit John."], source, "", "de")[1] == "Markt mit John."


def test_words_move_to_a_neighbouring_cue_of_the_sentence_when_one_cannot_fit():
    cues = [Cue(0.0, 3.0, ["A long first part of the sentence here"]), Cue(3.1, 5.0, ["and short."])]
    long = "Una primera parte muy larga de la oración que ocupa mucho más espacio que el original inglés y corto."
    out = translate_cues(cues, Recorder(lambda text: long), language="es")
    assert all(len(c.lines) <= 2 and all(len(line) <= 42 for line in c.lines) for c in out)
    assert " ".join(c.text.replace("\n", " ") for c in out).split() == long.split()


LIBRIVOX = [
    "And Mr. John Dashwood had then leisure to consider how much there might be prudently in his power to do for them.",
    "He was not an ill-disposed young man, unless to be rather cold-hearted and rather selfish is to be ill-disposed.",
    "Had he married a more amiable woman, he might have been made still more respectable than he was.",
    "He might even have been made amiable himself.",
]


@pytest.mark.parametrize("target", ["es", "ca", "gl", "eo", "pt", "it", "fr", "oc", "ast", "an"])
def test_librivox_through_every_offline_pair_keeps_the_layout_rules(target):
    from bench.translation.defects import cues_for

    source = cues_for(LIBRIVOX)
    translator = find_translator("en", target)
    assert translator is not None, f"en-{target} is offline"
    out = translate_cues(source, translator, language=target)
    assert [(c.start, c.end) for c in out] == [(c.start, c.end) for c in source]
    for before, after in zip(out, out[1:]):
        assert after.lines and 1 <= len(after.lines) <= 2 and all(len(line) <= 42 for line in after.lines), after
        assert not MARKS.search(after.text), after.text
        if not before.lines[-1].endswith((".", "?", "!")):
            assert not after.text[0].isupper() or after.text.split()[0] in {"John", "Dashwood"}, after.text
    text = words_of(out)
    assert "dashwood" in text and "he might even have been" not in text


def test_chinese_japanese_korean_lines_hold_16_full_width_characters():
    cues = [Cue(0.0, 3.0, ["I think we should go to the market"]), Cue(3.1, 6.0, ["before it closes tonight."])]
    japanese = "今夜お店が閉まる前に、私たちは市場に行くべきだと思います。それから家に帰りましょう。"
    out = translate_cues(cues, Recorder(lambda text: japanese), language="ja")
    assert "".join("".join(c.lines) for c in out) == japanese, "nothing lost, no spaces added"
    for cue in out:
        assert 1 <= len(cue.lines) <= 2 and all(len(line) <= 16 for line in cue.lines), cue.lines


@pytest.mark.parametrize("target", ["fr", "pt", "it"])
def test_through_spanish_no_spanish_word_is_left(target):
    translator = find_translator("en", target)
    english = ["And a few changes were made to the schedule.", "That is, I must add, quite newsworthy."]
    out = " ".join(translator.translate(english)).lower().split()
    assert not {"cuantos", "noticioso", "unos"} & set(out), out


def test_a_word_after_an_unknown_first_word_keeps_its_lower_case():
    for target, verb in (("es", "compró"), ("fr", "a"), ("pt", "comprou")):
        [text] = find_translator("en", target).translate(["Zorblat bought a new house."])
        assert text.split()[:2] == ["Zorblat", verb], text


def test_a_sentence_over_two_cues_through_apertium_reads_as_one():
    cues = [Cue(0.0, 2.0, ["And a few changes were made"]), Cue(2.1, 4.0, ["to the network on Tuesday night."])]
    for target in ("es", "fr"):
        out = translate_cues(cues, find_translator("en", target), language=target)
        first, second = out[0].text, out[1].text
        assert first[0].isupper() and not first.endswith("."), first
        assert second[0].islower() and second.endswith("."), second  # "a la red…", not "A la red…"
        assert "cuantos" not in f"{first} {second}".lower() or target == "es"
