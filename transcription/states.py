"""The job and translation state machines of DESIGN.md section 2, as plain data.

A job moves forward through STATE_ORDER (it may skip states that do not apply to it, such as
`merging` for a short video or `burning` for a transcript) and may fail from any state that is
not final. Each state owns a range of `progress`; progress never goes down.

A done job's work made again on request (an edit's changed cues translated again, a burned job
burned again: issue 46) leaves `done` by the few ways back listed in JOB_REWORK and
TRANSLATION_REWORK, each with why. Only the rework services ask for them (rework=True): the
pipeline that first makes a job can never take them. Every move is written by services.py
(job_move, translation_move), the one module that writes a state (tests/test_service_writes.py).
"""

from __future__ import annotations

WAITING = "waiting"
PREPARING = "preparing"
DOWNLOADING = "downloading"
CONVERTING = "converting"
UPLOADING = "uploading"
PROCESSING = "processing"
MERGING = "merging"
ALIGNING = "aligning"
TRANSLATING = "translating"
BURNING = "burning"
DONE = "done"
FAILED = "failed"

STATE_ORDER = [
    WAITING,
    PREPARING,
    DOWNLOADING,
    CONVERTING,
    UPLOADING,
    PROCESSING,
    MERGING,
    ALIGNING,
    TRANSLATING,
    BURNING,
    DONE,
]
FINAL_STATES = {DONE, FAILED}

# Inclusive progress range owned by each state.
PROGRESS_RANGE = {
    WAITING: (0, 0),
    PREPARING: (1, 4),
    DOWNLOADING: (5, 19),
    CONVERTING: (20, 24),
    UPLOADING: (25, 29),
    PROCESSING: (30, 79),
    MERGING: (80, 81),
    ALIGNING: (82, 89),
    TRANSLATING: (90, 93),
    BURNING: (94, 99),
    DONE: (100, 100),
}
# A burned job spends most of its time drawing videos (one per language), so its bar gives
# `burning` most of the way.
BURNED_PROGRESS_RANGE = {
    **PROGRESS_RANGE,
    PROCESSING: (30, 54),
    MERGING: (55, 55),
    ALIGNING: (56, 59),
    TRANSLATING: (60, 64),
    BURNING: (65, 99),
}

TRANSLATION_PENDING = "pending"
TRANSLATION_TRANSLATING = "translating"
TRANSLATION_BURNING = "burning"
TRANSLATION_DONE = "done"
TRANSLATION_FAILED = "failed"
TRANSLATION_NEXT = {
    TRANSLATION_PENDING: {TRANSLATION_TRANSLATING, TRANSLATION_FAILED},
    TRANSLATION_TRANSLATING: {TRANSLATION_TRANSLATING, TRANSLATION_BURNING, TRANSLATION_DONE, TRANSLATION_FAILED},
    TRANSLATION_BURNING: {TRANSLATION_BURNING, TRANSLATION_DONE, TRANSLATION_FAILED},
    TRANSLATION_DONE: set(),
    TRANSLATION_FAILED: set(),
}

# The ways back from a final state, (from, to) -> why; only work made again on request takes them.
JOB_REWORK = {
    (DONE, BURNING): (
        "a done burned job burned again from its (edited) subtitles (reburn_services.reburn_start): "
        "reported as the first burn was, so a client's poll loop reads it as it read the job; it "
        "ends `done` again by the forward rule, and its bar starts `burning`'s range again"
    ),
}
TRANSLATION_REWORK = {
    (TRANSLATION_DONE, TRANSLATION_TRANSLATING): (
        "an edit changed cues of a made translation: those cues are translated again "
        "(retranslation_services), the rest of it kept"
    ),
    (TRANSLATION_DONE, TRANSLATION_DONE): (
        "an edit moved cues without changing their words: the translation is stored again at the new "
        "times with nothing to translate"
    ),
    (TRANSLATION_DONE, TRANSLATION_FAILED): (
        "the balance does not cover an edit's retranslation: the translation ends failed with the "
        "figures in its error, as the contract answers an empty balance"
    ),
    (TRANSLATION_DONE, TRANSLATION_BURNING): (
        "a re-burn draws the translation's video again (reburn_services.reburn_start); it ends `done`, "
        "with the new video or the old one"
    ),
}


class InvalidTransition(Exception):
    pass


def check_job_transition(current: str, new: str, *, rework: bool = False) -> None:
    """Raise InvalidTransition unless a job may move from `current` to `new`.

    Staying in the same state is allowed (a retried stage re-enters its state). With `rework`
    (work made again on request), the ways back of JOB_REWORK are allowed too.
    """
    if rework and (current, new) in JOB_REWORK:
        return
    if current in FINAL_STATES:
        raise InvalidTransition(f"Job is already {current}; it cannot move to {new}.")
    if new == FAILED:
        return
    if new not in STATE_ORDER:
        raise InvalidTransition(f"Unknown state {new!r}.")
    if STATE_ORDER.index(new) < STATE_ORDER.index(current):
        raise InvalidTransition(f"A job cannot go back from {current} to {new}.")


def progress_in(state: str, fraction: float, job_type: str | None = None) -> int:
    """The progress value `fraction` (0..1) of the way through `state`'s range."""
    low, high = (BURNED_PROGRESS_RANGE if job_type == "burned" else PROGRESS_RANGE)[state]
    fraction = min(max(fraction, 0.0), 1.0)
    return low + int(round((high - low) * fraction))


def check_translation_transition(current: str, new: str, *, rework: bool = False) -> None:
    """Raise InvalidTransition unless a translation may move from `current` to `new` (with
    `rework`, by TRANSLATION_REWORK's ways back too)."""
    if rework and (current, new) in TRANSLATION_REWORK:
        return
    if new not in TRANSLATION_NEXT[current]:
        raise InvalidTransition(f"A translation cannot move from {current} to {new}.")
