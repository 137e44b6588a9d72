"""A recording with pauses comes back with each sentence once (issue 54, item 1), the real `base`
model and espeak-ng (no mocks).

bench/live's recordings (three sentences, 1.2 s of silence after each) came back from
``asr.transcribe`` with a sentence said again after the last pause: the pauses, read as speech,
were decoded again with the text before them as the prompt, and Whisper, given silence and a
prompt, says the prompt again. The bare library, sequential and batched, says each sentence once.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness.speaker_audio import write_wav
from transcription.pipeline.media import audio as media_audio
from transcription.pipeline.media.wav import SAMPLE_RATE, read_slice
from transcription.pipeline.recognition import asr
from transcription.pipeline.recognition.whisper_model import load_model

# bench/live/stream.py's English sentences, read as it reads them
SENTENCES = [
    "The meeting starts at nine o'clock on Monday morning.",
    "Please bring the quarterly report and your notes from the last call.",
    "We will discuss the budget, the hiring plan and the new office.",
]
PAUSE_S = 1.2


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_model("base", tmp_path_factory.mktemp("models"), device="cpu")


@pytest.fixture(scope="module")
def reading(tmp_path_factory) -> Path:
    """As bench/live/stream.py makes it: 0.5 s of silence, then each sentence followed by PAUSE_S of
    silence (the last one too)."""
    folder = tmp_path_factory.mktemp("pauses")
    parts = [np.zeros(int(0.5 * SAMPLE_RATE), np.float32)]
    for sentence in SENTENCES:
        raw = folder / "raw.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "165", "-w", str(raw), sentence], check=True, timeout=60)
        parts += [read_slice(media_audio.to_wav(raw, folder / "s.wav", timeout=60))]
        parts += [np.zeros(int(PAUSE_S * SAMPLE_RATE), np.float32)]
    wav = folder / "reading.wav"
    write_wav(wav, np.concatenate(parts))
    return wav


def _times(phrase: str, text: str) -> int:
    return len(re.findall(phrase, re.sub(r"[^\w' ]", "", text.casefold())))


@pytest.mark.parametrize("task", ["transcribe", "translate"])
def test_the_last_sentence_after_a_pause_comes_back_once(model, reading, task):
    # as bench/live's file path and the translation stage call it: Whisper's VAD, no speech handed in
    options = asr.RecognitionOptions(language="en", task=task)
    text = " ".join(s.text for s in asr.transcribe(model, reading, options=options).segments)
    segments, _ = model.transcribe(read_slice(reading), language="en", word_timestamps=True, vad_filter=True)
    bare = " ".join(s.text for s in segments)
    for phrase in ("monday morning", "quarterly report", "hiring plan", "we will discuss"):
        assert _times(phrase, bare) == 1, bare  # the bare library says each once
        assert _times(phrase, text) == 1, text
    assert len(text.split()) <= len(" ".join(SENTENCES).split()) + 2, text
