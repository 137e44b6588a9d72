"""The speech stage (asr queue): processing -> merging -> aligning, then the translations
(translation.py), then done, or burning for a burned job.

A re-delivered job in `translating` already has its subtitles: only the missing translations are
made.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from transcription import states
from transcription.pipeline import audio_events, speakers
from transcription.pipeline.media import audio
from transcription.pipeline.recognition import asr
from transcription.pipeline.transcripts.results import build_results
from transcription.storage import files
from transcription.writes import services, voice_services

from ..models import Job, Voice
from ..pipeline.speakers import voices
from ..pipeline.types import Transcript
from . import spreading, translation
from .pipeline_options import recognition_of, stage_options
from .runner import Throttled, run_stage
from .speech_model import speech_model


def run_transcribe_stage(job_id) -> bool:
    """True when the job goes on to the burn worker."""
    return run_stage(job_id, _speech_stages)


def _speech_stages(job: Job, directory: Path) -> bool:
    if job.state == states.BURNING:  # a late re-delivery: the burn worker has it
        return False
    wav = files.fetch(files.audio_name(job.id), directory / "audio.wav")
    if job.is_voice_sample:
        _enrol(job, wav)
        return False
    if job.state != states.TRANSLATING:
        _recognise(job, wav)
        job.refresh_from_db()
    translation.translate_all(job, wav)
    # the job page's editor plays this audio while its owner corrects the transcript: moved, not
    # copied, when storage is a local folder (the stage is done with it)
    files.store_moving(wav, files.playback_name(job.id))
    if job.type == "burned":
        services.job_advance(job.id, states.BURNING)
        return True
    services.job_finish(job.id)
    return False


def _recognise(job: Job, wav: Path) -> None:
    services.job_advance(job.id, states.PROCESSING)
    model = speech_model()
    options = stage_options()
    chunks = audio.plan_chunks(wav, max_chunk=options.recognition_chunk_seconds)
    # diarization runs beside recognition, in a process of its own at the lowest priority: it takes
    # the CPU recognition leaves idle instead of adding its time after it (speakers.apart says why
    # not a thread); leaving the `with` on an error stops it
    # (its ONNX graphs kept in MODEL_CACHE_DIR/speakers, built by the first one)
    with speakers.DiarizationApart(wav, options=options.speakers) as diarization:
        # one VAD pass for the whole job (one core; the child gets ready on the other meanwhile):
        # recognition and diarization read the same probabilities
        activity = speakers.speech.find_speech(wav)
        diarization.diarize(regions=activity.for_diarization(), extent=activity.for_turns())
        if spreading.spreads(chunks):
            # the job ends when its last chunk and its speakers are both done: at the lowest priority
            # the speakers waited for this worker's own chunks, then ran while the other workers
            # idled (bench/asr/spread.py: 58-69 s of 226-238); beside them, it takes fewer chunks
            diarization.hurry()
        transcript = _transcribe_chunks(job, model, wav, chunks, activity.for_recognition())
        turns = diarization.turns(timeout=speakers.diarization_timeout(chunks[-1][1] if chunks else 0.0))

    services.job_advance(
        job.id,
        states.ALIGNING,
        detected_language=transcript.language,
        detected_language_probability=transcript.language_probability,
    )
    results = build_results(
        transcript.segments,
        turns,
        language=transcript.language,
        verbatim=job.verbatim,
        tag_audio_events=job.tag_audio_events,
        voice_names=_enrolled_voices_heard(job, wav, turns),
        # music and singing as heard, not only where the speech model wrote "[Music]" (a second a minute)
        audio_events=audio_events.find_events(wav) if job.tag_audio_events else (),
    )
    # the segments and words are kept apart from the job's row (the OpenAI-compatible answers)
    services.job_keep_segments(
        job.id, language=transcript.language, duration=transcript.duration, segments=results.pop("segments")
    )
    services.job_advance(job.id, states.ALIGNING, 1.0, **results)


def _enrolled_voices_heard(job: Job, wav: Path, turns) -> dict[int, str]:
    """{speaker of `turns`: name} for the speakers who sound like one of the account's enrolled
    voices (only this account's, and only those the current encoder made)."""
    enrolled = [
        (voice.name, np.frombuffer(bytes(voice.embedding), dtype=np.float32))
        for voice in Voice.objects.filter(
            account_id=job.account_id, embedding__isnull=False, encoder=voices.VOICE_PRINT_MODEL
        ).only("name", "embedding")
        if voice.embedding is not None  # the query asks for none without
    ]
    if not enrolled:
        return {}
    # keyed by position: two voices may share a name
    heard = voices.recognise_voices(
        wav,
        turns,
        [(index, embedding) for index, (_, embedding) in enumerate(enrolled)],
        options=stage_options().speakers,
    )
    return {speaker: enrolled[index][0] for speaker, index in heard.items()}


def _enrol(job: Job, wav: Path) -> None:
    """A voice sample's job: its one voice embedded and kept with the Voice; no recognition, no
    text. A sample with more than one voice, or too little speech, fails the job (and the voice)."""
    services.job_advance(job.id, states.PROCESSING)
    activity = speakers.speech.find_speech(wav)
    options = stage_options().speakers
    sample = voices.voice_sample(
        wav,
        activity.for_diarization(),
        activity.for_turns(),
        diarize=lambda path, regions, extent: speakers.diarize(path, regions=regions, extent=extent, options=options),
        options=options,
    )
    services.job_advance(job.id, states.ALIGNING)
    voice_services.voice_store(job.id, sample.embedding.astype(np.float32).tobytes(), voices.VOICE_PRINT_MODEL)
    services.job_finish(job.id)


def _transcribe_chunks(job: Job, model, wav: Path, chunks, speech) -> Transcript:
    if spreading.spreads(chunks):  # a long job: its chunks go to every free asr worker
        return spreading.transcribe_spread(job, model, wav, speech)
    total = sum(end - start for start, end in chunks) or 1.0
    options = recognition_of(job)
    parts: list[Transcript] = []
    done = 0.0
    for start, end in chunks:

        def report(fraction: float, start: float = start, end: float = end, done: float = done) -> None:
            services.job_progress(job.id, (done + fraction * (end - start)) / total)

        progress = Throttled(report)
        parts.append(
            asr.transcribe(
                model,
                wav,
                start=start,
                end=end,
                options=options,
                on_progress=progress,
                speech=speech,
            )
        )
        done += end - start
    if len(parts) > 1:
        services.job_advance(job.id, states.MERGING)
    return asr.merge(parts)
