"""Plain data passed between pipeline stages. Nothing here knows about Django."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# what a segment of no speech may be heard as (Segment.event, pipeline.audio_events)
AUDIO_EVENTS = ("music", "singing")


@dataclass
class MediaInfo:
    """What yt-dlp says about a single video before anything is downloaded."""

    id: str
    title: str
    webpage_url: str
    duration: float | None  # seconds; None when the source does not say
    is_live: bool = False
    extractor: str = ""
    language: str | None = None


@dataclass
class Word:
    start: float
    end: float
    text: str  # as the model wrote it, usually with a leading space
    probability: float = 1.0


@dataclass
class Segment:
    start: float
    end: float
    text: str
    words: list[Word] = field(default_factory=list)
    speaker: int | None = None  # 1-based, in order of first appearance
    # what a segment of no speech was heard as ("music", "singing": pipeline.audio_events); None for speech
    event: str | None = None


@dataclass
class Transcript:
    language: str
    duration: float
    segments: list[Segment] = field(default_factory=list)
    # Whisper's probability for a detected language (None when the language was given).
    language_probability: float | None = None


@dataclass
class SpeakerTurn:
    start: float
    end: float
    speaker: int  # 1-based, in order of first appearance


def renumber_speakers(speakers: Sequence[int | None]) -> list[int]:
    """Speaker labels as people read them: 1, 2, ... in order of first appearance; None (no
    speaker found) counts as speaker 1. The one numbering every output uses."""
    numbers: dict[int, int] = {}
    return [numbers.setdefault(1 if speaker is None else speaker, len(numbers) + 1) for speaker in speakers]


def transcript_to_dict(transcript: Transcript) -> dict[str, Any]:
    """A Transcript as JSON (a recognition chunk's result, handed between workers in the database)."""
    return asdict(transcript)


def transcript_from_dict(data: dict[str, Any]) -> Transcript:
    """The Transcript transcript_to_dict wrote."""
    segments = [
        Segment(**{**segment, "words": [Word(**word) for word in segment["words"]]}) for segment in data["segments"]
    ]
    return Transcript(**{**data, "segments": segments})
