"""What a live stream says, as frozen dataclasses, each about one item (an utterance) by ``item_id``.

They cross Redis between the live worker and the door as JSON (:func:`to_json`, :func:`from_json`).
A :class:`Delta` is append-only: the deltas of an item, joined, are exactly its
:class:`Completed` ``transcript``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = [
    "Committed",
    "Completed",
    "Delta",
    "Failed",
    "LiveEvent",
    "SpeechStarted",
    "SpeechStopped",
    "from_json",
    "to_json",
]


@dataclass(frozen=True)
class SpeechStarted:
    """Server VAD heard speech begin, ``audio_start_ms`` after the stream's first sample."""

    item_id: str
    audio_start_ms: int


@dataclass(frozen=True)
class SpeechStopped:
    """Server VAD heard the speech end, ``audio_end_ms`` after the stream's first sample."""

    item_id: str
    audio_end_ms: int


@dataclass(frozen=True)
class Committed:
    """The item's audio is closed (by server VAD or the client's commit); it follows ``previous_item_id``."""

    item_id: str
    previous_item_id: str | None


@dataclass(frozen=True)
class Delta:
    """More words of the item, never taken back: append ``text`` to what came before."""

    item_id: str
    text: str


@dataclass(frozen=True)
class Completed:
    """The item's final text: its deltas joined."""

    item_id: str
    transcript: str


@dataclass(frozen=True)
class Failed:
    """The item could not be transcribed; ``message`` says why."""

    item_id: str
    message: str


LiveEvent = SpeechStarted | SpeechStopped | Committed | Delta | Completed | Failed

_TYPES: dict[str, type[Any]] = {
    "speech_started": SpeechStarted,
    "speech_stopped": SpeechStopped,
    "committed": Committed,
    "delta": Delta,
    "completed": Completed,
    "failed": Failed,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def to_json(event: LiveEvent) -> dict[str, Any]:
    """``{"type": "delta", "item_id": ..., "text": ...}`` and so on."""
    return {"type": _NAMES[type(event)], **asdict(event)}


def from_json(data: dict[str, Any]) -> LiveEvent:
    """The event :func:`to_json` made; ``ValueError`` for anything else."""
    cls = _TYPES.get(data.get("type", ""))
    if cls is None:
        raise ValueError(f"not a live event: {data.get('type')!r}")
    try:
        event: LiveEvent = cls(**{f.name: data[f.name] for f in fields(cls)})
    except KeyError as missing:
        raise ValueError(f"live event {data['type']!r} without {missing}") from None
    return event
