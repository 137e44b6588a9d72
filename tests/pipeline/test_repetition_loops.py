"""Issue 54 item 2: no output carries a repetition loop (a word or word group more than three times
in a row, a piece of a word four times over) unless a verbatim job's words say it was said so."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from transcription.pipeline.recognition import repetition
from transcription.pipeline.transcripts.captions import from_srt
from transcription.pipeline.transcripts.results import build_results
from transcription.pipeline.types import Segment, Word

SETTINGS = settings(max_examples=200, deadline=None)
# what Whisper wrote in the loops seen (bench/asr/side_by_side.py, the Polish and Hindi)
SEEN = ["7,", "czy,", "Szyb!", "0-0-0-0-0-0-0-0-0-0-0-0.", "iekzijajajajajajaja", "Thank you.", "10,"]
VOCABULARY = ["Jeden,", "dwa,", "trzy,", "jak", "się", "masz.", "the", "plan", "is", "fine.", "no,", "yes"]


def words_of(texts: list[str], step: float = 0.3, probability: float = 0.9) -> list[Word]:
    return [Word(k * step, k * step + step * 0.8, " " + t, probability) for k, t in enumerate(texts)]


def test_a_loop_is_cut_to_one_turn_and_three_turns_stay():
    cut = repetition.cut_loops(words_of(["1,", "7,", "7,", "7,", "7,", "7,", "8."]))
    assert "".join(w.text for w in cut).strip() == "1, 7, 8."
    said = words_of(["no,", "no,", "no,", "I", "said"])
    assert repetition.cut_loops(said) == said
    group = repetition.cut_loops(words_of(["czy,", "co,", "jań,"] * 5 + ["koniec."]))
    assert "".join(w.text for w in group).strip() == "czy, co, jań, koniec."


def test_a_loop_inside_a_word_is_cut():
    cut = repetition.cut_loops(words_of(["Pchnąć", "iekzijajajajajajaja"]))
    assert cut[-1].text == " iekzija"
    assert repetition.cut_loops(words_of(["0-0-0-0-0-0-0-0."]))[0].text == " 0-0."
    # one character held, and numbers, are not loops
    held = words_of(["Hmmmm,", "1000000", "haha"])
    assert repetition.cut_loops(held) == held


def test_a_loop_over_segments_is_cut():
    segments = [Segment(k, k + 0.8, "Szyb!", words_of(["Szyb!"])) for k in range(6)]
    segments = [
        Segment(s.start, s.end, s.text, [Word(s.start, s.start + 0.5, w.text, 0.9) for w in s.words]) for s in segments
    ]
    cut = repetition.cut_segment_loops(segments)
    assert [s.text for s in cut] == ["Szyb!"]


def test_a_verbatim_job_keeps_what_was_said_that_way_and_cuts_a_loop():
    said = words_of(["no,"] * 5 + ["stop."], step=0.4, probability=0.9)
    assert repetition.cut_loops(said, verbatim=True) == said
    # a loop Whisper wrote: words crowded into no time, heard with little confidence
    looped = [Word(2.0 + k * 0.02, 2.0 + k * 0.02 + 0.02, " 7,", 0.2) for k in range(12)]
    assert len(repetition.cut_loops(looped, verbatim=True)) == 1


def _has_loop(text: str) -> bool:
    return repetition.has_loop(text)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.sampled_from(VOCABULARY + SEEN), st.integers(min_value=1, max_value=12)),
        min_size=1,
        max_size=14,
    ),
    st.integers(min_value=1, max_value=4),
)
def test_no_output_carries_a_loop(runs, per_segment):
    # words, some written many times over as Whisper's loops are, cut into segments of a few words
    texts = [text for text, times in runs for _ in range(times)]
    words = words_of(texts, probability=0.3)
    segments = [
        Segment(chunk[0].start, chunk[-1].end, "".join(w.text for w in chunk).strip(), chunk)
        for chunk in (words[k : k + per_segment * 3] for k in range(0, len(words), per_segment * 3))
    ]
    results = build_results(segments, [], language="pl")
    assert not _has_loop(results["txt"]), results["txt"]
    cues = " ".join(cue.text for cue in from_srt(results["srt"]))
    assert not _has_loop(cues), cues
    vtt = " ".join(line for line in results["webvtt"].splitlines() if line and "-->" not in line and line != "WEBVTT")
    assert not _has_loop(vtt), vtt
    spoken = " ".join(s["text"] for s in results["segments"])
    assert not _has_loop(spoken), spoken
    # what was said once or up to three times in a row is all there
    first = [t.rstrip(",.!") for t, _ in runs]
    assert all(t.split("-")[0].lower()[:3] in spoken.lower() for t in first), (first, spoken)
