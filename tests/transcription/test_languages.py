import pytest

from transcription.pipeline.recognition.languages import UnknownLanguage, normalize_language, whisper_language


@pytest.mark.parametrize(
    "text,code",
    [
        ("Spanish", "es"),
        ("spanish", "es"),
        ("es", "es"),
        ("SPA", "es"),
        ("Catalan", "ca"),
        ("zho", "zh"),
        ("français", "fr"),
    ],
)
def test_names_and_iso_codes_are_understood(text, code):
    assert normalize_language(text) == code


@pytest.mark.parametrize("text", ["", "xx", "qaa", "1", "Elvish-ish", "éé", "\x00\U000f4cf6¡H÷", "Span\x00ish"])
def test_unknown_languages_are_refused(text):
    with pytest.raises(UnknownLanguage):
        normalize_language(text)


def test_speech_codes_follow_the_recogniser():
    assert whisper_language("eng") == "en"
    assert whisper_language("jav") == "jw"  # Whisper's code for Javanese
    with pytest.raises(UnknownLanguage):
        whisper_language("tlh")  # a real language Whisper does not know
