"""Enrolled voices in the pipeline: one embedding for a stretch of speech, the sample's checks, and
which speakers of a recording are which voice, on real voices (Fish Fillets NG's actors)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.speaker_audio import clips, conversation, have_ffmpeg
from transcription.pipeline import speakers
from transcription.pipeline.speakers import voices
from transcription.pipeline.speakers.voices import match_voices, speaker_regions
from transcription.pipeline.transcripts.results import build_results
from transcription.pipeline.transcripts.speaker_names import name_txt, name_webvtt, speakers_in
from transcription.pipeline.types import Segment, SpeakerTurn, Word

pytestmark = pytest.mark.skipif(not have_ffmpeg(), reason="needs ffmpeg")


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_each_voice_names_at_most_one_speaker_and_only_when_alike_enough():
    speakers_ = {1: unit(1, 0, 0), 2: unit(0.9, 0.1, 0), 3: unit(0, 0, 1)}
    voices = [("alice", unit(1, 0.05, 0)), ("bob", unit(0, 1, 0))]
    assert match_voices(speakers_, voices, threshold=0.8) == {1: "alice"}, "the most alike pair wins; bob is far"
    assert match_voices(speakers_, voices, threshold=0.9999) == {}
    assert match_voices(speakers_, [("other-encoder", unit(1, 0, 0, 0))], threshold=0.1) == {}


def test_a_speakers_longest_turns_are_kept_up_to_the_limit():
    turns = [SpeakerTurn(0, 5, 1), SpeakerTurn(5, 30, 2), SpeakerTurn(30, 70, 1), SpeakerTurn(70, 100, 1)]
    regions = speaker_regions(turns, max_seconds=60)
    assert regions[2] == [(5, 30)]
    assert regions[1] == [(30, 70), (70, 90)], "the longest first, cut at 60 s, in time order"


def test_txt_numbers_cues_and_names_agree_whatever_the_turns_were_numbered():
    def segment(text, start):
        words = [Word(start + i * 0.4, start + i * 0.4 + 0.35, " " + w) for i, w in enumerate(text.split())]
        return Segment(start, words[-1].end, " " + text, words)

    segments = [segment("Hello there my friend.", 1.0), segment("Hi to you.", 4.0), segment("Shall we go?", 7.0)]
    turns = [SpeakerTurn(0.5, 3.5, 5), SpeakerTurn(3.8, 6.0, 2), SpeakerTurn(6.5, 9.0, 5)]
    results = build_results(segments, turns, language="en", voice_names={2: "Bob", 9: "Nobody"})
    assert speakers_in(results["txt"]) == [1, 2]
    assert results["speaker_names"] == {"2": "Bob"}, "turn speaker 2 reads as Speaker 2: it speaks second"
    assert "<v Speaker 1>Hello there" in results["webvtt"] and "<v Speaker 2>Hi to you.</v>" in results["webvtt"]
    named = name_txt(results["txt"], results["speaker_names"])
    assert named.split("\n\n")[1] == "[00:00:04] Bob: Hi to you."
    assert "<v Bob>Hi to you.</v>" in name_webvtt(results["webvtt"], results["speaker_names"])


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """A sample of one Dutch actor, another of two, and a conversation of that actor with a third
    voice from clips the samples do not use."""
    work = tmp_path_factory.mktemp("voices")
    cache = work / "cache"
    big, small, czech = clips("nl", "v"), clips("nl", "m"), clips("cs", "v")
    return {
        "alice": conversation(work / "alice.wav", {"v": big[0::2]}, n_clips=8, cache=cache, seed=1),
        "two": conversation(work / "two.wav", {"v": big[0::2], "m": small[0::2]}, n_clips=10, cache=cache, seed=2),
        "talk": conversation(work / "talk.wav", {"v": big[1::2], "c": czech}, n_clips=12, cache=cache, seed=3),
    }


def _diarize(path, regions, extent):
    return speakers.diarize(path, regions=regions, extent=extent)


def test_a_sample_of_one_voice_gives_its_embedding_and_two_voices_are_refused(recordings):
    activity = speakers.speech.find_speech(recordings["alice"].path)
    sample = voices.voice_sample(
        recordings["alice"].path, activity.for_diarization(), activity.for_turns(), diarize=_diarize
    )
    assert sample.embedding.dtype == np.float32 and abs(float(np.linalg.norm(sample.embedding)) - 1) < 1e-4
    assert sample.speech_seconds > 5

    activity = speakers.speech.find_speech(recordings["two"].path)
    with pytest.raises(voices.VoiceSampleError, match="holds 2 voices"):
        voices.voice_sample(recordings["two"].path, activity.for_diarization(), activity.for_turns(), diarize=_diarize)
    with pytest.raises(voices.VoiceSampleError, match="10 to 120 seconds long; this one is 7 s"):
        voices.check_sample_length(7)
    voices.check_sample_length(10)
    voices.check_sample_length(120)


def test_the_enrolled_voice_names_its_speaker_in_another_recording_and_no_one_else(recordings):
    activity = speakers.speech.find_speech(recordings["alice"].path)
    alice = voices.embed_speech(recordings["alice"].path, activity.for_diarization())
    talk = recordings["talk"]
    turns = speakers.diarize(talk.path)
    assert len({t.speaker for t in turns}) == 2
    heard = voices.recognise_voices(talk.path, turns, [("alice", alice)])
    assert list(heard.values()) == ["alice"]
    [speaker] = heard

    # the named speaker is the one who speaks where the reference says the enrolled actor does
    def heard_as(name: str) -> float:
        mine = [t for t in turns if t.speaker == speaker]
        return sum(max(0.0, min(e, t.end) - max(s, t.start)) for s, e, who in talk.turns if who == name for t in mine)

    truth = {name: heard_as(name) for name in ("v", "c")}
    assert truth["v"] > truth["c"]
