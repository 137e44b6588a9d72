"""The job and translation state machines of DESIGN.md section 2, as plain data.

A job moves forward through STATE_ORDER (it may skip states that do not apply to it, such as
`merging` for a short video or `burning` for a transcript) and may fail from any state that is
not final. Each state owns a range of `progress`; progress never goes down. The one way back
from `done` is a burned job burned again on request (reburn_services: `done` -> `burning` -> `done`),
which bypasses these checks on purpose.
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


class InvalidTransition(Exception):
    pass


def check_job_transition(current: str, new: str) -> None:
    """Raise InvalidTransition unless a job may move from `current` to `new`.

    Staying in the same state is allowed (a retried stage re-enters its state).
    """
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


def check_translation_transition(current: str, new: str) -> None:
    if new not in TRANSLATION_NEXT[current]:
        raise InvalidTransition(f"A translation cannot move from {current} to {new}.")
