"""pipeline.transcripts.transcript_edits: edits applied to a segments document, checked, and the text and
subtitles made again from it."""

import pytest

from transcription.pipeline.transcripts import transcript_edits as te


def _seg(text, start, speaker, step=0.5):
    words = [
        {"start": round(start + i * step, 3), "end": round(start + i * step + 0.4, 3), "word": w, "probability": 0.5}
        for i, w in enumerate(text.split())
    ]
    return {"start": start, "end": words[-1]["end"], "text": text, "speaker": speaker, "words": words}


DOC = [_seg("One two three four.", 0.0, 1), _seg("Five six.", 3.0, 2), _seg("Seven eight nine.", 5.0, 2)]


def test_indices_are_the_last_reads_even_after_a_split():
    out = te.apply_edits(
        DOC, [{"op": "split", "index": 0, "word": 2}, {"op": "text", "index": 2, "text": "Seven ate nine."}],
        duration=10, original=DOC,
    )  # fmt: skip
    assert [s["text"] for s in out] == ["One two", "three four.", "Five six.", "Seven ate nine."]
    assert out[3]["words"][1] == {**DOC[2]["words"][1], "word": "ate", "probability": 1.0}, (
        "times kept, typed word certain"
    )
    assert out[3]["words"][0] == DOC[2]["words"][0], "a word left as heard keeps its probability"
    assert DOC[0]["text"] == "One two three four.", "the input is not changed"


def test_a_segment_split_or_merged_away_cannot_be_named_again():
    with pytest.raises(te.EditsRefused) as refused:
        te.apply_edits(
            DOC,
            [{"op": "split", "index": 0, "word": 1}, {"op": "text", "index": 0, "text": "x"},
             {"op": "merge", "index": 1}, {"op": "text", "index": 2, "text": "y"}],
            duration=10, original=DOC,
        )  # fmt: skip
    assert [(p.edit, p.field) for p in refused.value.problems] == [(1, "index"), (3, "index")]
    assert "merged into segment 1" in refused.value.problems[1].message


def test_new_text_of_other_length_shares_the_segments_time():
    out = te.with_text(DOC[1], "Five and a half six.")
    assert out["words"][0]["start"] == 3.0 and out["words"][-1]["end"] == DOC[1]["end"]
    starts = [w["start"] for w in out["words"]]
    assert starts == sorted(starts) and len(starts) == 5


def test_a_run_of_words_to_a_new_speaker_and_merging_different_speakers_is_refused():
    out = te.apply_edits(
        DOC, [{"op": "speaker", "index": 0, "speaker": 3, "from_word": 1, "to_word": 2}], duration=10, original=DOC
    )
    assert [(s["speaker"], s["text"]) for s in out[:3]] == [(1, "One"), (3, "two three"), (1, "four.")]
    with pytest.raises(te.EditsRefused) as refused:
        te.apply_edits(
            DOC, [{"op": "merge", "index": 0}, {"op": "speaker", "index": 1, "speaker": 5}], duration=10, original=DOC
        )
    assert [(p.edit, p.field) for p in refused.value.problems] == [(0, "index"), (1, "speaker")]


def test_times_stay_inside_the_media_and_between_the_neighbours():
    good = te.apply_edits(DOC, [{"op": "times", "index": 2, "start": 6.0, "end": 10.0}], duration=10, original=DOC)
    assert good[2]["words"][0]["start"] == 6.0 and good[2]["words"][-1]["end"] <= 10.0
    with pytest.raises(te.EditsRefused) as refused:
        te.apply_edits(
            DOC,
            [{"op": "times", "index": 1, "start": 1.0}, {"op": "times", "index": 2, "end": 10.5},
             {"op": "times", "index": 0, "start": 1.0, "end": 0.5}],
            duration=10, original=DOC,
        )  # fmt: skip
    assert [(p.edit, p.field) for p in refused.value.problems] == [(0, "start"), (1, "end"), (2, "end")]


def test_a_voice_heard_under_another_neither_bounds_nor_is_bounded_by_the_spoken_segments():
    under = {"start": 1.0, "end": 2.5, "text": "", "speaker": 3, "words": []}  # results.build_results' kind
    doc = [DOC[0], under, *DOC[1:]]
    out = te.apply_edits(
        doc,
        [{"op": "times", "index": 0, "end": 2.9}, {"op": "times", "index": 1, "start": 0.5, "end": 2.0}],
        duration=10, original=doc,
    )  # fmt: skip
    assert (out[0]["end"], out[1]["start"], out[1]["end"]) == (2.9, 0.5, 2.0)
    with pytest.raises(te.EditsRefused) as refused:
        te.apply_edits(doc, [{"op": "times", "index": 0, "end": 3.5}], duration=10, original=doc)
    assert "3.000" in refused.value.problems[0].message, "the next spoken segment bounds it"
    assert te.render(out, language="en")["txt"].count("Speaker") == 2


@pytest.mark.parametrize("text", ["", "   ", "a\nb", "x --> y", "x" * 501])
def test_text_limits(text):
    with pytest.raises(te.EditsRefused):
        te.apply_edits(DOC, [{"op": "text", "index": 0, "text": text}], duration=10, original=DOC)


def test_render_keeps_the_speakers_numbers():
    out = te.apply_edits(DOC, [{"op": "speaker", "index": 0, "speaker": 3}], duration=10, original=DOC)
    rendered = te.render(out, language="en")
    assert rendered["txt"].startswith("[00:00:00] Speaker 3: One two three four.")
    assert "<v Speaker 3>One two three four.</v>" in rendered["webvtt"]
    assert "1\n00:00:00,000 --> " in rendered["srt"]
