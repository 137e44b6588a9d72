"""Local speakers (harness/local_speakers.py: benched, not shipped; kept working for meetings, issue 45):
the segmentation model's own speakers of each window given global speakers, and a voice heard over
another's line given its own turn there, on made-up model outputs and on real voices."""

from __future__ import annotations

import wave

import numpy as np
import pytest

from harness import local_speakers as local
from harness import speaker_audio as sa
from transcription.pipeline import speakers as sp
from transcription.pipeline.types import SpeakerTurn

FRAMES = 589
STEP = 270 / 16000
FIRST = 991 / 2 / 16000


def test_two_local_speakers_of_one_window_are_never_one_global_speaker():
    similarity = np.array([[0.9, 0.2], [0.8, 0.3]])  # both most like speaker 0
    assert local.assign(similarity, -1.0) == [0, 1]
    assert local.assign(similarity, 0.5) == [0, -1], "none is given a speaker it is not like"
    assert local.assign(np.array([[0.9, 0.1, 0.0]]), -1.0) == [0]


def _one_window(talks) -> local.LocalSpeakers:
    """One 10 s window: ``talks[j]`` (start, end) in seconds where local speaker j talks; local
    speaker j's embedding is the unit vector j."""
    times = FIRST + np.arange(FRAMES) * STEP
    talking = np.zeros((1, FRAMES, 3), dtype=bool)
    for j, (s, e) in enumerate(talks):
        talking[0, :, j] = (times >= s) & (times < e)
    alone = talking & (talking.sum(axis=2, keepdims=True) == 1)
    return local.LocalSpeakers(
        talking=talking,
        embeddings=np.eye(3, 4, dtype=np.float32)[None],
        whole=np.eye(3, 4, dtype=np.float32)[None],
        clean_s=(alone.sum(axis=1) * STEP).astype(np.float32),
        first_frames=np.zeros(1, dtype=np.int64),
        frames=FRAMES,
    )


def test_a_voice_the_model_hears_over_another_gets_a_turn_there():
    # A talks 0.5-9.5 s; B (local speaker 1) also talks 3-6 s, alone 6-7 s: clustering saw only A,
    # then B
    window = _one_window([(0.5, 6.0), (3.0, 7.0)])
    turns = [SpeakerTurn(0.5, 6.0, 1), SpeakerTurn(6.0, 7.0, 2)]
    centres = np.eye(2, 4)
    out = local.local_turns(turns, centres, window, [(0.5, 7.0)], local.LocalReading(margin=0.2))
    assert [t for t in out if t.speaker == 1] == [SpeakerTurn(0.5, 6.0, 1)], "A keeps its turn"
    (b,) = [t for t in out if t.speaker == 2]
    assert b.start == pytest.approx(3.0, abs=0.03) and b.end == 7.0
    # a local speaker too unlike either voice adds nothing
    # B's local speaker nearly as like A (0.87) as B (1): too vague to add a voice on its own...
    vague_centres = np.array([[0.5, np.sqrt(0.75), 0, 0], [0, 1, 0, 0]])
    alone = local.LocalReading(margin=0.2, slack=None)
    assert local.local_turns(turns, vague_centres, window, [(0.5, 7.0)], alone) == turns
    # ... but beside A's local speaker, sure to be A, it is the other voice
    beside = local.LocalReading(margin=0.2, slack=0.2)
    assert local.local_turns(turns, vague_centres, window, [(0.5, 7.0)], beside) == out


@pytest.mark.skipif(not sa.have_ffmpeg() or not sa.clips("nl", "v"), reason="needs ffmpeg and fillets-ng-data-nl")
def test_a_second_voice_over_a_long_line_gets_both_speakers(encoder, audio_cache):
    voices = {"m": sa.clips("nl", "m"), "v": sa.clips("nl", "v")}
    fixture = sa.conversation(
        audio_cache / "turns.wav",
        voices,
        n_clips=10,
        seed=5,
        min_len=2.0,
        max_len=8.0,
        gap=(0.4, 0.8),
        cache=audio_cache / "clips",
    )
    # one of v's clips (3 s) laid over the middle of m's longest line (6 s)
    start, end, _ = max((t for t in fixture.turns if t[2] == "m"), key=lambda t: t[1] - t[0])
    over = next(c for c in (sa.decode(p, audio_cache / "clips") for p in voices["v"]) if 1.5 <= len(c) / 16000 <= 3.0)
    with wave.open(str(fixture.path)) as w:
        audio = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768
    at = int(((start + end) / 2 - len(over) / 32000) * 16000)
    audio = audio.copy()
    audio[at : at + len(over)] += over
    sa.write_wav(audio_cache / "over-a-line.wav", audio)
    overlapped = np.arange(at / 16000 + 0.2, (at + len(over)) / 16000 - 0.2, 0.01)  # clear of its edges

    def both_talk(turns: list[SpeakerTurn]) -> float:
        """The share of the overlapped time where both speakers have a turn."""
        return float(np.mean([len({x.speaker for x in turns if x.start <= t < x.end}) == 2 for t in overlapped]))

    turns = local.diarize_with_local(audio_cache / "over-a-line.wav", encoder)  # the reading calibration chose
    assert {t.speaker for t in turns} == {1, 2}
    shared = both_talk(turns)
    assert shared > 0.8, f"both voices over the line: {shared:.2f} {turns}"
    before = np.arange(start + 0.2, at / 16000 - 0.2, 0.01)
    assert all(len({x.speaker for x in turns if x.start <= t < x.end}) == 1 for t in before), "one voice before"
    # without local speakers it is the service's diarization, which hears less of both voices
    shipped = sp.diarize(audio_cache / "over-a-line.wav", encoder=encoder)
    assert local.diarize_with_local(audio_cache / "over-a-line.wav", encoder, reading=None) == shipped
    assert both_talk(shipped) < shared - 0.2, shared
