"""A job's text and subtitles from its recognised segments and speaker turns: what the speech stage
stores, and what the benchmarks time as the steps after recognition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from transcription.pipeline import audio_events as sound
from transcription.pipeline import speakers
from transcription.pipeline.recognition import cleaning
from transcription.pipeline.transcripts import captions, paragraphs, transcript_edits
from transcription.pipeline.types import Segment, SpeakerTurn, renumber_speakers


def build_results(
    segments: Sequence[Segment],
    turns: Sequence[SpeakerTurn],
    *,
    language: str | None,
    verbatim: bool = False,
    tag_audio_events: bool = False,
    voice_names: Mapping[int, str] | None = None,
    audio_events: Sequence[sound.AudioEvent] = (),
) -> dict[str, Any]:
    """``{"segments", "txt", "srt", "webvtt", "speaker_names"}``: speakers laid on the words, the words cleaned
    as the job asks, then cut into paragraphs and cues. ``voice_names`` names speakers by their
    number in ``turns`` (enrolled voices the speech stage recognised); ``speaker_names`` says the
    same by the number "Speaker N" has in the text. ``audio_events``: the music and singing the
    detector heard (pipeline.audio_events), laid in as segments of their own where nobody speaks
    when the job tags audio events."""
    assigned = speakers.assign_speakers(segments, turns, heard_under=True)
    # a voice heard only under another's words has an empty segment (see assign_speakers): it shows in
    # the segments (two turns overlapping in time), never in `txt` or the cues, whose words have one
    # speaker each
    under = [s for s in assigned if not s.text.strip() and not s.words]
    spoken = [s for s in assigned if s.text.strip() or s.words]
    spoken = cleaning.clean_words(spoken, verbatim=verbatim, tag_audio_events=tag_audio_events, language=language)
    if tag_audio_events and audio_events:
        # the music and singing heard, where nobody speaks: segments of their own, after cleaning (which
        # would merge a long event's pieces into one tag)
        heard = sound.outside_speech(audio_events, sound.speech_spans(spoken))
        spoken = sound.merged(spoken, sound.event_segments(heard))
    spoken, numbers = _numbered(spoken)
    for s in under:  # a speaker heard only under others is numbered after those who have words
        numbers.setdefault(s.speaker or 1, len(set(numbers.values())) + 1)
    under = [replace(s, speaker=numbers[s.speaker or 1]) for s in under]
    records = segment_records(_in_order(spoken, under))
    # the cues are made from the segments as they are kept, so that every later stage reading those
    # (transcript_edits.cues) reads the cues the SRT and WebVTT hold
    cues = transcript_edits.cues(records, language=language)
    return {
        "segments": records,
        "txt": paragraphs.transcript_text(spoken),
        "srt": captions.to_srt(cues),
        "webvtt": captions.to_webvtt(cues),
        "speaker_names": {
            str(numbers[speaker]): name for speaker, name in (voice_names or {}).items() if speaker in numbers
        },
    }


def segment_records(segments: Sequence[Segment]) -> list[dict[str, Any]]:
    """Numbered segments as plain data (JSON, JobSegments): times in seconds to the millisecond,
    the text without its leading space, the speaker's number (1 when none was found), the words,
    each with the speech model's probability for it (how sure it was: what a person checks first)."""
    return [_record(segment) for segment in segments]


def _record(segment: Segment) -> dict[str, Any]:
    record: dict[str, Any] = {
        "start": round(segment.start, 3),
        "end": round(segment.end, 3),
        "text": segment.text.strip(),
        "speaker": segment.speaker or 1,
        "words": [
            {
                "start": round(w.start, 3),
                "end": round(w.end, 3),
                "word": w.text.strip(),
                "probability": w.probability,
            }
            for w in segment.words
        ],
    }
    if segment.event is not None:  # a sound heard, not speech ("music", "singing"): only then the key
        record["audio_event"] = segment.event
    return record


def _in_order(spoken: list[Segment], under: list[Segment]) -> list[Segment]:
    """The spoken segments in their order, each voice heard under them after the last that starts
    before it."""
    out = list(spoken)
    for seg in under:
        at = len(out)
        while at > 0 and out[at - 1].start > seg.start:
            at -= 1
        out.insert(at, seg)
    return out


def _numbered(segments: list[Segment]) -> tuple[list[Segment], dict[int, int]]:
    """Segments whose speakers are numbered as people read them (1, 2, ... in order of first
    appearance among the segments with text), so that `txt`, the cues' voices and the names agree
    on who "Speaker N" is; and that numbering, from the turns' speaker numbers."""
    spoken = [1 if s.speaker is None else s.speaker for s in segments if s.text.strip() and s.event is None]
    numbers = dict(zip(spoken, renumber_speakers(spoken)))
    return [replace(s, speaker=numbers.get(1 if s.speaker is None else s.speaker)) for s in segments], numbers
