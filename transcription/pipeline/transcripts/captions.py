"""Turn timed words into a clean transcript and broadcast-style subtitles.

Pure functions over the dataclasses of :mod:`transcription.pipeline.types`; nothing here knows about
Django, files or the speech model.

    segments = cleaning.clean_words(segments, verbatim=False, tag_audio_events=True, language="en")
    cues = build_cues(segments, language="en")
    srt, vtt = to_srt(cues), to_webvtt(cues)

Subtitle rules (see ``build_cues``): at most 42 characters a line and 2 lines a cue, at most 20
characters a second, each cue on screen 1 to 7 seconds, cues never overlap, breaks at sentence ends,
pauses and speaker changes rather than after an article or preposition, and "- " dashes only when
the speaker changes inside a cue. All times inside ``build_cues`` are whole milliseconds, so what
SRT/WebVTT store (milliseconds) is exactly what was checked.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import pysubs2

from transcription.pipeline.recognition.words import CLAUSE_END, ends_sentence, guess_language, is_tag, language_key
from transcription.pipeline.transcripts import linebreaks
from transcription.pipeline.transcripts.cue_tokens import Tok, tokens
from transcription.pipeline.transcripts.linebreaks import MAX_LINE_CHARS, MAX_LINES
from transcription.pipeline.types import Segment

__all__ = [
    "Cue",
    "MAX_LINE_CHARS",
    "MAX_LINES",
    "MAX_CPS",
    "MIN_DURATION",
    "MAX_DURATION",
    "CUE_GAP",
    "build_cues",
    "to_srt",
    "to_webvtt",
    "cue_records",
    "from_records",
    "from_srt",
    "srt_line",
    "voice_label",
    "webvtt_voices",
    "with_voices",
]

MAX_CPS = 20.0
MIN_DURATION = 1.0  # seconds
MAX_DURATION = 7.0  # seconds
CUE_GAP = 0.08  # seconds between two cues: two frames at 25 fps

_MIN_MS = int(MIN_DURATION * 1000)
_MAX_MS = int(MAX_DURATION * 1000)
_GAP_MS = int(round(CUE_GAP * 1000))
BEFORE_FIRST = -_GAP_MS  # the "previous end" of the first cue (shown_time)
_MS_PER_CHAR = 1000.0 / MAX_CPS
_PAUSE_MS = 500  # a gap between words at least this long is a pause, a good place to break
_CLOSE_GAP_MS = 500  # shorter gaps between cues are closed (end extended) to avoid flicker
_MAX_LEAD_MS = 500  # a cue may appear this much before its first word when it needs the time
_DASH = "- "
_ALONE_MS = 1000  # a tag token this long is a cue of its own (Planner.alone)


@dataclass
class Cue:
    start: float  # seconds, whole milliseconds
    end: float
    lines: list[str] = field(default_factory=list)
    # Who speaks: one number for the whole cue, or one per line when two speakers share it (each on
    # a "- " line). WebVTT writes them as voice spans; SRT has no place for them.
    speakers: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# The tokens (cue_tokens): words with punctuation attached, times in ms, long ones cut.
_Tok = Tok
_tokens = tokens


Layout = tuple[float, int | None, bool]


class Planner:
    """Chooses cue boundaries (dynamic programming over break points) and line breaks.

    A cue's cost is a whole number of thousandths (every weight is a multiple of 0.001, so this is
    its exact value): sums never round, so the plan of a stretch of tokens does not depend on what
    came before it, and pipeline.transcripts.rerender can plan again only what an edit reached and get what a
    whole plan gets. The cost of cue i..j-1 depends only on tokens i..j (j: the next one, whose
    start and speaker say how the cue may end). ``more``: the last token is such a next one only
    (the transcript goes on after it), never in a cue."""

    CUE_COST = 4.0

    def __init__(self, toks: list[_Tok], no_break: set[str], weak_break: set[str], *, more: bool = False):
        self.toks = toks
        n = len(toks)
        self.n = n
        self.last = n - 1 if more else n  # the last token boundary a cue may end on
        self.sep = [0 if k == 0 or t.glue else 1 for k, t in enumerate(toks)]
        self.prefix = [0] * (n + 1)
        for k, tok in enumerate(toks):
            self.prefix[k + 1] = self.prefix[k] + self.sep[k] + len(tok.text)
        self.change = [0] * (n + 1)  # change[k]: speaker changes between tokens 0..k-1
        self.pause_cost = [0] * (n + 1)  # thousandths
        self.sentence = [0] * (n + 1)
        for k in range(n):
            changed = k > 0 and toks[k].speaker != toks[k - 1].speaker
            self.change[k + 1] = self.change[k] + changed
            gap = toks[k].start - toks[k - 1].end if k > 0 else 0
            self.pause_cost[k + 1] = self.pause_cost[k] + max(0, gap - _PAUSE_MS) * 4  # 1 per 250 ms
            self.sentence[k + 1] = self.sentence[k] + ends_sentence(toks[k].text)
        # a sound heard for a second or more ("[music]": pipeline.audio_events) is a cue of its own,
        # shown while it sounds, with no voice
        self.alone = [0] * (n + 1)
        for k, tok in enumerate(toks):
            self.alone[k + 1] = self.alone[k] + (is_tag(tok.text) and tok.end - tok.start >= _ALONE_MS)
        self.no_break_words, self.weak_break_words = no_break, weak_break
        self.no_break = [linebreaks.ends_on(t.text, no_break) for t in toks]
        self.weak_break = [linebreaks.ends_on(t.text, weak_break) for t in toks]
        self.break_cost = [self._break_cost(k) for k in range(n)]

    def _gap_after(self, k: int) -> int:
        return self.toks[k + 1].start - self.toks[k].end if k + 1 < self.n else 10**9

    def _break_cost(self, k: int) -> float:
        """Cost of ending a cue after token k."""
        if k + 1 >= self.n:
            return 0.0
        tok, nxt = self.toks[k], self.toks[k + 1]
        gap = self._gap_after(k)
        if tok.speaker != nxt.speaker:
            cost = 0.0
        elif is_tag(tok.text) or is_tag(nxt.text):
            cost = 0.5
        elif ends_sentence(tok.text):
            cost = 0.0
        elif gap >= _PAUSE_MS:
            cost = 1.0
        elif CLAUSE_END.search(tok.text):
            cost = 4.0
        elif tok.seg_end:
            cost = 6.0
        else:
            cost = 12.0
        if nxt.glue:
            cost += 30.0
        if self.no_break[k]:
            cost += 1000.0
        elif self.weak_break[k] and cost > 1.0:
            cost += 8.0
        return cost

    def length(self, i: int, j: int) -> int:
        """Characters of tokens i..j-1 on one line."""
        return self.prefix[j] - self.prefix[i] - self.sep[i]

    def layout(self, i: int, j: int) -> Layout | None:
        """(cost, line break before token k or None, dashes) for tokens i..j-1; None if they do not
        fit in two lines."""
        changes = self.change[j] - self.change[i + 1]
        if changes > 1 or (j - i > 1 and self.alone[j] > self.alone[i]):
            return None
        if changes == 1:
            k = next(m for m in range(i + 1, j) if self.toks[m].speaker != self.toks[m - 1].speaker)
            if len(_DASH) + self.length(i, k) > MAX_LINE_CHARS or len(_DASH) + self.length(k, j) > MAX_LINE_CHARS:
                return None
            return 0.0, k, True
        total = self.length(i, j)
        if total <= MAX_LINE_CHARS:
            return 0.0, None, False
        if total > MAX_LINES * MAX_LINE_CHARS + 1:
            return None
        best: Layout | None = None
        for k in range(i + 1, j):
            top, bottom = self.length(i, k), self.length(k, j)
            if top > MAX_LINE_CHARS:
                break
            if bottom > MAX_LINE_CHARS:
                continue
            cost = linebreaks.break_cost(
                top,
                bottom,
                self.toks[k - 1].text,
                no_break=self.no_break_words,
                weak_break=self.weak_break_words,
                pause=self._gap_after(k - 1) >= _PAUSE_MS,
                glued=self.toks[k].glue,
                lone_top=k - i == 1 and top < linebreaks.SHORT_WORD_CHARS,
                lone_bottom=j - k == 1 and bottom < linebreaks.SHORT_WORD_CHARS,
                digits_bottom=j - k == 1 and self.toks[k].text.isdigit(),
            )
            if best is None or cost < best[0]:
                best = (cost, k, False)
        return best

    def chars(self, i: int, j: int, layout: Layout) -> int:
        """Displayed characters, the line break counted as one (a space)."""
        return self.length(i, j) + (2 * len(_DASH) if layout[2] else 0)

    def cue_cost(self, i: int, j: int, layout: Layout) -> int:
        toks = self.toks
        # the punctuation bonus of a line break chooses between layouts; it must not make a cue that
        # straddles a sentence end cheaper than two cues
        cost = self.CUE_COST + 0.5 * max(0.0, layout[0])
        if j < self.n:
            cost += self.break_cost[j - 1]
        if layout[2]:
            cost += 6.0  # prefer a new cue at a speaker change
        span = toks[j - 1].end - toks[i].start
        if span > _MAX_MS:
            cost += 300.0 + (span - _MAX_MS) / 50.0
        need = max(_MIN_MS, self.chars(i, j, layout) * _MS_PER_CHAR)
        room = (toks[j].start - _GAP_MS if j < self.n else 10**9) - toks[i].start + _MAX_LEAD_MS
        if need > room:
            cost += (need - room) / 100.0
        if j < self.n and self.break_cost[j - 1] >= 4 and self.sentence[j - 1] - self.sentence[i] > 0:
            cost += 6.0  # a sentence ends inside but the cue ends mid-sentence
        return round(cost * 1000) + self.pause_cost[j] - self.pause_cost[i + 1]

    def column(self, j: int, best: list[float], lowest: int = 0) -> tuple[float, tuple[int, Layout] | None]:
        """The cheapest plan of tokens 0..j-1 ending with a cue that ends before token j: (its cost,
        (the cue's first token, its layout)). `best[i]`: the cheapest plan of tokens 0..i-1, for
        every i >= `lowest` a cue ending at j may start on. Of equal costs the latest start wins."""
        found: tuple[float, tuple[int, Layout] | None] = (math.inf, None)
        for i in range(j - 1, lowest - 1, -1):
            if self.length(i, j) > MAX_LINES * MAX_LINE_CHARS + 1:
                break
            layout = self.layout(i, j)
            if layout is None:
                if self.change[j] - self.change[i + 1] > 1 or self.alone[j] > self.alone[i]:
                    break
                continue
            cost = best[i] + self.cue_cost(i, j, layout)
            if cost < found[0]:
                found = (cost, (i, layout))
        return found

    def plan(self) -> list[tuple[int, int, Layout]]:
        return self.plan_with_costs()[0]

    def plan_with_costs(self) -> tuple[list[tuple[int, int, Layout]], list[float]]:
        """The cues (first token, end, layout) of the cheapest plan, and `best` (see column)."""
        n = self.last
        best: list[float] = [math.inf] * (n + 1)
        back: list[tuple[int, Layout] | None] = [None] * (n + 1)
        best[0] = 0
        for j in range(1, n + 1):
            best[j], back[j] = self.column(j, best)
        cues = []
        j = n
        while j > 0:
            i, layout = back[j]  # type: ignore[misc]
            cues.append((i, j, layout))
            j = i
        return cues[::-1], best

    def join(self, i: int, j: int) -> str:
        return "".join(("" if k == i or self.toks[k].glue else " ") + self.toks[k].text for k in range(i, j))

    def speakers(self, i: int, j: int, layout: Layout) -> list[int]:
        """The cue's speaker, or its two speakers' (one a line) when it has dashes."""
        _, k, dashes = layout
        if j - i == 1 and self.alone[j] > self.alone[i]:
            return []
        return [self.toks[i].speaker, self.toks[k].speaker] if dashes and k is not None else [self.toks[i].speaker]

    def lines(self, i: int, j: int, layout: Layout) -> list[str]:
        _, k, dashes = layout
        if k is None:
            return [self.join(i, j)]
        if dashes:
            return [_DASH + self.join(i, k), _DASH + self.join(k, j)]
        return [self.join(i, k), self.join(k, j)]


def _timing(spans: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Display times (ms) for cues given (first word start, last word end, characters).

    Each cue shows from its first word (up to _MAX_LEAD_MS earlier when it needs the time and there
    is silence before it) until its last word ends or it has been up long enough to be read at
    MAX_CPS (and at least MIN_DURATION), capped at MAX_DURATION, and never before the previous cue
    has gone plus _GAP_MS. Speech too fast to read at MAX_CPS therefore makes cues lag behind the
    audio until the next pause, rather than break a rule. Gaps shorter than _CLOSE_GAP_MS are then
    closed to avoid flicker."""
    shown = shown_times(spans)
    return [closed_time(shown, index) for index in range(len(shown))]


def shown_times(spans: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    times: list[tuple[int, int]] = []
    previous_end = BEFORE_FIRST
    for index in range(len(spans)):
        times.append(shown_time(spans, index, previous_end))
        previous_end = times[-1][1]
    return times


def shown_time(spans: list[tuple[int, int, int]], index: int, previous_end: int) -> tuple[int, int]:
    """Cue `index`'s times before short gaps are closed: they depend on the previous cue's end and
    on the next cue's first word only (pipeline.transcripts.rerender times again only what an edit reached)."""
    first, last, chars = spans[index]
    need = max(_MIN_MS, math.ceil(chars * _MS_PER_CHAR))
    floor = max(0, previous_end + _GAP_MS)
    start = max(floor, first)
    if index + 1 < len(spans):
        latest_end = spans[index + 1][0] - _GAP_MS
        if start + need > latest_end:
            start = max(floor, first - _MAX_LEAD_MS, min(start, latest_end - need))
    return start, min(max(last, start + need), start + _MAX_MS)


def closed_time(shown: list[tuple[int, int]], index: int) -> tuple[int, int]:
    """Cue `index`'s final times: a gap shorter than _CLOSE_GAP_MS before the next cue is closed."""
    start, end = shown[index]
    if index + 1 < len(shown) and _GAP_MS < shown[index + 1][0] - end < _GAP_MS + _CLOSE_GAP_MS:
        return start, min(shown[index + 1][0] - _GAP_MS, start + _MAX_MS)
    return start, end


def build_cues(segments: list[Segment], *, language: str | None = None) -> list[Cue]:
    """Subtitle cues from the segments' word timestamps.

    At most MAX_LINE_CHARS (42) characters a line and MAX_LINES (2) lines a cue; a word longer than
    a line is cut into pieces. Cue boundaries are chosen by dynamic programming over all break
    points: speaker changes, sentence ends and pauses (> 0.5 s) are cheap, commas cost a little,
    anything else more, and ending a cue or line after an article, preposition or conjunction
    (English, Spanish, French, German, Italian, Portuguese, Dutch; ``language`` picks one list,
    None guesses it from the words and uses them all when unsure) is avoided whenever any other
    layout exists; after a pronoun, auxiliary or intensifier it costs extra. A cue holds at most
    two speakers, each on its own line starting with "- "; otherwise there are no speaker labels.
    Two-line cues break where the lines are balanced or bottom-heavy, preferably at punctuation,
    never leaving one short word alone. Times: see ``_timing``; every cue lasts 1-7 s, reads at
    <= 20 characters a second (line break counted as a space, dashes included) and ends at least
    CUE_GAP before the next one starts. Input words are used as they are: clean them first.
    """
    toks = _tokens(segments)
    if not toks:
        return []
    planner = Planner(toks, *linebreaks.function_words(language_key(language) or guess_language(t.text for t in toks)))
    plan = planner.plan()
    texts = [planner.lines(i, j, layout) for i, j, layout in plan]
    voices = [planner.speakers(i, j, layout) for i, j, layout in plan]
    spans = [(toks[i].start, toks[j - 1].end, len(" ".join(lines))) for (i, j, _), lines in zip(plan, texts)]
    return [
        Cue(start=start / 1000, end=end / 1000, lines=lines, speakers=speakers)
        for (start, end), lines, speakers in zip(_timing(spans), texts, voices)
    ]


# --------------------------------------------------------------------------------------------
# SRT / WebVTT
# --------------------------------------------------------------------------------------------


def voice_label(speaker: int) -> str:
    """What a speaker is called until the account holder names them: "Speaker N", as in `txt`."""
    return f"Speaker {speaker}"


# What a cue's text may hold that SubRip would read as something else (docs/decisions/api.md,
# "What edited text may hold"). SubRip has no escapes: an invisible word joiner goes where it breaks the reading,
# so the line looks as written. Lenient readers (pysubs2, some players) take any line with two
# timestamps for a cue's timing, strict ones (`srt`) take "- >", "-->" and the like between two
# timestamps; players read "<b>", "<i>", "<font ...>" as styling.
_WORD_JOINER = "\u2060"
_SRT_TIMESTAMP = re.compile(r"(\d{1,2}):(\d{1,2}):(\d{1,2})(?=[.,]\d)")
_SRT_ARROW = re.compile(r"(-[ -] *)>")
_SRT_TAG = re.compile(r"<(?= */? *[A-Za-z])")


def srt_line(line: str) -> str:
    """A cue's line as SubRip text: timestamps, arrows and tags made inert by a word joiner."""
    line = _SRT_TIMESTAMP.sub(lambda m: f"{m[1]}:{_WORD_JOINER}{m[2]}:{_WORD_JOINER}{m[3]}", line)
    return _SRT_TAG.sub("<" + _WORD_JOINER, _SRT_ARROW.sub(r"\1" + _WORD_JOINER + ">", line))


def event_text(cue: Cue, *, vtt: bool) -> str:
    out = []
    for line in cue.lines:
        line = line.replace("\\", "\u2216")  # "\N", "\n", "\h" mean something to pysubs2
        if vtt:
            # WebVTT's own escapes; "-->" is "--&gt;" then, and "<v ...>" only ever a voice span
            line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        else:
            line = srt_line(line)
        out.append(line)
    if vtt and cue.speakers and out:
        # WebVTT's voice spans, "<v Speaker 1>...</v>": one a line when two speakers share the cue
        # (and the lines are still theirs), else one around the whole cue
        if len(cue.speakers) == len(out) > 1:
            out = [f"<v {voice_label(speaker)}>{line}</v>" for speaker, line in zip(cue.speakers, out)]
        else:
            return f"<v {voice_label(cue.speakers[0])}>" + r"\N".join(out) + "</v>"
    return r"\N".join(out)


def _ssafile(cues: list[Cue], *, vtt: bool) -> pysubs2.SSAFile:
    subs = pysubs2.SSAFile()
    for cue in cues:
        subs.append(
            pysubs2.SSAEvent(
                start=int(round(cue.start * 1000)), end=int(round(cue.end * 1000)), text=event_text(cue, vtt=vtt)
            )
        )
    return subs


def to_srt(cues: list[Cue]) -> str:
    """SubRip text; "" for no cues. Braces are kept literally (no ASS override parsing)."""
    return _ssafile(cues, vtt=False).to_string("srt", keep_ssa_tags=True)


def to_webvtt(cues: list[Cue]) -> str:
    """WebVTT text, starting with "WEBVTT"; just the header for no cues. &, < and > are escaped; a
    cue that knows its speakers carries their voice spans (``<v Speaker 1>``)."""
    return _ssafile(cues, vtt=True).to_string("vtt", keep_ssa_tags=True)


_VOICE = re.compile(r"<v Speaker (\d+)>")


def webvtt_voices(text: str) -> list[list[int]]:
    """The speakers of each cue of WebVTT as ``to_webvtt`` writes it, in order (an empty list for
    a cue without voice spans): how a translation keeps the voices of the cues it translates."""
    blocks = re.split(r"\n\s*\n", text.strip())
    return [[int(n) for n in _VOICE.findall(block)] for block in blocks if "-->" in block]


def with_voices(cues: list[Cue], webvtt: str | None) -> list[Cue]:
    """`cues` (read back from SRT) with the speakers the same cues carry in `webvtt`; as they are
    when the two do not hold the same cues (a transcript made before cues carried voices)."""
    voices = webvtt_voices(webvtt or "")
    if len(voices) != len(cues):
        return cues
    return [Cue(cue.start, cue.end, cue.lines, speakers) for cue, speakers in zip(cues, voices)]


def cue_records(cues: list[Cue]) -> list[dict[str, Any]]:
    """Cues as plain data (JSON: a translation's kept cues, Translation.cues), read back by
    ``from_records``: what a later stage reads instead of parsing the SRT it was written to."""
    return [{"start": c.start, "end": c.end, "lines": list(c.lines), "speakers": list(c.speakers)} for c in cues]


def from_records(records: list[dict[str, Any]] | None) -> list[Cue]:
    return [
        Cue(float(r["start"]), float(r["end"]), list(r["lines"]), list(r.get("speakers") or [])) for r in records or []
    ]


# Reading subtitles back: for the tests and benchmarks, which check what the service wrote. No stage
# reads its own output (tests/test_segments_source.py): a job's cues are made from its kept
# segments (transcript_edits.cues), a translation's are kept with it (Translation.cues).


def from_srt(text: str) -> list[Cue]:
    """Cues from SubRip text as ``to_srt`` writes it (times in seconds, lines split on line breaks).
    HTML-looking text is kept as it is, not turned into styling."""
    subs = pysubs2.SSAFile.from_string(text, format_="srt", keep_html_tags=True)
    cues = []
    for event in subs.events:
        lines = [line.strip() for line in re.split(r"\\N|\n", event.text)]
        cues.append(Cue(start=event.start / 1000, end=event.end / 1000, lines=[line for line in lines if line]))
    return cues
