"""An edited transcript's `txt`, `srt` and `webvtt` made again from the last render, redoing only
what the edit reached: the segments' tokens from the first changed segment until reading is as it
was, the cue breaks around them (pipeline.transcripts.replan), the times of the cues until they are as they
were, their SRT/WebVTT blocks, and the `txt` paragraphs of the speaker turns the edit touched.
Everything else is the previous render's. The result is byte for byte what
``transcript_edits.render`` makes from the whole document (tests/pipeline/test_rerender.py).

``Rendered`` also says which cues the edit changed (``changed``, in its own numbering, and the old
cues they replace, ``replaced``): what a retranslation or a burn of the changed cues needs.
Plain functions over plain data; nothing of Django.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pysubs2.formats.subrip import SubripFormat

from transcription.pipeline.recognition.words import guess_language, language_key
from transcription.pipeline.transcripts import captions, linebreaks, paragraphs, replan, transcript_edits
from transcription.pipeline.transcripts.captions import closed_time, shown_time
from transcription.pipeline.transcripts.cue_tokens import Tok
from transcription.pipeline.types import Segment

Document = list[dict[str, Any]]
Turn = tuple[int, int, list[str]]  # a speaker turn: first segment, end segment, paragraphs


@dataclass
class Rendered:
    key: str | None  # the language whose function words break lines (None: guessed from the words)
    tokens: replan.Tokens
    plan: replan.Plan
    lines: list[list[str]]  # each cue's
    speakers: list[list[int]]
    spans: list[tuple[int, int, int]]  # first word's start, last word's end (ms), characters
    shown: list[tuple[int, int]]  # captions.shown_time: times before short gaps are closed
    srt_blocks: list[str]  # each cue's SRT block without its number ("" for a cue SRT leaves out)
    vtt_blocks: list[str]
    turns: list[Turn]
    txt: str
    srt: str
    webvtt: str
    changed: range = field(default_factory=lambda: range(0))  # cues (new numbers) the edit changed
    replaced: range = field(default_factory=lambda: range(0))  # the old cues they replaced

    def outputs(self) -> dict[str, str]:
        return {"txt": self.txt, "srt": self.srt, "webvtt": self.webvtt}

    def cues(self) -> list[captions.Cue]:
        """The cues rendered (transcript_edits.cues of the same document), times and voices."""
        return [
            captions.Cue(start / 1000, end / 1000, list(lines), list(speakers))
            for (start, end), lines, speakers in (
                (closed_time(self.shown, index), self.lines[index], self.speakers[index])
                for index in range(len(self.lines))
            )
        ]


segment = transcript_edits.segment  # a document's segment as the text stages read it


def _words(key: str | None, toks: list[Tok]) -> replan.Words:
    return linebreaks.function_words(key or guess_language(t.text for t in toks))


def full(document: Document, *, language: str | None) -> Rendered:
    """Everything made from the whole document (what the first edit of a job pays)."""
    segments = [segment(s) for s in document]
    tokens = replan.read(segments)
    key = language_key(language)
    plan, cues = replan.plan(tokens.toks, _words(key, tokens.toks)) if tokens.toks else (replan.Plan([0], [0]), [])
    spans = [(tokens.toks[i].start, tokens.toks[j - 1].end, len(" ".join(lines))) for i, j, lines, _ in cues]
    shown = captions.shown_times(spans)
    rendered = Rendered(
        key, tokens, plan, [c[2] for c in cues], [c[3] for c in cues], spans, shown, [], [],
        _turns(document, 0, len(document)), "", "", "",
    )  # fmt: skip
    _blocks(rendered, 0, len(cues), [])
    rendered.changed = range(len(cues))
    return _joined(rendered)


def after_edit(before: Rendered, old: Document, new: Document, *, language: str | None) -> Rendered:
    """`new` rendered, from `before` (the render of `old`); ``changed`` names the cues it changed."""
    key = language_key(language)
    if key is None or key != before.key or not before.tokens.toks:
        return full(new, language=language)  # function words guessed from every word: no shortcut
    start, end_old, end_new = changed_segments(old, new)
    if start == end_old == end_new:
        return _unchanged(before)
    change = replan.reread(before.tokens, lambda at: segment(new[at]), start, end_old, end_new)
    if not change.tokens.toks:
        return full(new, language=language)
    turns = _spliced_turns(before.turns, new, start, end_old, end_new)
    if change.x == change.y_old == change.y_new:  # the words read as before (a split in one turn)
        return _joined(_unchanged(before, tokens=change.tokens, turns=turns))
    replanned = replan.replan(before.plan, change, _words(key, change.tokens.toks))
    return _joined(_recued(before, change.tokens, replanned, turns))


def _unchanged(before: Rendered, **changes: Any) -> Rendered:
    fields = {**before.__dict__, "changed": range(0), "replaced": range(0), **changes}
    return Rendered(**fields)


def changed_segments(old: Document, new: Document) -> tuple[int, int, int]:
    """(first segment that differs, where the equal rest starts in old, and in new): segments
    start..end_old-1 of `old` became start..end_new-1 of `new`."""
    start, limit = 0, min(len(old), len(new))
    while start < limit and (old[start] is new[start] or old[start] == new[start]):
        start += 1
    end_old, end_new = len(old), len(new)
    while (
        end_old > start
        and end_new > start
        and (old[end_old - 1] is new[end_new - 1] or old[end_old - 1] == new[end_new - 1])
    ):
        end_old, end_new = end_old - 1, end_new - 1
    return start, end_old, end_new


def _recued(before: Rendered, tokens: replan.Tokens, replanned: replan.Replanned, turns: list[Turn]) -> Rendered:
    """The cues of `replanned` in place of the old ones it replaces, timed and written again until
    their times are as they were."""
    first, old_end, toks = replanned.first, replanned.old_end, tokens.toks
    cues = replanned.cues
    spans = [(toks[i].start, toks[j - 1].end, len(" ".join(lines))) for i, j, lines, _ in cues]
    moved = len(cues) - (old_end - first)
    rendered = Rendered(
        before.key, tokens, replanned.plan,
        before.lines[:first] + [c[2] for c in cues] + before.lines[old_end:],
        before.speakers[:first] + [c[3] for c in cues] + before.speakers[old_end:],
        before.spans[:first] + spans + before.spans[old_end:],
        [], [], [], turns, "", "", "",
    )  # fmt: skip
    # a cue's shown times depend on the previous one's end and the next one's first word
    shown = before.shown[: max(0, first - 1)]
    at = len(shown)
    while at < len(rendered.spans):
        times = shown_time(rendered.spans, at, shown[-1][1] if shown else captions.BEFORE_FIRST)
        if at >= first + len(cues) and times == before.shown[at - moved]:
            break
        shown.append(times)
        at += 1
    rendered.shown = shown + before.shown[at - moved :]
    # a cue's final times depend on its shown times and the next one's start
    _blocks(rendered, max(0, first - 2), min(at + 1, len(rendered.spans)), before, moved)
    return rendered


def _blocks(rendered: Rendered, lo: int, hi: int, before: Any, moved: int = 0) -> None:
    """Cues lo..hi-1's SRT and WebVTT blocks written, the others' taken from `before`; ``changed``
    and ``replaced``: the cues whose blocks differ."""
    srt, vtt = [], []
    for index in range(lo, hi):
        start, end = closed_time(rendered.shown, index)
        cue = captions.Cue(start / 1000, end / 1000, rendered.lines[index], rendered.speakers[index])
        srt.append(_block(cue, start, end, vtt=False))
        vtt.append(_block(cue, start, end, vtt=True))
    if not before:
        rendered.srt_blocks, rendered.vtt_blocks = srt, vtt
        return
    old_hi = hi - moved
    a, b, c = 0, len(srt), old_hi - lo
    while a < b and a < c and srt[a] == before.srt_blocks[lo + a] and vtt[a] == before.vtt_blocks[lo + a]:
        a += 1
    while (
        b > a and c > a and srt[b - 1] == before.srt_blocks[lo + c - 1] and vtt[b - 1] == before.vtt_blocks[lo + c - 1]
    ):
        b, c = b - 1, c - 1
    rendered.changed, rendered.replaced = range(lo + a, lo + b), range(lo + a, lo + c)
    rendered.srt_blocks = before.srt_blocks[:lo] + srt + before.srt_blocks[old_hi:]
    rendered.vtt_blocks = before.vtt_blocks[:lo] + vtt + before.vtt_blocks[old_hi:]


def _block(cue: captions.Cue, start: int, end: int, *, vtt: bool) -> str:
    """A cue's block without its number, as pysubs2 writes it in to_srt/to_webvtt ("" for one it
    leaves out). Text with braces (which pysubs2 reads for override tags) is written by pysubs2."""
    text = captions.event_text(cue, vtt=vtt)
    if "{" in text:
        whole = captions.to_webvtt([cue]) if vtt else captions.to_srt([cue])
        head = "WEBVTT\n\n1\n" if vtt else "1\n"
        return whole[len(head) :] if whole.startswith(head) else ""
    text = re.sub("\n+", "\n", text.replace(r"\h", " ").replace(r"\n", "\n").replace(r"\N", "\n").strip())
    times = f"{SubripFormat.ms_to_timestamp(start)} --> {SubripFormat.ms_to_timestamp(end)}"
    return f"{times.replace(',', '.') if vtt else times}\n{text}\n\n"


def _joined(rendered: Rendered) -> Rendered:
    """The whole texts from the blocks and paragraphs (SRT numbers the cues it writes, from 1)."""
    srt = [block for block in rendered.srt_blocks if block]
    vtt = [block for block in rendered.vtt_blocks if block]
    rendered.srt = "".join(f"{number}\n{block}" for number, block in enumerate(srt, 1))
    rendered.webvtt = "WEBVTT\n\n" + "".join(f"{number}\n{block}" for number, block in enumerate(vtt, 1))
    rendered.txt = paragraphs.joined([line for _, _, lines in rendered.turns for line in lines])
    return rendered


def _turns(document: Document, lo: int, hi: int) -> list[Turn]:
    """The speaker turns of segments lo..hi-1 (as paragraphs.transcript_text, not renumbered)."""
    out: list[tuple[int, int, list[Segment]]] = []
    for at in range(lo, hi):
        s = document[at]
        if not s["text"].strip():
            continue
        # a sound heard is a turn of its own (paragraphs.turns)
        if (
            out
            and _speaker(document[out[-1][0]]) == _speaker(s)
            and not _sound(s)
            and not _sound(document[out[-1][1] - 1])
        ):
            out[-1] = (out[-1][0], at + 1, [*out[-1][2], segment(s)])
        else:
            out.append((at, at + 1, [segment(s)]))
    return [(a, b, paragraphs.turn_lines(_speaker(document[a]), t)) for a, b, t in out]


def _sound(s: dict[str, Any]) -> bool:
    return s.get("audio_event") is not None


def _speaker(s: dict[str, Any]) -> int:
    return 1 if s["speaker"] is None else s["speaker"]


def _spliced_turns(turns: list[Turn], new: Document, start: int, end_old: int, end_new: int) -> list[Turn]:
    """The turns after segments start..end_old-1 became start..end_new-1: the turns from the one
    before the change to the one after it are made again (a changed speaker may join them)."""
    t0 = max((k for k in range(len(turns)) if turns[k][0] < start), default=None)
    t1 = next((k for k in range(t0 or 0, len(turns)) if turns[k][1] > end_old), None)
    lo = 0 if t0 is None else turns[t0][0]
    shift = end_new - end_old
    hi = len(new) if t1 is None else turns[t1][1] + shift
    kept_from = len(turns) if t1 is None else t1 + 1
    tail = [(a + shift, b + shift, lines) for a, b, lines in turns[kept_from:]]
    return turns[: 0 if t0 is None else t0] + _turns(new, lo, hi) + tail


# A render as plain JSON data (the web processes share the last one in Redis: api.front.edit_renders),
# and back. Every tuple is made a tuple again: the reading resumes where a state compares equal
# (replan.reread) and times are compared with the kept ones, and a list is never equal to a tuple.
# The pieces planned over (toks, first_piece) are not written: they are made again from the raw
# tokens, as every render makes them (replan.pieced), which halves what is written and read.
# Raises TypeError, ValueError or IndexError on data of another shape.
def as_json(r: Rendered) -> dict[str, Any]:
    t = r.tokens
    return {
        "key": r.key,
        "tokens": {
            "raw": [_tok_json(tok) for tok in t.raw],
            "counts": t.counts,
            "states": [[last_start, prefix, snapshot] for last_start, prefix, snapshot in t.states],
        },
        "plan": {"best": r.plan.best, "bounds": r.plan.bounds},
        "lines": r.lines,
        "speakers": r.speakers,
        "spans": r.spans,
        "shown": r.shown,
        "srt_blocks": r.srt_blocks,
        "vtt_blocks": r.vtt_blocks,
        "turns": r.turns,
        "txt": r.txt,
        "srt": r.srt,
        "webvtt": r.webvtt,
        "changed": [r.changed.start, r.changed.stop],
        "replaced": [r.replaced.start, r.replaced.stop],
    }


def from_json(d: dict[str, Any]) -> Rendered:
    t = d["tokens"]
    raw = [_tok(tok) for tok in t["raw"]]
    states = [(int(s), _str_or_none(p), None if snap is None else _snapshot(snap)) for s, p, snap in t["states"]]
    tokens = replan.Tokens(raw, _ints(t["counts"]), states, *replan.pieced(raw))
    return Rendered(
        _str_or_none(d["key"]),
        tokens,
        replan.Plan([float(cost) for cost in d["plan"]["best"]], _ints(d["plan"]["bounds"])),
        [_strs(lines) for lines in d["lines"]],
        [_ints(speakers) for speakers in d["speakers"]],
        [(int(a), int(b), int(c)) for a, b, c in d["spans"]],
        [(int(a), int(b)) for a, b in d["shown"]],
        _strs(d["srt_blocks"]),
        _strs(d["vtt_blocks"]),
        [(int(a), int(b), _strs(lines)) for a, b, lines in d["turns"]],
        _str(d["txt"]),
        _str(d["srt"]),
        _str(d["webvtt"]),
        range(*_ints(d["changed"])),
        range(*_ints(d["replaced"])),
    )


def _tok_json(tok: Tok) -> list[Any]:
    return [tok.text, tok.start, tok.end, tok.speaker, tok.glue, tok.seg_end]


def _tok(data: list[Any]) -> Tok:
    text, start, end, speaker, glue, seg_end = data
    return Tok(_str(text), int(start), int(end), int(speaker), bool(glue), bool(seg_end))


def _snapshot(data: list[Any]) -> tuple[str, int, int, int, bool, bool]:
    text, start, end, speaker, glue, seg_end = data
    return _str(text), int(start), int(end), int(speaker), bool(glue), bool(seg_end)


def _ints(values: list[Any]) -> list[int]:
    if not isinstance(values, list):
        raise TypeError(f"a list of integers, not {type(values).__name__}")
    return [int(v) for v in values]


def _strs(values: list[Any]) -> list[str]:
    if not isinstance(values, list):
        raise TypeError(f"a list of strings, not {type(values).__name__}")
    return [_str(v) for v in values]


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string, not {type(value).__name__}")
    return value


def _str_or_none(value: Any) -> str | None:
    return None if value is None else _str(value)
