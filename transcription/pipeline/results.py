"""A job's text and subtitles from its recognised segments and speaker turns: what the speech stage
stores, and what the benchmarks time as the steps after recognition."""

from __future__ import annotations

from collections.abc import Sequence

from . import captions, cleaning, paragraphs, speakers
from .types import Segment, SpeakerTurn


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
    segments = speakers.assign_speakers(segments, turns)
    segments = cleaning.clean_words(segments, verbatim=verbatim, tag_audio_events=tag_audio_events, language=language)
    cues = captions.build_cues(segments, language=language)
    return {
        "txt": paragraphs.transcript_text(segments),
        "srt": captions.to_srt(cues),
        "webvtt": captions.to_webvtt(cues),
    }
