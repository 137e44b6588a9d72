"""Changes of speaker redrawn by the segmentation model: on made-up model outputs (where the change
moves, what stays), on real voices talking over each other, and what the overlapping turns do to
the words' speakers and the voice prints."""

from __future__ import annotations

import numpy as np
import pytest

from harness import speaker_audio as sa
from transcription.pipeline import speakers as sp
from transcription.pipeline.speakers import segmentation as seg
from transcription.pipeline.speakers.changes import redraw_changes
from transcription.pipeline.speakers.voices import speaker_regions
from transcription.pipeline.types import Segment, SpeakerTurn, Word

FRAMES = 589


def _activity(classes_at) -> seg.SpeakerActivity:
    """One 10 s window whose frame at time t holds the powerset class ``classes_at(t)``."""
    window = seg.SpeakerActivity(
        starts=np.zeros(1, dtype=np.int64), probabilities=np.zeros((1, FRAMES, 7), np.float16), samples=160000
    )
    probabilities = np.zeros((1, FRAMES, 7), dtype=np.float16)
    for i, t in enumerate(window.frame_times(0)):
        probabilities[0, i, classes_at(t)] = 1.0
    return seg.SpeakerActivity(starts=window.starts, probabilities=probabilities, samples=160000)


def _two_voices(t: float) -> int:
    """Window speaker 1 (class 1) talks from 0.5 to 5.2 s, speaker 2 (class 2) from 4.7 to 9.5 s."""
    if 4.7 <= t < 5.2:
        return 4  # both
    if 0.5 <= t < 5.2:
        return 1
    if 4.7 <= t < 9.5:
        return 2
    return 0


def test_a_change_is_moved_where_the_model_hears_it_and_the_overlap_kept():
    turns = [SpeakerTurn(0.5, 5.0, 1), SpeakerTurn(5.0, 9.5, 2)]
    first, second = redraw_changes(turns, _activity(_two_voices))
    assert (first.speaker, second.speaker) == (1, 2)
    assert first.start == 0.5 and second.end == 9.5, "only the change moves"
    assert first.end == pytest.approx(5.2, abs=0.03) and second.start == pytest.approx(4.7, abs=0.03)


def test_a_change_moves_at_most_three_quarters_of_a_second():
    turns = [SpeakerTurn(0.5, 4.2, 1), SpeakerTurn(4.2, 9.5, 2)]  # clustering put the change 1 s early
    first, second = redraw_changes(turns, _activity(_two_voices))
    assert first.end == pytest.approx(4.2 + 0.75, abs=0.03), "the first voice goes on past reach: cut there"
    assert second.start == pytest.approx(4.7, abs=0.03)


def test_changes_the_model_cannot_read_stay_where_they_were():
    one_voice = _activity(lambda t: 1 if 0.5 <= t < 9.5 else 0)
    turns = [SpeakerTurn(0.5, 5.5, 1), SpeakerTurn(5.5, 9.5, 2)]
    assert redraw_changes(turns, one_voice) == turns
    apart = [SpeakerTurn(0.5, 2.0, 1), SpeakerTurn(6.0, 9.5, 2)]  # 4 s of pause between them
    assert redraw_changes(apart, _activity(_two_voices)) == apart
    same = [SpeakerTurn(0.5, 5.5, 1), SpeakerTurn(5.5, 9.5, 1)]
    assert redraw_changes(same, _activity(_two_voices)) == [SpeakerTurn(0.5, 9.5, 1)]


def test_a_word_inside_an_overlap_goes_to_the_turn_it_lies_deeper_in():
    turns = [SpeakerTurn(0.0, 5.2, 1), SpeakerTurn(4.6, 9.0, 2)]
    words = [Word(4.0, 4.5, " a"), Word(4.65, 4.85, " b"), Word(4.95, 5.15, " c"), Word(5.4, 5.8, " d")]
    out = sp.assign_speakers([Segment(4.0, 5.8, " a b c d", words)], turns)
    assert [s.text for s in out] == ["a b", "c d"]
    assert [s.speaker for s in out] == [1, 2]


def test_a_voice_heard_only_under_another_gets_an_empty_segment_there():
    # 2 talks under 1's line from 2.0 to 3.5 s; Whisper wrote only 1's words; 1 and 2 also overlap
    # briefly at the change at 6 s, where each has its words
    turns = [SpeakerTurn(0.0, 6.1, 1), SpeakerTurn(2.0, 3.5, 2), SpeakerTurn(5.9, 9.0, 2)]
    words = [Word(0.5, 1.0, " one"), Word(2.2, 2.8, " two"), Word(3.0, 5.8, " three"), Word(6.2, 8.0, " four")]
    out = sp.assign_speakers([Segment(0.5, 8.0, " one two three four", words)], turns, heard_under=True)
    assert [(s.start, s.end, s.text, s.speaker) for s in out] == [
        (0.5, 5.8, "one two three", 1),
        (2.0, 3.5, "", 2),
        (6.2, 8.0, "four", 2),
    ]
    assert not out[1].words, "every word has one speaker"
    assert [s.text for s in sp.assign_speakers([Segment(0.5, 8.0, " one two three four", words)], turns)] == [
        "one two three",
        "four",
    ], "without heard_under: the words' segments only"


def test_the_results_show_a_voice_under_another_in_the_segments_only():
    from transcription.pipeline.transcripts.results import build_results

    turns = [SpeakerTurn(0.0, 6.1, 1), SpeakerTurn(2.0, 3.5, 2), SpeakerTurn(9.0, 12.0, 3)]
    words = [Word(0.5, 1.0, " One"), Word(2.2, 2.8, " two"), Word(3.0, 5.8, " three.")]
    later = [Word(9.2, 9.8, " Four"), Word(10.0, 11.5, " five.")]
    results = build_results(
        [Segment(0.5, 5.8, " One two three.", words), Segment(9.2, 11.5, " Four five.", later)], turns, language="en"
    )
    assert [(s["start"], s["end"], s["text"], s["speaker"]) for s in results["segments"]] == [
        (0.5, 5.8, "One two three.", 1),
        (2.0, 3.5, "", 3),  # heard only under speaker 1: numbered after the speakers with words
        (9.2, 11.5, "Four five.", 2),
    ]
    assert results["txt"] == "[00:00:00] Speaker 1: One two three.\n\n[00:00:09] Speaker 2: Four five.\n"
    assert "Speaker 3" not in results["srt"] and results["srt"].count("-->") == 2


def test_voice_prints_leave_out_what_two_speakers_say_at_once():
    turns = [SpeakerTurn(0.0, 5.2, 1), SpeakerTurn(4.6, 9.0, 2), SpeakerTurn(9.5, 20.0, 1), SpeakerTurn(12, 13, 2)]
    assert speaker_regions(turns) == {1: [(0.0, 4.6), (9.5, 12), (13, 20.0)], 2: [(5.2, 9.0)]}


def _frame_error(reference: list[tuple[float, float, str]], turns: list[SpeakerTurn]) -> float:
    """Each speaker's frames (10 ms) wrongly on or off, under the better mapping of two speakers to
    two voices, over the reference's speech: a diarization error rate that counts overlap."""
    grid = np.arange(0, max(e for _, e, _ in reference) + 1, 0.01) + 0.005
    names = sorted({who for _, _, who in reference})
    truth = [np.any([(grid >= s) & (grid < e) for s, e, w in reference if w == n], axis=0) for n in names]
    found = [np.any([(grid >= t.start) & (grid < t.end) for t in turns if t.speaker == k], axis=0) for k in (1, 2)]
    wrong = min((truth[0] ^ found[a]).sum() + (truth[1] ^ found[b]).sum() for a, b in ((0, 1), (1, 0)))
    return float(wrong / (truth[0].sum() + truth[1].sum()))


@pytest.mark.skipif(not sa.have_ffmpeg() or not sa.clips("nl", "v"), reason="needs ffmpeg and fillets-ng-data-nl")
def test_two_actors_talking_over_each_other_at_turn_changes(encoder, audio_cache, monkeypatch):
    voices = {"m": sa.clips("nl", "m"), "v": sa.clips("nl", "v")}
    fixture = sa.conversation(
        audio_cache / "over.wav", voices, n_clips=16, seed=4, gap=(-0.9, 0.3), cache=audio_cache / "clips"
    )
    turns = sp.diarize(fixture.path, encoder=encoder)
    assert {t.speaker for t in turns} == {1, 2}
    for speaker in (1, 2):
        own = [t for t in turns if t.speaker == speaker]
        assert all(a.end < b.start for a, b in zip(own, own[1:], strict=False)), "a voice never overlaps itself"
    assert any(a.end > b.start for a, b in zip(turns, turns[1:], strict=False)), "both talk at some change"
    monkeypatch.setattr(sp, "default_segmentation", lambda: None)  # the changes where clustering put them
    as_clustered = sp.diarize(fixture.path, encoder=encoder)
    assert all(a.end <= b.start for a, b in zip(as_clustered, as_clustered[1:], strict=False))
    assert _frame_error(fixture.turns, turns) < _frame_error(fixture.turns, as_clustered) - 0.01
