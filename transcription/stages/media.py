"""The media stage (media queue): preparing -> downloading -> converting -> uploading.

The video's length is charged as soon as it is known: from the metadata, or, for direct links
that carry none, from the downloaded file before anything is converted. That charge rests on what
the file's header claims; once the audio is decoded, the charge is settled against the length
decoded (_decode), and the length limit applies to it too. A burned job is charged for its picture
when that runs longer than its audio (issue 56: the burn encodes every frame), and no stage works on
more than the length settled (docs/decisions/jobs-and-billing.md).
"""

from __future__ import annotations

import math
from pathlib import Path

from transcription import states
from transcription.pipeline import burn, fetch
from transcription.pipeline.media import audio
from transcription.pipeline.media import wav as pipeline_wav
from transcription.storage import files
from transcription.writes import services

from ..models import FailureReason, Job
from ..pipeline.fetch.errors import decoded_too_long_message, picture_too_long_message
from ..pipeline.speakers import voices
from .pipeline_options import stage_options
from .runner import run_stage


def run_media_stage(job_id) -> bool:
    """True when the audio (and a burned job's video) is in storage for the next stage."""
    return run_stage(job_id, _media_stages)


def _charge(job_id, state: str, duration: int) -> bool:
    """Record the video's length and charge for it; fail the job when the account cannot pay."""
    job = services.job_advance(job_id, state, duration=duration)
    result = services.job_charge(job)
    if not result.ok:
        services.job_fail(job_id, result.error or "Not enough minutes.", FailureReason.BALANCE)
    return result.ok


def _media_stages(job: Job, directory: Path) -> bool:
    limits = stage_options().fetch
    burned = job.type == "burned"
    services.job_advance(job.id, states.PREPARING)
    if job.url.startswith("upload:"):
        return _uploaded_media(job, directory)
    info = fetch.probe(job.url, limits)
    duration = math.ceil(info.duration) if info.duration else None
    services.job_advance(job.id, states.PREPARING, 0.5, title=info.title[:500])
    if job.is_voice_sample and duration is not None:
        voices.check_sample_length(duration)  # before it is charged or downloaded
    if duration is not None and not _charge(job.id, states.PREPARING, duration):
        return False

    services.job_advance(job.id, states.DOWNLOADING)
    source = fetch.download(job.url, directory, limits, video=burned)

    return _convert_and_store(job, directory, source, duration)


def _uploaded_media(job: Job, directory: Path) -> bool:
    """An uploaded file instead of a link: its length is known since the upload was checked, and it
    is read where storage keeps it (a local folder) instead of being downloaded."""
    upload = job.upload
    if upload is None:  # the retention sweep or its owner deleted it before the job started
        raise audio.AudioError("The uploaded file was deleted before the job started; upload it again.")
    services.job_advance(job.id, states.PREPARING, 0.5, title=upload.filename[:500])
    if upload.duration is not None:  # else measured and charged once converted, as for a link
        if job.is_voice_sample:
            voices.check_sample_length(upload.duration)
        if not _charge(job.id, states.PREPARING, upload.duration):
            return False
    services.job_advance(job.id, states.DOWNLOADING)
    try:
        source = files.local_copy(files.upload_name(upload.id), directory / "upload")
    except FileNotFoundError:
        raise audio.AudioError("The uploaded file was deleted before the job started; upload it again.") from None
    return _convert_and_store(job, directory, source, upload.duration)


def _convert_and_store(job: Job, directory: Path, source: Path, duration: int | None) -> bool:
    burned = job.type == "burned"
    options = stage_options()
    services.job_advance(job.id, states.CONVERTING)
    if burned:
        burn.probe_video(source)  # no picture to draw on: fail now, not after recognition
    seconds = audio.probe_audio(source)
    if duration is None:  # direct links often carry no length until the file is read
        duration = math.ceil(seconds)
        if duration > options.max_video_seconds:
            raise fetch.FetchError(fetch.too_long_message(duration, options.max_video_seconds))
        if job.is_voice_sample:
            voices.check_sample_length(duration)
        if not _charge(job.id, states.CONVERTING, duration):
            return False
    wav = directory / "audio.wav"
    paid, max_seconds = _decode(job, source, wav, duration)
    if not paid:
        return False

    if burned and max_seconds is not None:
        source = audio.cut_media(
            source, directory / f"preview{source.suffix}", seconds=max_seconds, timeout=options.ffmpeg_timeout
        )

    services.job_advance(job.id, states.UPLOADING)
    files.store(wav, files.audio_name(job.id))
    if burned:
        services.job_advance(job.id, states.UPLOADING, 0.5)
        files.store(source, files.source_name(job.id))
    services.job_advance(job.id, states.UPLOADING, 1.0)
    return True


def _decode(job: Job, source: Path, wav: Path, claimed: int) -> tuple[bool, int | None]:
    """Decode the audio to `wav` and settle the job's charge against its length (issue 41): the
    charge so far came from the file's header, which the sender controls. The decode stops a second
    past MAX_VIDEO_SECONDS (or at a preview's end), so a header that lies costs no hours of work.

    A burned job's picture is encoded to its last frame, so its length counts too (issue 56): read
    from its packets (burn.picture_seconds, never decoded, stopped as the decode is), the charge is
    settled against the longer of the two. Whatever is settled, the WAV is no longer than it and
    the burn is cut there (reburning.draw_video): no stage works on more than was charged.

    Returns whether the job is paid for (else it failed for want of minutes), and the seconds it
    keeps (a preview's) or None for all of it."""
    job.refresh_from_db(fields=["is_preview", "preview_minutes"])
    options = stage_options()
    limit = options.max_video_seconds
    preview = job.preview_minutes * 60 if job.is_preview and job.preview_minutes is not None else None
    audio.to_wav(source, wav, timeout=options.ffmpeg_timeout, max_seconds=preview or limit + 1)
    decoded = pipeline_wav.decoded_seconds(wav)
    picture = 0.0
    if job.type == "burned":
        picture = burn.picture_seconds(source, max_seconds=(preview or limit) + 1, timeout=options.ffmpeg_timeout)
    measured = max(decoded, picture)
    if preview is not None and measured > preview - SETTLE_SLACK_SECONDS:
        return True, preview  # at least the preview is there: what it was charged for
    if decoded > limit:
        raise fetch.FetchError(decoded_too_long_message(limit, claimed))
    if picture > limit:
        raise fetch.FetchError(picture_too_long_message(limit, claimed))
    if job.is_voice_sample:
        voices.check_sample_length(decoded)
    if abs(measured - claimed) < SETTLE_SLACK_SECONDS:
        if decoded > claimed:  # the codec's padding past the whole seconds charged: not recognised
            pipeline_wav.truncate(wav, claimed)
        return True, preview  # the codec's padding, not a lie
    result = services.job_settle(job, math.ceil(measured), stream="video" if picture > decoded else "audio")
    if not result.ok:
        services.job_fail(job.id, result.error or "Not enough minutes.", FailureReason.BALANCE)
        return False, None
    if result.preview_minutes:
        pipeline_wav.truncate(wav, result.preview_minutes * 60)
        return True, result.preview_minutes * 60
    return True, None


# Header and decoded lengths differ by a fraction of a second with some codecs (AAC's priming and
# padding); only a larger difference is settled, so that honest files get no entry of a second.
SETTLE_SLACK_SECONDS = 1.0
