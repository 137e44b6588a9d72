"""Local speakers (speakers/local.py: the service reads them where a recording's voices overlap,
issue 45): the segmentation model's own speakers of each window given global speakers, and a voice
heard over another's line given its own turn there, on made-up model outputs and on real voices."""

from __future__ import annotations

import re
import wave

import numpy as np
import pytest

from harness import speaker_audio as sa
from transcription.pipeline import speakers as sp
from transcription.pipeline.speakers import local
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


def _over_a_line(audio_cache) -> tuple[sa.Fixture, tuple[float, float, str], int, int]:
    """A Dutch conversation with one of v's clips (1.5-3 s) laid over the middle of m's longest line:
    the fixture, that line, and the clip's first sample and length (written to over-a-line.wav)."""
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
    return fixture, (start, end, "m"), at, len(over)


@pytest.mark.skipif(not sa.have_ffmpeg() or not sa.clips("nl", "v"), reason="needs ffmpeg and fillets-ng-data-nl")
def test_a_second_voice_over_a_long_line_gets_both_speakers(encoder, audio_cache):
    _, (start, _, _), at, length = _over_a_line(audio_cache)
    overlapped = np.arange(at / 16000 + 0.2, (at + length) / 16000 - 0.2, 0.01)  # clear of its edges

    def both_talk(turns: list[SpeakerTurn]) -> float:
        """The share of the overlapped time where both speakers have a turn."""
        return float(np.mean([len({x.speaker for x in turns if x.start <= t < x.end}) == 2 for t in overlapped]))

    turns = sp.diarize(audio_cache / "over-a-line.wav", encoder=encoder, overlap=True)
    assert {t.speaker for t in turns} == {1, 2}
    shared = both_talk(turns)
    assert shared > 0.8, f"both voices over the line: {shared:.2f} {turns}"
    before = np.arange(start + 0.2, at / 16000 - 0.2, 0.01)
    assert all(len({x.speaker for x in turns if x.start <= t < x.end}) == 1 for t in before), "one voice before"
    # without local speakers only the changes are redrawn, which hears less of both voices
    without = sp.diarize(audio_cache / "over-a-line.wav", encoder=encoder, overlap=False)
    assert both_talk(without) < shared - 0.2, shared


@pytest.mark.skipif(not sa.have_ffmpeg() or not sa.clips("nl", "v"), reason="needs ffmpeg and fillets-ng-data-nl")
def test_a_voice_heard_over_a_line_shows_in_the_segments_and_diarized_json_not_in_txt(encoder, audio_cache, tmp_path):
    """Real voices and the real speech model: where v talks over m's line, the job's segments and
    the OpenAI door's diarized_json hold two segments overlapping in time; `txt` and the subtitles
    give every word one speaker."""
    from transcription.api.doors.openai_compat import render
    from transcription.pipeline.recognition.asr import RecognitionOptions, transcribe
    from transcription.pipeline.recognition.whisper_model import load_model
    from transcription.pipeline.transcripts.results import build_results

    _, _, at, length = _over_a_line(audio_cache)
    wav = audio_cache / "over-a-line.wav"
    turns = sp.diarize(wav, encoder=encoder, overlap=True)
    transcript = transcribe(
        load_model("base", tmp_path / "models", device="cpu"), wav, options=RecognitionOptions(language="nl")
    )
    # verbatim: the words as the model wrote them (the default cleaning drops stutters such as a
    # repeated "aan het", which the model writes on some CPUs and not others)
    results = build_results(transcript.segments, turns, language="nl", verbatim=True)
    segments = results["segments"]
    words = [w for s in segments for w in s["words"]]
    assert len(words) == sum(len(s.words) for s in transcript.segments), "every word in one segment only"
    over = (at / 16000, (at + length) / 16000)
    laid = [
        (a, b)
        for a in segments
        for b in segments
        if a["speaker"] != b["speaker"]
        and a["start"] < b["end"]
        and b["start"] < a["end"]
        and a["start"] < over[1]
        and a["end"] > over[0]
    ]
    assert laid, f"two speakers' segments overlap where both talk: {segments}"
    under = [s for s in segments if not s["text"]]
    assert all(not s["words"] for s in under)
    # txt and the cues: only the words, each line a speaker with something said
    assert all(re.match(r"^\[\d\d:\d\d:\d\d\] Speaker \d+: \S", line) for line in results["txt"].split("\n\n") if line)
    assert results["txt"].count("\n\n") + 1 == len(results["txt"].strip().split("\n\n"))
    assert "-->" in results["srt"]
    result = {
        "segments": segments,
        "srt": results["srt"],
        "webvtt": results["webvtt"],
        "language": "dutch",
        "duration": 60.0,
    }
    _, diarized = render(result, "diarized_json", [], False)
    spans = [(s["start"], s["end"], s["speaker"]) for s in diarized["segments"]]
    assert any(
        a[2] != b[2] and a[0] < b[1] and b[0] < a[1] and a[0] < over[1] and a[1] > over[0] for a in spans for b in spans
    ), spans
    assert diarized["text"] == " ".join(s["text"] for s in segments if s["text"]).strip()


def test_second_voices_are_read_in_a_meeting_where_voices_overlap_not_in_a_conversation():
    from transcription.pipeline.speakers import segmentation as seg

    def activity(both: float) -> seg.SpeakerActivity:
        """One 10 s window: speech from 0.5 to 9.5 s, two voices (class 4) over ``both`` seconds of it."""
        blank = seg.SpeakerActivity(np.zeros(1, np.int64), np.zeros((1, FRAMES, 7), np.float16), 160000)
        p = np.zeros((1, FRAMES, 7), np.float16)
        for i, t in enumerate(blank.frame_times(0)):
            p[0, i, 4 if 0.5 <= t < 0.5 + both else 1 if 0.5 <= t < 9.5 else 0] = 1.0
        return seg.SpeakerActivity(blank.starts, p, 160000)

    assert local.overlap_share(activity(0.9)) == pytest.approx(0.1, abs=0.01)
    assert local.hears_overlap(activity(0.9), speakers=3)
    assert not local.hears_overlap(activity(0.9), speakers=2), "two voices: a conversation keeps its turns"
    assert not local.hears_overlap(activity(0.2), speakers=4), "overlap only at changes of speaker"
