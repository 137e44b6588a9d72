"""The tokens and cue breaks of an edited transcript, made again only where the edit reached them,
exactly as a whole new plan would make them (pipeline.transcripts.rerender uses them; the proof is
tests/pipeline/test_rerender.py, which compares with a whole render after every edit).

Tokens: the reader (cue_tokens.Reader) starts again from its state before the first changed
segment and reads on until, past the changed segments, its state is again the one it had there:
from there on it would read every segment as before.

Cue breaks: captions.Planner's dynamic programme. ``best[j]``, the cost of the cheapest plan of
tokens 0..j-1, is kept. A cue's cost depends only on its tokens and the next one, and costs are
whole numbers (no rounding), so before the first changed token ``best`` is as before, and once
past the changed tokens it is the old value plus one constant for as many positions in a row as a
cue may reach back, every later position is too, and chooses the same cue: the old plan
holds from there. In between, ``best`` is computed again (a few hundred tokens), and the plan is
traced back from where the old plan resumes until it meets a break of the old plan before the edit.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from transcription.pipeline.transcripts.captions import MAX_LINE_CHARS, MAX_LINES, Layout, Planner
from transcription.pipeline.transcripts.cue_tokens import Reader, State, Tok, pieces, read_all
from transcription.pipeline.types import Segment

# Tokens a cue may reach back: it holds at most 85 characters, at least one a token.
REACH = 90

Words = tuple[set[str], set[str]]  # linebreaks.function_words: no-break and weak-break words


@dataclass
class Tokens:
    raw: list[Tok]  # before long words are cut
    counts: list[int]  # raw tokens before each segment, and at the end
    states: list[State]  # the reader's state before each segment, and at the end
    first_piece: list[int]  # each raw token's first piece in toks (and len(toks) at the end)
    toks: list[Tok]  # what cues are planned over


@dataclass
class TokenChange:
    tokens: Tokens  # the new ones
    x: int  # the first token that differs
    y_old: int  # where the unchanged rest starts, in the old tokens
    y_new: int  # and in the new


def read(segments: list[Segment]) -> Tokens:
    raw, counts, states = read_all(segments)
    return Tokens(raw, counts, states, *pieced(raw))


def pieced(raw: list[Tok]) -> tuple[list[int], list[Tok]]:
    """(first_piece, toks) of the raw tokens `raw`: what Tokens holds besides them."""
    first: list[int] = []
    toks: list[Tok] = []
    for tok in raw:
        first.append(len(toks))
        toks.extend(pieces(tok))
    return [*first, len(toks)], toks


def reread(old: Tokens, segment_at: Callable[[int], Segment], start: int, end_old: int, end_new: int) -> TokenChange:
    """The tokens after segments ``start..end_old-1`` became ``start..end_new-1`` (``segment_at``
    gives the new document's segments); every later segment is as it was."""
    reader = Reader(old.counts[start], old.states[start])
    base, shift = reader.base, end_old - end_new
    total = len(old.counts) - 1 - shift  # segments in the new document
    counts: list[int] = []
    states: list[State] = []
    at, resumed = start, None
    while True:
        if at >= end_new and reader.state() == old.states[at + shift]:
            resumed = at + shift
            break
        counts.append(reader.count())
        states.append(reader.state())
        if at == total:
            break
        reader.read(segment_at(at))
        at += 1
    if resumed is None:
        reader.finish()
        middle, tail_from = reader.toks, len(old.raw)
        counts, states = old.counts[:start] + counts, old.states[:start] + states
    else:
        # the reader's last token may still be changed by the segment it stopped at: the old
        # one, as the rest of the reading made it, replaces it
        drop = 0 if old.states[resumed][2] is None else 1
        middle, tail_from = reader.toks[: len(reader.toks) - drop], old.counts[resumed] - drop
        moved = base + len(middle) - tail_from
        counts = old.counts[:start] + counts + [count + moved for count in old.counts[resumed:]]
        states = old.states[:start] + states + old.states[resumed:]
    return _spliced(
        old, Tokens(old.raw[:base] + middle + old.raw[tail_from:], counts, states, [], []), base, middle, tail_from
    )


def _spliced(old: Tokens, new: Tokens, base: int, middle: list[Tok], tail_from: int) -> TokenChange:
    """`new` with its pieces (those of the raw tokens `middle`, which replace old ``base..tail_from-1``)."""
    first, x = old.first_piece, old.first_piece[base]
    cut: list[Tok] = []
    starts = []
    for tok in middle:
        starts.append(x + len(cut))
        cut.extend(pieces(tok))
    y_old, y_new = first[tail_from], x + len(cut)
    moved = y_new - y_old
    new.first_piece = first[:base] + starts + [f + moved for f in first[tail_from:]]
    new.toks = old.toks[:x] + cut + old.toks[y_old:]
    toks = new.toks
    while x < y_new and x < y_old and toks[x] == old.toks[x]:
        x += 1
    while y_new > x and y_old > x and toks[y_new - 1] == old.toks[y_old - 1]:
        y_new, y_old = y_new - 1, y_old - 1
    return TokenChange(new, x, y_old, y_new)


@dataclass
class Plan:
    best: list[float]  # best[j]: the cost of the cheapest plan of tokens 0..j-1 (whole thousandths)
    bounds: list[int]  # the cues' boundaries: 0, the end of each cue in turn (the last: len(toks))


@dataclass
class Replanned:
    plan: Plan
    first: int  # the first cue planned again (cues before it are the old ones)
    old_end: int  # the old cues from this one on are kept (after the new ones)
    cues: list[tuple[int, int, list[str], list[int]]]  # the new cues: first token, end, lines, speakers


def plan(toks: list[Tok], words: Words) -> tuple[Plan, list[tuple[int, int, list[str], list[int]]]]:
    planner = Planner(toks, *words)
    cues, best = planner.plan_with_costs()
    bounds = [0] + [j for _, j, _ in cues]
    return Plan(best, bounds), [(i, j, planner.lines(i, j, lay), planner.speakers(i, j, lay)) for i, j, lay in cues]


def replan(old: Plan, change: TokenChange, words: Words) -> Replanned:
    """The plan of `change`'s new tokens, from `old` (the plan of the old ones)."""
    toks, x, d = change.tokens.toks, change.x, change.y_new - change.y_old
    n, lo = len(toks), max(0, change.x - REACH)
    hi = min(n, change.y_new + 4 * REACH)
    while True:
        window = _Window(toks, lo, hi, words)
        resume = window.fill(old.best, x, change.y_new, d)
        if resume is not None or hi == n:
            break
        hi = min(n, hi + 8 * REACH)
    tail = len(old.bounds) if resume is None else bisect_left(old.bounds, resume[0] - d)
    j = n if tail == len(old.bounds) else old.bounds[tail - 1] + d
    cues = []
    while j > 0 and not (j < x and old.bounds[bisect_left(old.bounds, j)] == j):
        i, lines, speakers = window.cue_ending(j) if j >= x else _cue_before(toks, old.best, j, words)
        cues.append((i, j, lines, speakers))
        j = i
    first = bisect_left(old.bounds, j)
    bounds = old.bounds[: first + 1] + [end for _, end, _, _ in reversed(cues)] + [b + d for b in old.bounds[tail:]]
    best = old.best[:x] + window.best[x - lo :]
    if resume is not None:
        best += [value + resume[1] for value in old.best[len(best) - d :]]
    return Replanned(Plan(best, bounds), first, max(first, tail - 1), cues[::-1])


class _Window:
    """``best`` computed again over tokens lo..hi (a planner of those tokens and the next one)."""

    def __init__(self, toks: list[Tok], lo: int, hi: int, words: Words):
        self.lo = lo
        self.planner = Planner(toks[lo : hi + 1], *words, more=hi < len(toks))
        self.backs: dict[int, tuple[int, Layout]] = {}
        self.best: list[float] = []

    def fill(self, old_best: list[float], x: int, y_new: int, d: int) -> tuple[int, float] | None:
        """Fills best from x on; (the position from which every later one is the old value plus a
        constant, that constant) once found, else None (the window's end came first)."""
        lo, planner = self.lo, self.planner
        self.best = sub = old_best[lo : max(x, 1)]
        since, offset = 0, None  # the first of the latest positions with one offset
        for j in range(max(x, 1), lo + planner.last + 1):
            value, back = planner.column(j - lo, sub)
            sub.append(value)
            self.backs[j] = back  # type: ignore[assignment]
            if j >= y_new:
                step = value - old_best[j - d]
                since, offset = (since if step == offset else j), step
                # a cue ending at j + 1 or later cannot start at `since` or before: every cue from
                # there on starts at a position of this offset, and chooses as before
                if j + 1 - lo <= planner.n and planner.length(since - lo, j + 1 - lo) > MAX_LINES * MAX_LINE_CHARS + 1:
                    return j + 1, step
        return None

    def cue_ending(self, j: int) -> tuple[int, list[str], list[int]]:
        i, layout = self.backs[j]  # i counts from lo
        lo = self.lo
        return i + lo, self.planner.lines(i, j - lo, layout), self.planner.speakers(i, j - lo, layout)


def _cue_before(toks: list[Tok], best: list[float], j: int, words: Words) -> tuple[int, list[str], list[int]]:
    """The last cue of the cheapest plan of tokens 0..j-1, before the edit's tokens (so `best` there
    is the old one)."""
    lo = max(0, j - REACH)
    planner = Planner(toks[lo : j + 1], *words, more=True)
    _, (i, layout) = planner.column(j - lo, best[lo:j])  # type: ignore[misc]
    return i + lo, planner.lines(i, j - lo, layout), planner.speakers(i, j - lo, layout)
