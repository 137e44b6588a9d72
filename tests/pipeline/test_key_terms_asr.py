"""Key terms with the real `base` model (issue 54, item 4): a surname the model mishears comes out
spelt right with the job's key terms, and the rest of the sentence is unchanged (espeak-ng, no mocks).

The case is bench/asr/key_terms.py's term01, the most stable of its set: without key terms every
voice of the bench (and en-us read slower) gave "Aconk will add his", "O'Conquilla" or "Aconquila";
with them, "Okonkwe-Laddis" in every voice, the language given or detected."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import wer
from transcription.pipeline.recognition import asr
from transcription.pipeline.recognition.whisper_model import load_model

SENTENCE = "Please forward the invoice to Mr. Okonkwe-Laddis before Friday."
# the customer's glossary: the surname among terms this sentence does not hold
GLOSSARY = ("Zorvex", "Quillberry", "Okonkwe-Laddis", "Kestrova", "Pellworth", "Vantrelli")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_model("base", tmp_path_factory.mktemp("models"), device="cpu")


def _spoken(tmp_path: Path, voice: str, speed: int) -> Path:
    raw, wav = tmp_path / f"{voice}-{speed}.raw.wav", tmp_path / f"{voice}-{speed}.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), SENTENCE], check=True, timeout=60)
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-i", str(raw), "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(wav)],
        check=True,
        timeout=60,
    )
    return wav


@pytest.mark.parametrize("voice, speed", [("en-us", 165), ("en-gb", 145)])
def test_a_key_term_comes_out_spelt_right_where_it_did_not_without(model, tmp_path, voice, speed):
    wav = _spoken(tmp_path, voice, speed)
    plain = " ".join(s.text for s in asr.transcribe(model, wav, options=asr.RecognitionOptions(language="en")).segments)
    options = asr.RecognitionOptions(language="en", key_terms=GLOSSARY)
    biased = " ".join(s.text for s in asr.transcribe(model, wav, options=options).segments)
    assert "Okonkwe-Laddis" not in plain, plain
    assert "Okonkwe-Laddis" in biased, biased
    others = SENTENCE.replace("Okonkwe-Laddis ", "")
    assert wer(others, biased.replace("Okonkwe-Laddis ", "")) == 0.0, biased  # the rest as said
    assert not any(term in biased for term in GLOSSARY if term != "Okonkwe-Laddis"), biased


def test_key_terms_go_after_the_prompt_or_as_hotwords_as_asked():
    options = asr.RecognitionOptions(
        verbatim=True, prompt="Barton Cottage", key_terms=(" Zorvex ", "Mr. Okonkwe-Laddis")
    )
    assert asr.key_term_decoding(options, "prompt") == {
        "initial_prompt": f"{asr.VERBATIM_PROMPT} Barton Cottage Zorvex, Mr. Okonkwe-Laddis.",
        "hotwords": None,
    }
    assert asr.key_term_decoding(options, "hotwords") == {
        "initial_prompt": f"{asr.VERBATIM_PROMPT} Barton Cottage",
        "hotwords": "Zorvex, Mr. Okonkwe-Laddis",
    }
    assert asr.key_term_decoding(options, "both")["hotwords"] == "Zorvex, Mr. Okonkwe-Laddis"
    assert asr.key_term_decoding(asr.RecognitionOptions()) == {"initial_prompt": None, "hotwords": None}
    assert asr.KEY_TERMS_BY == "prompt"  # what bench/asr/key_terms.py measured best
    with pytest.raises(ValueError):
        asr.key_term_decoding(options, "prefix")
