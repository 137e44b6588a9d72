"""A translation brought up to date with an edited transcript by translating again only the cues
whose text changed (issue 46). Plain functions over cues; nothing of Django.

A translation has one cue per cue of the transcript it was made from, same times (translate.cues).
After an edit the transcript's cues are made again; the old and the new cue texts are lined up
(difflib, on whole cue texts), and each new cue whose text is found unchanged keeps its translated
lines, at its new times (a `times` edit, or a cue moved by a split, is not translated again); the
others are marked to translate. That plan is JSON (kept on the translation until a worker
translates the marked cues), so an edit made before the worker ran is planned against it:
a cue still marked stays marked, and is not counted (nor charged) twice.

The marked cues are translated in one backend call: each run of consecutive marked cues is one
text as translate_cues makes it (a sentence at a time), the runs kept apart by an empty cue, which
translate_cues leaves alone and never joins across.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from typing import Any

from transcription.pipeline.transcripts.captions import Cue

Plan = list[dict[str, Any]]  # [{start, end, lines, speakers, done: translated lines | None}]


def _text(lines: list[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def current(target: list[Cue]) -> Plan:
    """A finished translation's cues as a plan where every cue is done (the old side of `plan`)."""
    return [{"start": c.start, "end": c.end, "lines": [], "speakers": c.speakers, "done": c.lines} for c in target]


def plan(old_source: list[Cue], old_target: Plan, new_source: list[Cue]) -> tuple[Plan, list[int]]:
    """The new transcript's cues, each with the translated lines it keeps (`done`) or None to be
    translated; and the indices of the cues this edit changed (marked now, not by an earlier plan),
    which are what it charges. `old_target` is one entry per `old_source` cue; when it is not (a
    translation out of step with its transcript), every cue is translated again."""
    matcher = difflib.SequenceMatcher(
        a=[_text(c.lines) for c in old_source], b=[_text(c.lines) for c in new_source], autojunk=False
    )
    kept: dict[int, list[str] | None] = {}
    if len(old_target) == len(old_source):
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                kept[block.b + offset] = old_target[block.a + offset]["done"]
    out: Plan = []
    changed = []
    for index, cue in enumerate(new_source):
        if index not in kept:
            changed.append(index)
        out.append(
            {"start": cue.start, "end": cue.end, "lines": cue.lines, "speakers": cue.speakers, "done": kept.get(index)}
        )
    return out, changed


def seconds_of(plan_: Plan, indices: list[int]) -> int:
    """The whole seconds (rounded up) of the cues at `indices`: what translating them costs per language."""
    total: float = sum(max(0.0, float(plan_[i]["end"]) - float(plan_[i]["start"])) for i in indices)
    return math.ceil(total - 1e-9)


def pending(plan_: Plan) -> list[int]:
    return [index for index, cue in enumerate(plan_) if cue["done"] is None]


def complete(plan_: Plan, translate: Callable[[list[Cue]], list[Cue]]) -> list[Cue]:
    """The translation's cues: the kept ones as they were (at their new times), the marked ones
    translated by `translate` (translate.translate_cues with a backend), in one call."""
    batch: list[Cue] = []
    places: list[int | None] = []  # the plan's index of each cue in `batch`; None: a separator
    previous = -2
    for index in pending(plan_):
        if batch and index != previous + 1:
            batch.append(Cue(plan_[index]["start"], plan_[index]["start"], []))
            places.append(None)
        cue = plan_[index]
        batch.append(Cue(cue["start"], cue["end"], list(cue["lines"]), list(cue.get("speakers") or [])))
        places.append(index)
        previous = index
    translated = translate(batch) if batch else []
    lines: dict[int, list[str]] = {place: t.lines for place, t in zip(places, translated) if place is not None}
    return [
        Cue(
            cue["start"],
            cue["end"],
            cue["done"] if cue["done"] is not None else lines[index],
            list(cue["speakers"] or []),
        )
        for index, cue in enumerate(plan_)
    ]
