"""A job's text and subtitles from its recognised segments and speaker turns: what the speech stage
stores, and what the benchmarks time as the steps after recognition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from . import captions, cleaning, paragraphs, speakers
from .types import Segment, SpeakerTurn, renumber_speakers


def build_results(
    segments: Sequence[Segment],
    turns: Sequence[SpeakerTurn],
    *,
    language: str | None,
    verbatim: bool = False,
    tag_audio_events: bool = False,
    voice_names: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """``{"segments", "txt", "srt", "webvtt", "speaker_names"}``: speakers laid on the words, the words cleaned
    as the job asks, then cut into paragraphs and cues. ``voice_names`` names speakers by their
    number in ``turns`` (enrolled voices the speech stage recognised); ``speaker_names`` says the
    same by the number "Speaker N" has in the text."""
    segments = speakers.assign_speakers(segments, turns)
    segments = cleaning.clean_words(segments, verbatim=verbatim, tag_audio_events=tag_audio_events, language=language)
    segments, numbers = _numbered(segments)
    cues = captions.build_cues(segments, language=language)
    return {
        "segments": segment_records(segments),
        "txt": paragraphs.transcript_text(segments),
        "srt": captions.to_srt(cues),
        "webvtt": captions.to_webvtt(cues),
        "speaker_names": {
            str(numbers[speaker]): name for speaker, name in (voice_names or {}).items() if speaker in numbers
        },
    }


def segment_records(segments: Sequence[Segment]) -> list[dict[str, Any]]:
    """Numbered segments as plain data (JSON, JobSegments): times in seconds to the millisecond,
    the text without its leading space, the speaker's number (1 when none was found), the words."""
    return [
        {
            "start": round(segment.start, 3),
            "end": round(segment.end, 3),
            "text": segment.text.strip(),
            "speaker": segment.speaker or 1,
            "words": [
                {"start": round(w.start, 3), "end": round(w.end, 3), "word": w.text.strip()} for w in segment.words
            ],
        }
        for segment in segments
    ]


def _numbered(segments: list[Segment]) -> tuple[list[Segment], dict[int, int]]:
    """Segments whose speakers are numbered as people read them (1, 2, ... in order of first
    appearance among the segments with text), so that `txt`, the cues' voices and the names agree
    on who "Speaker N" is; and that numbering, from the turns' speaker numbers."""
    spoken = [1 if s.speaker is None else s.speaker for s in segments if s.text.strip()]
    numbers = dict(zip(spoken, renumber_speakers(spoken)))
    return [replace(s, speaker=numbers.get(1 if s.speaker is None else s.speaker)) for s in segments], numbers
