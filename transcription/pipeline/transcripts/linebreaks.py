"""Where a subtitle's text breaks into lines: the one scorer, used for the two lines of a cue built
from timed words (captions.build_cues) and for text re-wrapped after translation (wrap_lines).

A break between two lines costs what their imbalance and the word before it say; the cheapest set
of breaks wins. Lines are balanced or bottom-heavy; a line never ends after an article,
preposition or conjunction when anything else fits, preferably ends at a sentence or clause end or
a pause, never leaves one short word alone, and a last line is never only digits (SRT readers
take it for the next cue's number).
"""

from __future__ import annotations

import math
import re

from transcription.pipeline.recognition.words import (
    ATTACHING_PUNCT,
    CLAUSE_END,
    NO_BREAK_AFTER,
    NO_BREAK_ALL,
    OPENING_PUNCT,
    WEAK_BREAK_AFTER,
    WEAK_BREAK_ALL,
    ends_sentence,
    is_nospace_char,
    language_key,
)

MAX_LINE_CHARS = 42
MAX_LINES = 2
# Chinese, Japanese and Korean subtitles count full-width characters, at most 16 a line (Netflix's
# timed-text style guides); every other language counts characters, at most 42.
MAX_LINE_CHARS_FULL_WIDTH = 16
FULL_WIDTH_LANGUAGES = {"ja", "zh", "ko", "yue"}

# The scorer's weights, in the units of one character of imbalance.
TOP_LONGER_PER_CHAR = 0.7  # a top line longer than the bottom one, per character
BOTTOM_LONGER_PER_CHAR = 0.25  # a bottom-heavy pair is the better shape
AFTER_FUNCTION_WORD = 1000.0  # ending a line on "the", "of", "and": only when nothing else fits
AFTER_WEAK_WORD = 8.0  # on a pronoun, auxiliary or intensifier ("we | are", "so | much")
AT_SENTENCE_END = -20.0
AT_CLAUSE_END = -10.0
AT_PAUSE = -6.0  # a pause in the speech (cues from timed words only)
INSIDE_GLUED_RUN = 40.0  # between two tokens written without a space (CJK, a cut long word)
LONE_SHORT_WORD = 30.0  # a line holding one word shorter than SHORT_WORD_CHARS
SHORT_WORD_CHARS = 10
DIGITS_LAST_LINE = 500.0
OVER_LINE_PER_CHAR = 100.0  # wrap_lines only: text too long for its lines overflows them rather than lose words


def ends_on(text: str, words: set[str]) -> bool:
    """Whether `text` is one of `words` with no punctuation of its own ("the", not "the,")."""
    if not text[-1:].isalnum() and text[-1:] != "'":
        return False
    return text.lower().strip('"“‘«¿¡(') in words


def break_cost(
    top_chars: int,
    bottom_chars: int,
    last_word: str,
    *,
    no_break: set[str],
    weak_break: set[str],
    pause: bool = False,
    glued: bool = False,
    lone_top: bool = False,
    lone_bottom: bool = False,
    digits_bottom: bool = False,
) -> float:
    """The cost of breaking between a line of `top_chars` ending with `last_word` and the next line
    of `bottom_chars`: imbalance plus what the word before the break says. `lone_*`: the line is
    one short word; `digits_bottom`: the next line is the last and only digits."""
    if top_chars > bottom_chars:
        cost = (top_chars - bottom_chars) * TOP_LONGER_PER_CHAR
    else:
        cost = (bottom_chars - top_chars) * BOTTOM_LONGER_PER_CHAR
    if ends_on(last_word, no_break):
        cost += AFTER_FUNCTION_WORD
    elif ends_on(last_word, weak_break):
        cost += AFTER_WEAK_WORD
    if ends_sentence(last_word):
        cost += AT_SENTENCE_END
    elif CLAUSE_END.search(last_word):
        cost += AT_CLAUSE_END
    elif pause:
        cost += AT_PAUSE
    if glued:
        cost += INSIDE_GLUED_RUN
    cost += LONE_SHORT_WORD * (lone_top + lone_bottom)
    if digits_bottom:
        cost += DIGITS_LAST_LINE
    return cost


def function_words(language: str | None) -> tuple[set[str], set[str]]:
    """(no-break words, weak-break words) of a language; every known language's when None or unknown."""
    key = language_key(language)
    if key in NO_BREAK_AFTER:
        return NO_BREAK_AFTER[key], WEAK_BREAK_AFTER.get(key, set())
    return NO_BREAK_ALL, WEAK_BREAK_ALL


def line_limit(language: str | None) -> int:
    """Characters a subtitle line may hold in ``language`` (42; 16 full-width ones for CJK)."""
    return MAX_LINE_CHARS_FULL_WIDTH if language_key(language) in FULL_WIDTH_LANGUAGES else MAX_LINE_CHARS


def fits(lines: list[str], max_chars: int, max_lines: int = MAX_LINES) -> bool:
    """Whether ``lines`` keep the layout rule: at most ``max_lines`` lines of ``max_chars``."""
    return len(lines) <= max_lines and all(len(line) <= max_chars for line in lines)


def wrap_tokens(text: str) -> list[tuple[str, bool]]:
    """(token, glued to the previous one) for ``text``: its words, and single characters inside a
    run of a script written without spaces, so that such text can break anywhere."""
    tokens: list[tuple[str, bool]] = []
    for word in text.split():
        glue, piece = False, ""
        for ch in word:
            if (
                piece
                and ch not in ATTACHING_PUNCT
                and (is_nospace_char(ch) or is_nospace_char(piece[-1]))
                and not all(c in OPENING_PUNCT for c in piece)
            ):
                tokens.append((piece, glue))
                glue, piece = True, ""
            piece += ch
        tokens.append((piece, glue))
    return tokens


def wrap_lines(
    text: str, max_chars: int = MAX_LINE_CHARS, max_lines: int = MAX_LINES, *, language: str | None = None
) -> list[str]:
    """``text`` on as few lines as fit ``max_chars`` each (at most ``max_lines``), broken where
    ``break_cost`` is lowest over all the breaks. ``language`` picks the function words (all the
    known languages' when None). Text too long for ``max_lines`` lines still gets exactly
    ``max_lines`` lines (longer than ``max_chars``) rather than losing words; a word longer than a
    line is never cut. "" gives [].
    """
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return []
    if len(text) <= max_chars or max_lines <= 1:
        return [text]
    breaking = _LineBreaking(wrap_tokens(text), max_chars, language)
    n = len(breaking.tokens)
    fewest = min(max_lines, n, max(2, math.ceil(len(text) / max_chars)))
    lines: list[str] = [text]
    for count in range(fewest, min(max_lines, n) + 1):
        lines = breaking.best(count)
        if all(len(line) <= max_chars for line in lines):
            break
    return lines


class _LineBreaking:
    """The least costly way to lay tokens out on a given number of lines (dynamic programming over
    the breaks: each line's state is the token range it holds)."""

    def __init__(self, tokens: list[tuple[str, bool]], max_chars: int, language: str | None):
        self.tokens, self.max_chars = tokens, max_chars
        self.no_break, self.weak_break = function_words(language)
        self.prefix = [0]
        for index, (tok, glue) in enumerate(tokens):
            self.prefix.append(self.prefix[-1] + (0 if index == 0 or glue else 1) + len(tok))

    def length(self, i: int, j: int) -> int:
        return self.prefix[j] - self.prefix[i] - (0 if i == 0 or self.tokens[i][1] else 1)

    def lone(self, i: int, j: int) -> bool:
        return j - i == 1 and self.length(i, j) < SHORT_WORD_CHARS

    def overflow(self, i: int, j: int) -> float:
        return max(0, self.length(i, j) - self.max_chars) * OVER_LINE_PER_CHAR

    def best(self, count: int) -> list[str]:
        """The lines of the least costly layout on ``count`` lines."""
        n, tokens = len(self.tokens), self.tokens
        # cost[(i, j)]: the best lines so far whose last line holds tokens i..j-1
        cost: dict[tuple[int, int], float] = {(0, j): self.overflow(0, j) for j in range(1, n - count + 2)}
        back: list[dict[tuple[int, int], tuple[int, int]]] = []
        for line in range(2, count + 1):
            cost, came = self._next_line(cost, line, count)
            back.append(came)
        bounds = [min(cost, key=cost.__getitem__)]
        for came in reversed(back):
            bounds.append(came[bounds[-1]])
        bounds.reverse()
        return ["".join(("" if k == i or tokens[k][1] else " ") + tokens[k][0] for k in range(i, j)) for i, j in bounds]

    def _next_line(
        self, cost: dict[tuple[int, int], float], line: int, count: int
    ) -> tuple[dict[tuple[int, int], float], dict[tuple[int, int], tuple[int, int]]]:
        n, tokens = len(self.tokens), self.tokens
        last_line = line == count
        step: dict[tuple[int, int], float] = {}
        came: dict[tuple[int, int], tuple[int, int]] = {}
        for (h, i), before in cost.items():
            for j in [n] if last_line else range(i + 1, n - (count - line) + 1):
                if j <= i:
                    continue
                total = (
                    before
                    + self.overflow(i, j)
                    + break_cost(
                        self.length(h, i),
                        self.length(i, j),
                        tokens[i - 1][0],
                        no_break=self.no_break,
                        weak_break=self.weak_break,
                        glued=tokens[i][1],
                        lone_top=line == 2 and self.lone(h, i),
                        lone_bottom=self.lone(i, j),
                        digits_bottom=last_line and j - i == 1 and tokens[i][0].isdigit(),
                    )
                )
                if total < step.get((i, j), math.inf):
                    step[(i, j)], came[(i, j)] = total, (h, i)
        return step, came
