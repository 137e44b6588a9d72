"""A sentence's translation shared back over the cues its source was spoken in: cut at word
boundaries, each cue's part as close as possible to its share of the source, under the layout rule
(at most MAX_LINES lines of ``line_limit(language)`` characters per cue)."""

from __future__ import annotations

import functools
import math

from transcription.pipeline.recognition.words import CLAUSE_END, ends_sentence
from transcription.pipeline.transcripts.linebreaks import (
    MAX_LINES,
    ends_on,
    fits,
    function_words,
    line_limit,
    wrap_lines,
    wrap_tokens,
)

from .casing import LEADING_PUNCT

# What a part that does not fit costs, per character over: far more than any shift of words.
OVERFLOW_COST = 1000.0


def distribute(translation: str, shares: list[int], *, language: str | None = None) -> list[str]:
    """``translation`` (of a sentence spoken over ``len(shares)`` cues) cut at word boundaries into
    one text per cue, each cue's part as close as possible to its share of the source (``shares``:
    the source cues' characters), under the layout rule: a part that cannot be laid out on
    ``MAX_LINES`` lines of ``line_limit(language)`` characters costs far more than any shift of
    words to a neighbour, so words move between the sentence's cues until every part fits (when
    the sentence fits at all). Every cue gets at least one word while there are enough words.
    Cached, since growing a block asks about the same sentences again."""
    return list(_distribute(translation, tuple(shares), language))


@functools.lru_cache(maxsize=1024)
def _distribute(translation: str, shares: tuple[int, ...], language: str | None) -> tuple[str, ...]:
    tokens = wrap_tokens(translation)
    if len(shares) == 1 or not tokens:
        return (_join(tokens, 0, len(tokens)),) + ("",) * (len(shares) - 1)
    return _Cutting(tokens, shares, language).parts()


def _join(tokens: list[tuple[str, bool]], i: int, j: int) -> str:
    return "".join(("" if k == i or tokens[k][1] else " ") + tokens[k][0] for k in range(i, j))


@functools.lru_cache(maxsize=4096)
def _part_misfit(text: str, limit: int, language: str | None) -> float:
    """0 when ``text`` lays out on MAX_LINES lines of ``limit`` characters, else a large cost
    growing with the overflow. Cached: growing a block asks about the same parts again."""
    lines = wrap_lines(text, limit, MAX_LINES, language=language)
    return 0.0 if fits(lines, limit) else OVERFLOW_COST * (1 + sum(max(0, len(line) - limit) for line in lines))


class _Cutting:
    """Dynamic programming over the cut positions of one sentence's tokens into len(shares) parts."""

    def __init__(self, tokens: list[tuple[str, bool]], shares: tuple[int, ...], language: str | None):
        self.tokens, self.count, self.language = tokens, len(shares), language
        self.limit = line_limit(language)
        self.no_break, self.weak_break = function_words(language)
        self.n = n = len(tokens)
        self.prefix = [0]
        for index, (token, glue) in enumerate(tokens):
            self.prefix.append(self.prefix[-1] + (0 if index == 0 or glue else 1) + len(token))
        total_share = sum(shares) or 1
        self.targets = [self.prefix[n] * sum(shares[: k + 1]) / total_share for k in range(self.count)]
        self.cuts_cost = [[self.cut_cost(j, k) for j in range(n + 1)] for k in range(self.count - 1)]
        self.need_words = n >= self.count
        # first[j]: the first token a part ending before token j may start at and still fit (one token at least)
        room = MAX_LINES * self.limit + 1
        self.first, i = [0] * (n + 1), 0
        for j in range(1, n + 1):
            while i < j - 1 and self.length(i, j) > room:
                i += 1
            self.first[j] = i
        self.misfit = functools.cache(self._misfit)

    def parts(self) -> tuple[str, ...]:
        cuts = self.solve(windowed=True) or self.solve(windowed=False)
        assert cuts is not None
        return tuple(_join(self.tokens, cuts[k], cuts[k + 1]) for k in range(self.count))

    def length(self, i: int, j: int) -> int:
        return self.prefix[j] - self.prefix[i] - (0 if i == 0 or self.tokens[i][1] else 1)

    def _misfit(self, i: int, j: int) -> float:
        """What laying out tokens i..j-1 as one cue breaks: 0 when it fits."""
        if i == j:
            return 0.0
        length = self.length(i, j)
        if length > MAX_LINES * self.limit + 1:
            return OVERFLOW_COST * (length - MAX_LINES * self.limit)
        if length <= self.limit:
            return 0.0
        return _part_misfit(_join(self.tokens, i, j), self.limit, self.language)

    def cut_cost(self, j: int, k: int) -> float:
        """Cutting before token j as the end of cue k: distance from its share, glue, function words."""
        cost = abs(self.prefix[j] - self.targets[k])
        if not 0 < j < self.n:
            return cost
        before = self.tokens[j - 1][0]
        cost += 40.0 if self.tokens[j][1] else 0.0
        cost += 15.0 if ends_on(before, self.no_break) else 0.0
        cost += 8.0 if ends_on(before, self.weak_break) else 0.0  # "est | parti"
        cost += 100.0 if before in LEADING_PUNCT else 0.0  # never after an opening "-" or "¿"
        cost -= 5.0 if ends_sentence(before) or CLAUSE_END.search(before) else 0.0
        return cost

    def solve(self, windowed: bool) -> list[int] | None:
        """The cuts (token indices, 0 and n included) at the least cost. ``windowed``: only parts
        short enough to fit are tried (fast); None when that finds no way where every part fits."""
        best = self._first_part(windowed)
        back: list[dict[int, int]] = [{}]
        for k in range(1, self.count):
            best, came = self._next_part(best, k, windowed)
            back.append(came)
        if self.n not in best:
            return None
        cuts = [self.n]
        for k in range(self.count - 1, 0, -1):
            cuts.append(back[k][cuts[-1]])
        cuts.append(0)
        cuts.reverse()
        if windowed and any(self.misfit(cuts[k], cuts[k + 1]) for k in range(self.count)):
            return None  # the full search may gather what cannot fit into fewer cues
        return cuts

    def _first_part(self, windowed: bool) -> dict[int, float]:
        best: dict[int, float] = {}
        for j in range(1 if self.need_words else 0, self.n + 1):
            if windowed and j > 1 and self.first[j] > 0:
                break
            best[j] = self.misfit(0, j) + self.cuts_cost[0][j]
        return best

    def _next_part(self, best: dict[int, float], k: int, windowed: bool) -> tuple[dict[int, float], dict[int, int]]:
        """The least cost of each end of part k, and the start it came from."""
        last = k == self.count - 1
        here: dict[int, float] = {}
        came: dict[int, int] = {}
        for j in [self.n] if last else range(self.n + 1):
            extra = 0.0 if last else self.cuts_cost[k][j]
            chosen, lowest = None, math.inf
            for i in range(self.first[j] if windowed else 0, j if self.need_words else j + 1):
                before = best.get(i)
                if before is None:
                    continue
                total = before + self.misfit(i, j) + extra
                if total < lowest:
                    chosen, lowest = i, total
            if chosen is not None:
                here[j], came[j] = lowest, chosen
        return here, came
