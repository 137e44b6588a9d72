"""A job's text and subtitles from its recognised segments and speaker turns: what the speech stage
stores, and what the benchmarks time as the steps after recognition."""

from __future__ import annotations

from collections.abc import Sequence

from . import captions, cleaning, paragraphs, speakers
from .types import Segment, SpeakerTurn, renumber_speakers


def final_segments(
    segments: Sequence[Segment],
    turns: Sequence[SpeakerTurn],
    *,
    language: str | None,
    verbatim: bool = False,
    tag_audio_events: bool = False,
) -> list[Segment]:
    """The segments every output is made of: speakers laid on the words, the words cleaned as the
    job asks."""
    segments = speakers.assign_speakers(segments, turns)
    return cleaning.clean_words(segments, verbatim=verbatim, tag_audio_events=tag_audio_events, language=language)


def texts(segments: Sequence[Segment], *, language: str | None) -> dict[str, str]:
    """``{"txt", "srt", "webvtt"}`` of final segments."""
    cues = captions.build_cues(segments, language=language)
    return {
        "txt": paragraphs.transcript_text(segments),
        "srt": captions.to_srt(cues),
        "webvtt": captions.to_webvtt(cues),
    }


def segment_records(segments: Sequence[Segment]) -> list[dict]:
    """Final segments as plain data (JSON): times in seconds to the millisecond, the text without
    its leading space, speakers numbered from 1 in order of first appearance, and the words."""
    numbers = renumber_speakers([segment.speaker for segment in segments])
    return [
        {
            "start": round(segment.start, 3),
            "end": round(segment.end, 3),
            "text": segment.text.strip(),
            "speaker": number,
            "words": [
                {"start": round(w.start, 3), "end": round(w.end, 3), "word": w.text.strip()} for w in segment.words
            ],
        }
        for segment, number in zip(segments, numbers, strict=True)
    ]


def build_results(
    segments: Sequence[Segment],
    turns: Sequence[SpeakerTurn],
    *,
    language: str | None,
    verbatim: bool = False,
    tag_audio_events: bool = False,
) -> dict[str, str]:
    """``{"txt", "srt", "webvtt"}``: speakers laid on the words, the words cleaned as the job asks,
    then cut into paragraphs and cues."""
    final = final_segments(segments, turns, language=language, verbatim=verbatim, tag_audio_events=tag_audio_events)
    return texts(final, language=language)
