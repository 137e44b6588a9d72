"""pipeline.transcripts.rerender: an edited transcript's txt, srt and webvtt made again only where the edit
reached are byte for byte the whole render (transcript_edits.render), after every edit of a long
random sequence (text, speaker, split, merge, times, restore) on a transcript shaped as the speech
model writes them; and the cues it says changed are the only ones that differ."""

from __future__ import annotations

import random

import pytest

from transcription.pipeline.transcripts import captions, rerender
from transcription.pipeline.transcripts import transcript_edits as te

# what Whisper writes besides plain words: punctuation of its own, quotes and dashes, numbers,
# audio-event tags, a web address longer than a subtitle line, function words a line must not end on
WORDS = (
    "the of and a to in is you that it he was for on are as with they I at be this have from or one had by "
    "word but not what all were we when your can said there use an each which she do how their if will up "
    "other about out many then them these so some her would make like him into time has look two more write "
    "go see number no way could people my than first water been call who oil its now find long down day did "
    "get come made may part 1995 42 3.5 don't it's well, so, yes. no. right? okay! really... - "
    "“quoted ‘single (aside) [Music] [Laughter] https://example.com/a/very/long/path/that-goes-on-and-on.html "
    "state-of-the-art e.g. Mr. Smith, {braces} <b>tags</b> back\\slash &amp;"
).split()


def transcript(minutes: float, seed: int) -> list[dict]:
    """Segments of 1 to 22 words of three speakers, words 0.2 to 0.5 s apart, pauses of up to 3 s
    between segments (and now and then inside one), sentences ending inside segments too."""
    rng = random.Random(seed)
    segments: list[dict] = []
    t = 0.0
    while t < minutes * 60:
        tokens = [rng.choice(WORDS) for _ in range(rng.randint(1, 22))]
        if rng.random() < 0.7:
            tokens[-1] += rng.choice([".", "?", "!", ","])
        words, start = [], t
        for token in tokens:
            length = rng.uniform(0.15, 0.45)
            words.append({"start": round(t, 3), "end": round(t + length, 3), "word": token})
            t += length + rng.choice([0.02, 0.05, 0.1, 0.3]) + (rng.uniform(0.5, 2.0) if rng.random() < 0.03 else 0)
        speaker = (
            rng.choice([1, 1, 2, 2, 3])
            if segments and rng.random() < 0.6
            else (segments[-1]["speaker"] if segments else 1)
        )
        segments.append(
            {
                "start": round(start, 3),
                "end": words[-1]["end"],
                "text": " ".join(tokens),
                "speaker": speaker,
                "words": words,
            }
        )
        t += rng.choice([0.0, 0.1, 0.4, 0.8, 3.0])
    return segments


def random_edit(rng: random.Random, document: list[dict]) -> dict:
    index = rng.randrange(len(document))
    segment = document[index]
    speakers = sorted({s["speaker"] for s in document})
    op = rng.choice(["text", "text", "text", "speaker", "speaker", "split", "merge", "times", "restore"])
    words = segment["text"].split()
    if op == "text":
        change = rng.choice(["word", "add", "drop", "sentence", "long"])
        if change == "word":
            words[rng.randrange(len(words))] = rng.choice(WORDS)
        elif change == "add":
            words[rng.randrange(len(words) + 1) :] = [rng.choice(WORDS) for _ in range(rng.randint(1, 8))]
        elif change == "drop" and len(words) > 1:
            del words[rng.randrange(len(words))]
        elif change == "sentence":
            words[rng.randrange(len(words))] += rng.choice([".", ",", "?"])
        else:
            words.insert(rng.randrange(len(words) + 1), "supercalifragilisticexpialidocious-and-then-some-more")
        return {"op": "text", "index": index, "text": " ".join(words)}
    if op == "speaker":
        edit = {"op": "speaker", "index": index, "speaker": rng.choice([*speakers, max(speakers) + 1])}
        if rng.random() < 0.5 and len(segment["words"]) > 1:
            first = rng.randrange(len(segment["words"]))
            edit.update(from_word=first, to_word=rng.randrange(first, len(segment["words"])))
        return edit
    if op == "split" and len(segment["words"]) > 1:
        return {"op": "split", "index": index, "word": rng.randrange(1, len(segment["words"]))}
    if op == "merge" and index + 1 < len(document) and document[index + 1]["speaker"] == segment["speaker"]:
        return {"op": "merge", "index": index}
    if op == "times":
        low = document[index - 1]["end"] if index else 0.0
        high = document[index + 1]["start"] if index + 1 < len(document) else segment["end"] + 5
        start = round(rng.uniform(low, segment["start"]), 3)
        end = round(rng.uniform(max(start + 0.01, segment["end"] - 1), high), 3)
        if start < end <= high:
            return {"op": "times", "index": index, "start": start, "end": end}
    if op == "restore" and rng.random() < 0.3:
        return {"op": "restore"}
    return {"op": "text", "index": index, "text": segment["text"] + " indeed"}


def cue_keys(srt: str) -> list[tuple]:
    return [(c.start, c.end, tuple(c.lines)) for c in captions.from_srt(srt)]


@pytest.mark.parametrize("minutes, seed, edits", [(20, 1, 60), (3, 2, 80), (3, 3, 80)])
def test_every_edit_rendered_again_is_the_whole_render(minutes, seed, edits):
    original = transcript(minutes, seed)
    rng = random.Random(seed)
    document, state = original, rerender.full(original, language="en")
    assert state.outputs() == te.render(original, language="en")
    for number in range(edits):
        edit = random_edit(rng, document)
        edited = te.apply_edits(document, [edit], duration=0, original=original)
        after = rerender.after_edit(state, document, edited, language="en")
        whole = te.render(edited, language="en")
        assert after.outputs() == whole, f"edit {number}: {edit}"
        before_cues, after_cues = cue_keys(state.srt), cue_keys(after.srt)
        changed, replaced = after.changed, after.replaced
        assert before_cues[: changed.start] == after_cues[: changed.start], f"edit {number}: {edit}"
        assert before_cues[replaced.stop :] == after_cues[changed.stop :], f"edit {number}: {edit}"
        assert changed.start == replaced.start and len(after_cues) - len(before_cues) == len(changed) - len(replaced)
        document, state = edited, after


def test_several_edits_in_one_request_and_an_edit_that_changes_no_cue():
    original = transcript(5, 4)
    state = rerender.full(original, language="en")
    edits = [
        {"op": "text", "index": 3, "text": "Entirely new words here."},
        {"op": "speaker", "index": 40, "speaker": 2},
        {"op": "times", "index": 20, "start": original[20]["start"], "end": original[20]["end"]},
    ]
    edited = te.apply_edits(original, edits, duration=0, original=original)
    after = rerender.after_edit(state, original, edited, language="en")
    assert after.outputs() == te.render(edited, language="en")
    same = rerender.after_edit(after, edited, [dict(s) for s in edited], language="en")
    assert same.outputs() == after.outputs() and len(same.changed) == 0


def test_a_job_without_a_language_is_rendered_whole():
    original = transcript(2, 5)
    state = rerender.full(original, language=None)
    edited = te.apply_edits(
        original, [{"op": "text", "index": 1, "text": "la casa de la playa"}], duration=0, original=original
    )
    after = rerender.after_edit(state, original, edited, language=None)
    assert after.outputs() == te.render(edited, language=None)
    assert after.changed == range(len(cue_keys(after.srt))), "every cue made again"
