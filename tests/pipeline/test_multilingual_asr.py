"""Issue 21: no speech dropped by batched decoding, and an unsure language detection looked at again.

The real `base` model, espeak-ng and the Dutch voice actor of fillets-ng-data-nl (no mocks).
"""

from __future__ import annotations

import difflib
import re
import subprocess
from pathlib import Path

import pytest

from transcription.pipeline.media.wav import read_slice
from transcription.pipeline.recognition import asr, language_id, repetition
from transcription.pipeline.recognition.whisper_model import load_model
from transcription.pipeline.speakers.speech import find_speech
from transcription.pipeline.types import Segment, Word

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


def test_a_loop_no_decoding_escapes_keeps_one_turn_of_each_repetition():
    said = [
        "こんにちは、",
        "いち、",
        "よん、",
        "はち、",
        "よん、",
        "はち、",
        "よん、",
        "はち、",
        "よん、",
        "はち、",
        "じゅう。",
    ]
    words = [Word(k * 0.5, k * 0.5 + 0.4, w, 0.5) for k, w in enumerate(said)]
    looping = Segment(0.0, 5.4, "".join(said), words)
    cut = asr._without_repetition(looping)
    assert cut.text == "こんにちは、いち、よん、はち、じゅう。"
    assert [w.start for w in cut.words] == [0.0, 0.5, 1.0, 1.5, 5.0] and cut.end == 5.4
    # twice is how people speak ("no, no"), not a loop
    plain = Segment(
        0.0,
        2.0,
        " no, no, I said no",
        [Word(k * 0.4, k * 0.4 + 0.3, w, 0.9) for k, w in enumerate([" no,", " no,", " I", " said", " no"])],
    )
    assert asr._without_repetition(plain).text == "no, no, I said no"


def test_a_stretch_decoded_with_its_surroundings_keeps_only_its_own_words():
    # the recovery decodes a lost stretch with a second of audio either side: the neighbours' words
    # that come back with it are already in the transcript and must not be added twice
    words = [Word(0.2, 0.6, " before", 0.9), Word(1.1, 1.5, " lost", 0.9), Word(1.6, 2.0, " words", 0.9)]
    words.append(Word(2.9, 3.3, " after", 0.9))
    seg = Segment(0.2, 3.3, "before lost words after", words)
    inside = asr._words_within(seg, 1.0, 2.5)
    assert inside.text == "lost words" and (inside.start, inside.end) == (1.1, 2.0)
    assert asr._words_within(seg, 0.0, 5.0) is seg
    assert asr._words_within(seg, 2.1, 2.8) is None


# Which reading loops depends on the CPU's int8 kernels (one machine looped on the default voice at
# 150 words a minute, another did not), so several readings are decoded: some of them loop. The
# recovery decodes without repeating any three tokens: with Whisper's sampled temperature fallback
# instead, one decoding in eight left a second or more of speech without words on an AMD EPYC VM.
# Three voices: each loops without the recovery and costs 40-60 s of decoding with it here (the
# default voice again at 170 words a minute, a fourth reading until 2026-12, added a minute and
# nothing the other three do not show).
READINGS = [("ja", 150), ("ja+f3", 150), ("ja+m3", 130)]


def test_a_chunk_lost_in_a_repetition_loop_is_decoded_again(model, tmp_path):
    looped = 0
    left: list[tuple[str, int, float]] = []
    for voice, speed in READINGS:
        raw = tmp_path / f"espeak-{voice}-{speed}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), JAPANESE], check=True, timeout=60)
        spoken = _wav([raw], tmp_path / f"ja-{voice}-{speed}.wav")
        if not looped:  # one reading that loops without the recovery is enough to show it is needed
            before = asr.transcribe(model, spoken, options=asr.RecognitionOptions(language="ja"), recover_dropped=False)
            looped += any(asr._compression_ratio(s.text) > asr.MAX_COMPRESSION_RATIO for s in before.segments)
        after = asr.transcribe(model, spoken, options=asr.RecognitionOptions(language="ja"))
        assert after.segments, (voice, speed)
        assert all(asr._compression_ratio(s.text) <= asr.MAX_COMPRESSION_RATIO for s in after.segments), (
            voice,
            speed,
            [s.text for s in after.segments],
        )
        # a loop that compresses no better than speech is a loop too ("7 , 7 , 8, 8 , 7, 10, 10 , ...")
        assert not any(repetition.has_loop(s.text) for s in after.segments), (voice, speed, after.segments)
        audio = read_slice(spoken, 0.0, None)
        regions = [(s / 16000, e / 16000) for s, e in language_id.speech_regions(audio)]
        gaps = [b - a for a, b in asr.uncovered_speech(regions, after.segments)]
        left.append((voice, speed, round(max(gaps, default=0.0), 2)))
    assert looped, "batched decoding without the recovery loops on some of these readings"
    # every stretch of speech has words in all readings but at most one: on 2026-11-27's machine (AVX2
    # kernels only) one full run in two left 1.5 s of the ja+f3 reading without words
    assert sum(gap >= asr.MIN_UNCOVERED_S for _, _, gap in left) <= 1, left


def test_an_unsure_detection_is_decided_over_several_windows(model, tmp_path):
    clip = _wav([FILLETS / "let-m-divna.ogg", FILLETS / "let-m-oko.ogg"], tmp_path / "nl.wav")
    audio = read_slice(clip, 0.0, None)
    detection = language_id.detect_language(model, audio)
    assert detection.windows > 1, "under 15 s of speech: one look is not enough"
    assert detection.language == "nl"
    assert 0.5 < detection.probability <= 1


# Issue 54: a Polish reading (espeak-ng) came back from the service as its first sentence and a loop
# ("1, 3, 4, 5, 6, 7, 8, 7 , 7 , 8, 8 , 7, 10, 10 , 10, 20 , ..."), where the bare library's sequential
# decoding keeps the greeting and the counting (the pangram is lost in every mode: bench/asr/README.md). The check is on sentences, not on the language or a
# few words: that is what let the loss through.
POLISH = ["Dzień dobry, jak się masz?", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10."]
POLISH_NUMBERS = "jeden dwa trzy cztery pięć sześć siedem osiem dziewięć dziesięć".split()


def _polish_words(text: str) -> list[str]:
    numbers = {w: str(k) for k, w in enumerate(POLISH_NUMBERS, 1)}
    return [numbers.get(w, w) for w in re.findall(r"\w+", text.lower())]


def _kept(sentence: str, text: str) -> bool:
    """More than half the sentence's words arrive (the same or spelt at least half alike)."""
    heard = _polish_words(text)
    near = [any(difflib.SequenceMatcher(None, w, h).ratio() >= 0.5 for h in heard) for w in _polish_words(sentence)]
    return sum(near) > len(near) / 2


def test_a_polish_reading_keeps_every_sentence_the_bare_library_keeps(model, tmp_path):
    # as bench/asr/multilingual_set.py reads it (clip pl-espeak): each sentence on its own, 0.6 s apart
    said = POLISH + ["Pchnąć w tę łódź jeża lub ośm skrzyń fig."]
    raws = []
    for k, sentence in enumerate(said):
        raws.append(tmp_path / f"pl-{k}.raw.wav")
        subprocess.run(["espeak-ng", "-v", "pl", "-s", "170", "-w", str(raws[-1]), sentence], check=True, timeout=60)
    clip = _wav(raws, tmp_path / "pl.wav")
    speech = find_speech(clip).for_recognition()
    transcript = asr.transcribe(model, clip, speech=speech)  # as the transcribing stage calls it
    text = " ".join(s.text for s in transcript.segments)
    assert transcript.language == "pl"
    assert all(_kept(sentence, text) for sentence in POLISH), text
    assert not any(repetition.has_loop(s.text) for s in transcript.segments), text
