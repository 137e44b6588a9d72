"""Issue 21: no speech dropped by batched decoding, and an unsure language detection looked at again.

The real `base` model, espeak-ng and the Dutch voice actor of fillets-ng-data-nl (no mocks).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from transcription.pipeline import asr, language_id
from transcription.pipeline.types import Segment, Word
from transcription.pipeline.wav import read_slice
from transcription.pipeline.whisper_model import load_model

FILLETS = Path("/usr/share/games/fillets-ng/sound/airplane/nl")
# Three sentences read by espeak-ng's Japanese voice (kana: it reads no kanji). Whisper `base`
# hears them poorly, and in one batched chunk it falls into a repetition loop that swallows the rest.
JAPANESE = "こんにちは、おげんきですか。いち、に、さん、よん、ご、ろく、なな、はち、きゅう、じゅう。きょうはとてもいいてんきなので、ともだちといっしょにこうえんへさんぽにいきました。"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_model("base", tmp_path_factory.mktemp("models"), device="cpu")


def _wav(source: list[Path], dest: Path, gap: float = 0.6) -> Path:
    inputs = []
    for path in source:
        inputs += ["-i", str(path)]
    pads = "".join(f"[{i}:a]apad=pad_dur={gap}[a{i}];" for i in range(len(source)))
    joined = "".join(f"[a{i}]" for i in range(len(source)))
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-y",
            *inputs,
            "-filter_complex",
            f"{pads}{joined}concat=n={len(source)}:v=0:a=1",
        ]
        + ["-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", str(dest)],
        check=True,
        timeout=60,
    )
    return dest


def test_uncovered_speech_is_the_speech_no_word_touches():
    words = [Word(1.0, 1.5, " a", 0.9), Word(1.6, 2.0, " b", 0.9), Word(6.0, 6.5, " c", 0.9)]
    segments = [Segment(1.0, 6.5, "a b c", words)]
    assert asr.uncovered_speech([(0.5, 7.0), (8.0, 9.0)], segments, pad=0.2) == [
        (0.5, 0.8),
        (2.2, 5.8),
        (6.7, 7.0),
        (8.0, 9.0),
    ]


def test_a_chunk_lost_in_a_repetition_loop_is_decoded_again(model, tmp_path):
    raw = tmp_path / "espeak.wav"
    subprocess.run(["espeak-ng", "-v", "ja", "-s", "150", "-w", str(raw), JAPANESE], check=True, timeout=60)
    spoken = _wav([raw], tmp_path / "ja.wav")
    before = asr.transcribe(model, spoken, language="ja", recover_dropped=False)
    assert any(asr._compression_ratio(s.text) > asr.MAX_COMPRESSION_RATIO for s in before.segments), (
        "the batched decoding this guards against loops here"
    )
    after = asr.transcribe(model, spoken, language="ja")
    assert after.segments and all(asr._compression_ratio(s.text) <= asr.MAX_COMPRESSION_RATIO for s in after.segments)
    audio = read_slice(spoken, 0.0, None)
    regions = [(s / 16000, e / 16000) for s, e in language_id.speech_regions(audio)]
    gaps = [b - a for a, b in asr.uncovered_speech(regions, after.segments)]
    assert max(gaps, default=0.0) < asr.MIN_UNCOVERED_S, "every stretch of speech has words"


def test_an_unsure_detection_is_decided_over_several_windows(model, tmp_path):
    clip = _wav([FILLETS / "let-m-divna.ogg", FILLETS / "let-m-oko.ogg"], tmp_path / "nl.wav")
    audio = read_slice(clip, 0.0, None)
    detection = language_id.detect_language(model, audio)
    assert detection.windows > 1, "under 15 s of speech: one look is not enough"
    assert detection.language == "nl"
    assert 0.5 < detection.probability <= 1
