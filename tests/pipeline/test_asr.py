"""Speech recognition with the real `base` model on LibriVox clips (no mocks)."""

from __future__ import annotations

import re
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.support import normalize, wer
from transcription.pipeline.media.wav import read_slice as read_wav_slice
from transcription.pipeline.recognition.asr import DEFAULT_BATCHED, RecognitionOptions, transcribe
from transcription.pipeline.recognition.languages import WHISPER_LANGUAGES as SUPPORTED_LANGUAGES
from transcription.pipeline.recognition.languages import whisper_language
from transcription.pipeline.recognition.whisper_model import load_model
from transcription.pipeline.types import Transcript

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def _references() -> dict[str, str]:
    refs = {}
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        m = re.match(r"\s*<s>(.*)</s>\s*\((.+)\)\s*$", line)
        if m:
            refs[m.group(2).strip()] = m.group(1).strip()
    return refs


REFS = _references()


def text_of(t: Transcript) -> str:
    return " ".join(s.text for s in t.segments)


def wav_duration(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


@pytest.fixture(scope="session")
def model(tmp_path_factory):
    return load_model("base", tmp_path_factory.mktemp("models"), device="cpu")


@pytest.fixture(scope="session")
def two_clips(tmp_path_factory) -> tuple[Path, float, str]:
    """Clip 0880 followed by clip 0930 in one WAV; returns (path, start of 2nd clip, its id)."""
    a = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"
    b = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0930.wav"
    out = tmp_path_factory.mktemp("wav") / "two.wav"
    with wave.open(str(out), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        for clip in (a, b):
            with wave.open(str(clip)) as r:
                w.writeframes(r.readframes(r.getnframes()))
    return out, wav_duration(a), b.stem


def test_wer_helper():
    assert wer("He was not", "he, WAS not!") == 0.0
    assert wer("a b c d", "a x c") == 0.5
    assert wer("ill disposed", "ill-disposed") == 0.0


def test_librivox_wer(model):
    errors = words = 0
    for fileid, ref in sorted(REFS.items()):
        t = transcribe(model, LIBRIVOX / f"{fileid}.wav")
        n = len(normalize(ref))
        errors += wer(ref, text_of(t)) * n
        words += n
        assert t.language == "en"
        assert t.duration == pytest.approx(wav_duration(LIBRIVOX / f"{fileid}.wav"), abs=0.01)
    total = errors / words
    print(f"\nWER over {len(REFS)} LibriVox clips ({words} words): {total:.3f}")
    assert total <= 0.15


@pytest.mark.parametrize("batched", [True, False])
def test_word_timestamps_inside_segments_and_increasing(model, batched):
    wav = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0870.wav"
    t = transcribe(model, wav, batched=batched)
    assert wer(REFS[wav.stem], text_of(t)) <= 0.15
    last = 0.0
    assert t.segments
    for seg in t.segments:
        assert seg.words
        assert 0.0 <= seg.start <= seg.end <= t.duration + 0.05
        for w in seg.words:
            assert seg.start <= w.start <= w.end <= seg.end
            assert w.start >= last
            assert 0.0 <= w.probability <= 1.0
            assert isinstance(w.start, float) and isinstance(w.end, float)
            last = w.end


def test_slice_offsets_timestamps(model, two_clips):
    path, second_start, second_id = two_clips
    progress: list[float] = []
    t = transcribe(
        model, path, start=second_start, options=RecognitionOptions(language="en"), on_progress=progress.append
    )
    assert wer(REFS[second_id], text_of(t)) <= 0.15
    assert "disposed" not in text_of(t).lower()  # first clip not read
    assert t.duration == pytest.approx(wav_duration(path) - second_start, abs=0.01)
    words = [w for s in t.segments for w in s.words]
    assert words[0].start >= second_start - 0.01
    assert words[-1].end <= wav_duration(path) + 0.05

    alone = transcribe(model, LIBRIVOX / f"{second_id}.wav", options=RecognitionOptions(language="en"))
    assert words[0].start == pytest.approx(alone.segments[0].words[0].start + second_start, abs=0.3)

    assert progress and progress[-1] == 1.0
    assert progress == sorted(progress)
    assert all(0.0 <= p <= 1.0 for p in progress)


def test_slice_with_end(model, two_clips):
    path, second_start, _ = two_clips
    t = transcribe(model, path, start=0.0, end=second_start)
    assert t.duration == pytest.approx(second_start, abs=0.01)
    text = text_of(t).lower()
    assert "young man" in text and "amiable" not in text
    assert all(s.end <= second_start + 0.05 for s in t.segments)


def test_iso639_3_language(model):
    wav = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0890.wav"
    t = transcribe(model, wav, options=RecognitionOptions(language="eng", verbatim=True))
    assert t.language == "en"
    assert wer(REFS[wav.stem], text_of(t)) <= 0.25


def test_unsupported_language_raises(model):
    wav = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"
    with pytest.raises(ValueError):
        transcribe(model, wav, options=RecognitionOptions(language="tlh"))  # Klingon
    with pytest.raises(ValueError):
        transcribe(model, wav, options=RecognitionOptions(task="summarize"))


@pytest.mark.parametrize(
    "code, expected",
    [
        ("en", "en"),
        ("eng", "en"),
        ("spa", "es"),
        ("ES", "es"),
        ("en-US", "en"),
        ("pt_BR", "pt"),
        ("deu", "de"),
        ("ger", "de"),
        ("cmn", "zh"),
        ("zho", "zh"),
        ("yue", "yue"),
        ("haw", "haw"),
        ("jav", "jw"),
        ("jv", "jw"),
        ("nob", "no"),
        ("tgl", "tl"),
        ("heb", "he"),
        ("iw", "he"),
        ("fas", "fa"),
        ("arb", "ar"),
    ],
)
def test_whisper_language_mapping(code, expected):
    assert whisper_language(code) == expected
    assert expected in SUPPORTED_LANGUAGES


@pytest.mark.parametrize("code", ["tlh", "xx", "zzz", "", "und", "qaa", "en-", None])
def test_whisper_language_rejects(code):
    with pytest.raises(ValueError):
        whisper_language(code)


def test_read_wav_slice(two_clips, tmp_path):
    path, second_start, _ = two_clips
    full = read_wav_slice(path)
    assert full.dtype == np.float32 and len(full) == round(wav_duration(path) * 16000)
    assert np.abs(full).max() <= 1.0
    part = read_wav_slice(path, 1.0, 2.5)
    assert len(part) == 24000
    np.testing.assert_array_equal(part, full[16000:40000])
    assert len(read_wav_slice(path, second_start, 10_000)) == len(full) - round(second_start * 16000)
    assert len(read_wav_slice(path, 10_000)) == 0

    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(44100)
        w.writeframes(b"\0" * 4000)
    with pytest.raises(ValueError, match="16 kHz mono"):
        read_wav_slice(stereo)


def test_the_speech_model_knows_exactly_the_languages_the_language_module_lists():
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    assert frozenset(_LANGUAGE_CODES) == SUPPORTED_LANGUAGES


def test_default_batched_is_bool():
    assert isinstance(DEFAULT_BATCHED, bool)


def test_batched_segments_are_sentences(model, two_clips):
    path, second_start, _ = two_clips
    t = transcribe(model, path, batched=True)
    assert [s.text.split()[0] for s in t.segments] == ["He", "He"]
    assert t.segments[1].start >= second_start - 0.3
    for s in t.segments:
        assert s.text == "".join(w.text for w in s.words).strip()


def test_split_sentences_keeps_abbreviations():
    from transcription.pipeline.recognition.asr import _split_sentences
    from transcription.pipeline.types import Segment, Word

    texts = [" Mr.", " J.", " Smith", " left.", " Then", " what?", " Nothing"]
    words = [Word(i, i + 0.5, t) for i, t in enumerate(texts)]
    parts = _split_sentences(Segment(0, 7, "".join(texts).strip(), words))
    assert [p.text for p in parts] == ["Mr. J. Smith left.", "Then what?", "Nothing"]
    assert [(p.start, p.end) for p in parts] == [(0, 3.5), (4, 5.5), (6, 6.5)]


def test_translate_task_runs(model):
    wav = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0930.wav"
    t = transcribe(model, wav, options=RecognitionOptions(task="translate"))
    assert t.language == "en"  # the source language, as detected
    assert wer(REFS[wav.stem], text_of(t)) <= 0.3


def test_speech_found_by_the_jobs_vad_pass_is_all_that_is_read(model, two_clips):
    from transcription.pipeline.speakers.speech import find_speech

    path, second_start, second_id = two_clips
    speech = find_speech(path).for_recognition()
    # the job's VAD pass, limited to the second clip: the first is never heard
    second_only = [(max(s, second_start), e) for s, e in speech if e > second_start]
    t = transcribe(model, path, options=RecognitionOptions(language="en"), speech=second_only)
    assert wer(REFS[second_id], text_of(t)) <= 0.15
    assert "disposed" not in text_of(t).lower()
    assert min(w.start for s in t.segments for w in s.words) >= second_start - 0.01
    # a slice whose audio holds no speech in the list gives no words
    assert (
        transcribe(
            model, path, end=second_start - 0.5, options=RecognitionOptions(language="en"), speech=second_only
        ).segments
        == []
    )


def test_speech_is_read_in_clips_of_at_most_one_whisper_window():
    from transcription.pipeline.recognition.asr import MAX_CLIP_SECONDS, _speech_clips

    regions = [(10.0, 12.0), (12.5, 20.0), (25.0, 95.0), (96.0, 97.0), (130.0, 131.0)]
    clips = _speech_clips(regions, offset=5.0, duration=100.0)
    # joined over short pauses, not over the 5 s one; the 70 s region cut evenly, its last piece
    # joined to the second after it; 130-131 s is outside the slice
    assert clips == [(5.0, 15.0), (20.0, 43.333), (43.333, 66.667), (66.667, 92.0)]
    assert all(end - start <= MAX_CLIP_SECONDS for start, end in clips)


def test_a_prompt_gives_the_spelling_the_client_prefers(model):
    wav = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0870.wav"  # "and mister john dashwood had then …"
    plain = text_of(transcribe(model, wav))
    prompted = text_of(
        transcribe(model, wav, options=RecognitionOptions(prompt="Mr. John Dashwod, Norland Park, Mrs. Dashwod."))
    )
    assert "Dashwood" in plain and "Dashwod" not in plain
    assert "Dashwod" in prompted
    assert wer(plain, prompted) <= 0.1, "the rest of the sentence is unchanged"
