"""Cues translated a sentence at a time: the cues up to one that ends a sentence are one text for
the backend, and its translation is cut back into those cues (``sharing.distribute``), so the count
and the times of the cues stay one for one. A cue of speaker-dash lines is translated line by line."""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from transcription.pipeline.recognition.words import ends_sentence
from transcription.pipeline.transcripts.captions import Cue
from transcription.pipeline.transcripts.linebreaks import MAX_LINES, fits, line_limit, wrap_lines

from .backend import TranslationFailed, Translator
from .casing import capitalised_like, continue_lowercase
from .sharing import distribute

log = logging.getLogger(__name__)

_DASH = "- "
_DASH_LINE = re.compile(r"^\s*[-–—]\s*(.*)$")


def _without_dash(line: str) -> str:
    """A speaker's line without its leading dash (the backend may keep or drop it)."""
    match = _DASH_LINE.match(line)
    return match.group(1) if match else line


def _speaker_lines(lines: list[str]) -> list[str] | None:
    """The speakers' texts when every line (two or more) is a "- text" line, else None."""
    if len(lines) < 2:
        return None
    matches = [_DASH_LINE.match(line) for line in lines]
    if not all(match and match.group(1).strip() for match in matches):
        return None
    return [match.group(1).strip() for match in matches]  # type: ignore[union-attr]


# A sentence is translated in one piece, but a run of cues that never ends a sentence (no
# punctuation in a transcript without it) is cut after this many cues, so that one translation
# unit stays a size the backends handle well and the distribution below stays cheap.
MAX_CUES_PER_SENTENCE = 6


def _text_of(cue: Cue) -> str:
    return re.sub(r"\s+", " ", " ".join(cue.lines)).strip()


def sentence_groups(cues: list[Cue]) -> list[tuple[str, list[int]]]:
    """("dash" | "text" | "empty", cue indices): consecutive text cues up to and including the one
    that ends a sentence form one group (at most MAX_CUES_PER_SENTENCE); a speaker-dash cue or an
    empty cue is a group of its own."""
    groups: list[tuple[str, list[int]]] = []
    current: list[int] = []
    for index, cue in enumerate(cues):
        text = _text_of(cue)
        if _speaker_lines(cue.lines) is not None or not text:
            if current:
                groups.append(("text", current))
                current = []
            groups.append(("dash" if text else "empty", [index]))
            continue
        current.append(index)
        if ends_sentence(text.split()[-1]) or len(current) >= MAX_CUES_PER_SENTENCE:
            groups.append(("text", current))
            current = []
    if current:
        groups.append(("text", current))
    return groups


def translate_cues(cues: list[Cue], translator: Translator, *, language: str | None = None) -> list[Cue]:
    """New cues with the same count and start/end, their text translated with ``translator``.

    The cues of one sentence are translated together, as one text (``sentence_groups``), and the
    translation is cut back into those cues by each cue's share of the source's characters, at
    word boundaries, moving words between the sentence's cues where a part would not fit
    (``distribute``); each part is then laid out on at most 2 balanced lines of
    ``line_limit(language)`` characters, and a part that continues a sentence starts in lower case
    (``continue_lowercase``). A cue of speaker-dash lines keeps one "- " line per speaker (each
    translated on its own). Empty cues stay empty. All texts go to the backend in one call."""
    groups = sentence_groups(cues)
    units: list[str] = []
    plans: list[tuple[int, int]] = []  # (first unit, unit count) per group
    for kind, indices in groups:
        if kind == "dash":
            speakers = _speaker_lines(cues[indices[0]].lines) or []
            plans.append((len(units), len(speakers)))
            units.extend(speakers)
        elif kind == "text":
            plans.append((len(units), 1))
            units.append(" ".join(_text_of(cues[index]) for index in indices))
        else:
            plans.append((len(units), 0))
    translated = translator.translate(units) if units else []
    if len(translated) != len(units):
        log.error("%s returned %d texts for %d", translator.name, len(translated), len(units))
        raise TranslationFailed("Translation failed on this server.")
    limit = line_limit(language)
    out = list(cues)
    blocks: list[tuple[list[int], str, str]] = []  # text groups: (cue indices, source, translation)
    for (kind, indices), (first, count) in zip(groups, plans):
        parts = translated[first : first + count]
        if kind == "dash":
            lines = [_DASH + _without_dash(part).strip() for part in parts]
            out[indices[0]] = replace(cues[indices[0]], lines=lines)
        elif kind == "text":
            blocks.append((indices, units[first], capitalised_like(parts[0], units[first])))
        else:
            out[indices[0]] = replace(cues[indices[0]], lines=[])
    for indices, source, translation in _fitted_blocks(cues, blocks, language):
        texts = distribute(translation, [len(_text_of(cues[index])) for index in indices], language=language)
        texts = continue_lowercase(texts, source, translation, language)
        for index, text in zip(indices, texts):
            out[index] = replace(cues[index], lines=wrap_lines(text, limit, MAX_LINES, language=language))
    return out


MAX_CUES_PER_BLOCK = 12


def _fitted_blocks(
    cues: list[Cue], blocks: list[tuple[list[int], str, str]], language: str | None
) -> list[tuple[list[int], str, str]]:
    """Sentence groups whose translation cannot be laid out in their own cues (a one-cue sentence
    that came out longer than two lines) are joined with the following groups of adjacent cues (then
    the previous ones) until it can, so that words, or a short sentence, may move into a
    neighbouring cue with room rather than overflow; at most MAX_CUES_PER_BLOCK cues together.
    ``distribute`` still keeps each part as close to its own cue's share as the layout allows."""
    limit = line_limit(language)

    def fit(block: tuple[list[int], str, str]) -> bool:
        indices, _, translation = block
        parts = distribute(translation, [len(_text_of(cues[index])) for index in indices], language=language)
        return all(fits(wrap_lines(part, limit, MAX_LINES, language=language), limit) for part in parts)

    def joined(a: tuple[list[int], str, str], b: tuple[list[int], str, str]) -> tuple[list[int], str, str]:
        return (a[0] + b[0], f"{a[1]} {b[1]}", f"{a[2]} {b[2]}")

    def adjacent(a: tuple[list[int], str, str], b: tuple[list[int], str, str]) -> bool:
        return b[0][0] == a[0][-1] + 1 and len(a[0]) + len(b[0]) <= MAX_CUES_PER_BLOCK

    out: list[tuple[list[int], str, str]] = []
    pending = list(blocks)
    while pending:
        block = pending.pop(0)
        # grow the block over its neighbours, the next group first, until it fits or cannot grow
        while not fit(block):
            if pending and adjacent(block, pending[0]):
                block = joined(block, pending.pop(0))
            elif out and adjacent(out[-1], block):
                block = joined(out.pop(), block)
            else:
                break
        out.append(block)
    return out
