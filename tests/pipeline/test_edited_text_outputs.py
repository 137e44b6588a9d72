"""Edited text can hold any characters and every output stays well-formed (issue 56): arbitrary
text edited into a transcript's segments is either refused, naming the segment and what it may not
hold, or every subtitle made from it (the job's SRT and WebVTT, a translation's, the burn's ASS)
reads back with independent parsers (`srt` and `webvtt-py`, not the pysubs2 that writes them) as
exactly the cues made: as many, at their times, with their text and voices. Pure functions only,
so hypothesis can try a few hundred texts in seconds."""

from __future__ import annotations

import html
import re
import unicodedata
from datetime import timedelta

import pysubs2
import srt
import webvtt
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from transcription.pipeline.burn.ass import write_ass
from transcription.pipeline.transcripts import captions, rerender, retranslation
from transcription.pipeline.transcripts import transcript_edits as te

WJ = "\u2060"  # the word joiner SubRip's escapes insert (captions.srt_line)


def _seg(text: str, start: float, speaker: int) -> dict:
    words = [
        {"start": round(start + i * 0.5, 3), "end": round(start + i * 0.5 + 0.4, 3), "word": w}
        for i, w in enumerate(text.split())
    ]
    return {"start": start, "end": words[-1]["end"], "text": text, "speaker": speaker, "words": words}


DOC = [
    _seg("Good morning, how are you today?", 0.0, 1),
    _seg("I am fine, thank you.", 4.0, 2),
    _seg("Glad to hear it.", 7.0, 1),
]


def refused_class(text: str) -> str | None:
    """Why the edit must be refused, decided apart from transcript_edits (unicodedata's classes)."""
    stripped = text.strip()
    if not 1 <= len(stripped) <= te.TEXT_MAX_CHARS:
        return "length"
    if "-->" in stripped:
        return "-->"
    for char in stripped:
        category = unicodedata.category(char)
        if category in ("Cc", "Zl", "Zp", "Cs") or char in "\ufeff\ufff9\ufffa\ufffb\ufffe\uffff":
            return f"U+{ord(char):04X}"
        if "\u202a" <= char <= "\u202e" or "\u2066" <= char <= "\u2069" or "\ufdd0" <= char <= "\ufdef":
            return f"U+{ord(char):04X}"
    return None


# what a person or a hostile client types: subtitle syntax of every format, markup, escapes,
# direction overrides, every kind of line break, and plain text of any script
HOSTILE = [
    "-->", "- >", "-- >", "00:00:01,000", "00:00:02.500", "1", "\n\n", "\r\n", "<b>", "</i>", "<v Speaker 2>",
    "<font color=red>", "{\\an8}", "{\\p1}m 0 0 l 100 0{\\p0}", "\\N", "\\h", "{", "}", "&amp;", "&", "<", ">",
    "\u202e", "\u2066", "\u200f", "\x85", "\u2028", "\u2029", "\x0b", "\x1f", "\x7f", "\ufeff", "WEBVTT",
    "NOTE", "::cue", "Speaker 1:", "[00:00:03] Speaker 2: ", "你好", "مرحبا", "שלום", " ", "\t", "Dialogue: 0,",
]  # fmt: skip
fragment = st.one_of(st.sampled_from(HOSTILE), st.text(min_size=1, max_size=12))
# and, as often, text of what may be saved: the outputs of those are what is checked
ALLOWED = st.characters(
    exclude_categories=("Cc", "Cs", "Zl", "Zp"),
    exclude_characters="\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff",
)
savable = st.one_of(
    st.sampled_from([h for h in HOSTILE if h.strip() and not refused_class(h)]),
    st.text(ALLOWED, min_size=1, max_size=12),
)
texts = st.one_of(
    st.lists(fragment, min_size=1, max_size=8).map(" ".join),
    st.lists(savable, min_size=1, max_size=8).map(" ".join),
)


def ms(seconds: float) -> int:
    return int(round(seconds * 1000))


def shown_lines(cue: captions.Cue) -> str:
    """A cue's lines as a subtitle shows them: backslashes as ∖, and no blank line inside a cue (a
    translator's text may hold line breaks; a blank line would end the cue, so the writer drops it)."""
    return re.sub(r"[\r\n]+", "\n", "\n".join(line.replace("\\", "\u2216") for line in cue.lines))


def check_srt(text: str, cues: list[captions.Cue]) -> None:
    """`text` reads, strictly, as `cues`: their count, times, and lines (backslashes as ∖)."""
    shown = [cue for cue in cues if cue.lines]
    parsed = list(srt.parse(text))  # raises on anything that is not a cue
    assert [(s.start, s.end) for s in parsed] == [
        (timedelta(milliseconds=ms(c.start)), timedelta(milliseconds=ms(c.end))) for c in shown
    ]
    assert [s.content.replace(WJ, "") for s in parsed] == [shown_lines(c).replace(WJ, "") for c in shown]
    # nor can a lenient reader be misled: pysubs2 takes any line with two timestamps for a timing
    assert len(pysubs2.SSAFile.from_string(text, format_="srt")) == len(shown) if shown else True


_VOICE = re.compile(r"</?v(?: [^>]*)?>")


def check_webvtt(text: str, cues: list[captions.Cue]) -> None:
    shown = [cue for cue in cues if cue.lines]
    parsed = list(webvtt.from_string(text).captions)
    assert [(c.start, c.end) for c in parsed] == [(_vtt_time(cue.start), _vtt_time(cue.end)) for cue in shown]
    assert [html.unescape(_VOICE.sub("", c.raw_text)) for c in parsed] == [shown_lines(cue) for cue in shown]
    assert [[int(v) for v in re.findall(r"<v Speaker (\d+)>", c.raw_text)] for c in parsed] == [
        (cue.speakers if len(cue.speakers) == len(cue.lines) > 1 else cue.speakers[:1]) for cue in shown
    ]


def _vtt_time(seconds: float) -> str:
    total = ms(seconds)
    return f"{total // 3_600_000:02d}:{total // 60_000 % 60:02d}:{total // 1000 % 60:02d}.{total % 1000:03d}"


def check_ass(cues: list[captions.Cue], tmp: str) -> None:
    """The burn's subtitles: every cue one event whose text shows as written (no override, no drawing)."""
    path = write_ass(cues, tmp, width=640, height=360)
    events = pysubs2.load(str(path)).events
    assert len(events) == len([c for c in cues if c.lines])
    for event, cue in zip(events, [c for c in cues if c.lines]):
        assert not event.is_drawing
        shown = re.sub(r"\{\\fs[\d.]+\}", "", event.text)  # the one override the burn writes: its size
        # the lines are joined by \N (the burn wraps a long line where it fits the picture, so a space
        # may become a \N); a backslash of the text is followed by a word joiner, a brace escaped
        words = re.sub(r"\\(?=[{}])|" + WJ, "", shown.replace("\\N", " ")).split()
        assert words == " ".join(cue.lines).split()


def spanish(cues: list[captions.Cue], text: str) -> list[captions.Cue]:
    """A "translation" of `cues` that says `text` too: what a translator returns is text of any kind."""
    return [captions.Cue(c.start, c.end, [f"{line} {text}".strip() for line in c.lines], c.speakers) for c in cues]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, len(DOC) - 1), texts), min_size=1, max_size=3))
@example(edits=[(1, "at 00:00:01,000 00:00:02,000 we said")])  # issue 56: two timestamps made a cue
@example(edits=[(0, "{\\an8}<b>up</b> \u202etxet\u202c")])
@example(edits=[(2, "a -- > b\x85c")])
def test_edited_text_is_refused_by_name_or_every_output_reads_back(edits, tmp_path):
    request = [{"op": "text", "index": index, "text": text} for index, text in edits]
    expected = [(number, index, refused_class(text)) for number, (index, text) in enumerate(edits)]
    try:
        document = te.apply_edits(DOC, request, duration=60, original=DOC)
    except te.EditsRefused as refused:
        assert [(p.edit, p.field) for p in refused.problems] == [(n, "text") for n, _, why in expected if why]
        for problem, (_, index, _) in zip(refused.problems, [e for e in expected if e[2]]):
            assert problem.message.startswith((f"Segment {index}'s text", "A text")), problem.message
        return
    assert not any(why for _, _, why in expected), f"accepted {expected}"

    cues = te.cues(document, language="en")
    rendered = te.render(document, language="en")
    check_srt(rendered["srt"], cues)
    check_webvtt(rendered["webvtt"], cues)
    # the edit path's render says the same, and its cues are those of the segments
    again = rerender.after_edit(rerender.full(DOC, language="en"), DOC, document, language="en")
    assert again.outputs() == rendered and again.cues() == cues
    check_ass(cues, str(tmp_path / "burn.ass"))

    # a translation made from those cues, and one brought up to date after the edit
    made = spanish(te.cues(DOC, language="en"), edits[0][1])
    check_srt(captions.to_srt(made), made)
    check_webvtt(captions.to_webvtt(made), made)
    plan, _ = retranslation.plan(te.cues(DOC, language="en"), retranslation.current(made), cues)
    kept_up = retranslation.complete(plan, lambda batch: spanish(batch, edits[-1][1]))
    check_srt(captions.to_srt(kept_up), kept_up)
    check_webvtt(captions.to_webvtt(kept_up), kept_up)
    assert captions.from_records(captions.cue_records(kept_up)) == kept_up
