"""Files handed between workers, in Django's storage (MEDIA_ROOT, or an S3-compatible bucket).

The converted audio travels from the media worker to the speech worker ("uploading"), a burned
job's source video from the media worker to the burn worker, so the three may run on different
machines. Burned videos stay under burned/<job id>/ and are handed out by signed links
(artifacts.py); the audio, once recognised, stays under playback/ for the job page's player.
"""

from __future__ import annotations

import importlib
import os
import shutil
import uuid
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage

from config import shared_cache

SHARED_FOLDERS = ("audio", "sources")  # copies that only live while their job runs

STORE_RETRY_AFTER_SECONDS = 30
# a request that needed the store while it was down (a 503 with Retry-After, on every door)
STORE_BUSY = (
    f"The file store is unreachable for a moment; nothing was lost. Try again in {STORE_RETRY_AFTER_SECONDS} seconds."
)
STORE_DOWN = (
    "The file store could not be reached, so this job could not go on; its minutes have been "
    "refunded. Please try again in a few minutes."
)


@lru_cache(maxsize=1)
def store_errors() -> tuple[type[Exception], ...]:
    """What the storage raises when it is down or refuses (a bucket unreachable, timing out,
    answering 5xx or AccessDenied): with S3_BUCKET, botocore's errors (django-storages' S3 backend
    is made of botocore; both come with the [s3] extra and are loaded by name, as the settings name
    the backend). With the filesystem, none: an OSError there is this machine's own disk."""
    if not settings.S3_BUCKET:
        return ()
    exceptions = importlib.import_module("botocore.exceptions")
    return (exceptions.BotoCoreError, exceptions.ClientError)


# where a failure of the store was met, and which way bytes went (/metrics: monitoring.metrics)
ERROR_PLACES = ("stage", "door", "link")
DIRECTIONS = ("written", "read")


def count_error(where: str) -> None:
    shared_cache.add_counts({f"store:errors:{where}": 1})


def count_bytes(direction: str, size: int) -> None:
    shared_cache.add_counts({f"store:bytes:{direction}": size})


def audio_name(job_id) -> str:
    return f"audio/{job_id}.wav"


def source_name(job_id) -> str:
    """A burned job's downloaded video, kept in storage until the job ends."""
    return f"sources/{job_id}.video"


def playback_name(job_id) -> str:
    """The audio the speech stage read, kept after the job for the website's transcript editor to
    play (retention.py deletes it with the job's other files)."""
    return f"playback/{job_id}.wav"


def burned_name(job_id, language: str | None) -> str:
    """Storage name of a burned video; the last part is the file name a browser saves."""
    return f"burned/{job_id}/video.{language}.mp4" if language else f"burned/{job_id}/video.mp4"


def upload_name(upload_id) -> str:
    """A whole upload in storage (transcription.api.doors.uploads), read by the media stage."""
    return f"uploads/{upload_id}"


def incoming_path(upload_id) -> Path:
    """Where an upload's bytes arrive until it is whole: a local file of the web machine."""
    return Path(settings.UPLOAD_INCOMING_DIR) / f"{upload_id}.part"


def _local_path(name: str) -> Path | None:
    """The stored file's path on this machine, or None when storage is remote (S3): Django's
    Storage.path raises NotImplementedError for storages without a local filesystem."""
    try:
        return Path(default_storage.path(name))
    except NotImplementedError:
        return None


def store_moving(local: Path, name: str) -> str:
    """Put a local file into storage under `name`, removing the local one: a rename when storage
    is a folder on the same filesystem (a 2 GB upload is not copied again), a copy otherwise."""
    target = _local_path(name)
    if target is None:
        stored = store(local, name)
        local.unlink(missing_ok=True)
        return stored
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(local, target)
    except OSError:  # another filesystem
        shutil.move(local, target)
    return name


def local_copy(name: str, local: Path) -> Path:
    """A path on this machine to read the stored file `name` from: the file itself when storage is
    a local folder, else a copy fetched to `local`."""
    path = _local_path(name)
    if path is None:
        return fetch(name, local)
    if not path.exists():
        raise FileNotFoundError(name)
    return path


def job_id_of(name: str) -> uuid.UUID | None:
    """The job a burned video's storage name belongs to (burned_name), or None for any other name."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != "burned":
        return None
    try:
        return uuid.UUID(parts[1])
    except ValueError:
        return None


def job_names(job_id, videos: list[str | None]) -> list[str]:
    """Every name a job's files may have in storage: the copies between workers, the kept source
    and player audio, and its burned `videos` (the job's and its translations' names)."""
    kept = [audio_name(job_id), source_name(job_id), playback_name(job_id)]
    return kept + sorted({name for name in videos if name})


def stored_size(name: str) -> int:
    """Bytes of the stored file `name`; 0 when there is none."""
    try:
        return default_storage.size(name) if default_storage.exists(name) else 0
    except FileNotFoundError:  # deleted between the two calls
        return 0


def store(local: Path, name: str) -> str:
    """Copy a local file into storage under exactly `name` (replacing an older copy)."""
    default_storage.delete(name)
    with local.open("rb") as handle:
        stored = default_storage.save(name, File(handle))
    count_bytes("written", local.stat().st_size)
    return stored


def fetch(name: str, local: Path) -> Path:
    """Copy a stored file to local disk."""
    with default_storage.open(name, "rb") as source, local.open("wb") as target:
        shutil.copyfileobj(source, target, 1024 * 1024)
    count_bytes("read", local.stat().st_size)
    return local


def uploaded(job_id, job_type: str) -> bool:
    """Whether the media stage handed over everything the speech and burn stages read."""
    needed = [audio_name(job_id)] + ([source_name(job_id)] if job_type == "burned" else [])
    return all(default_storage.exists(name) for name in needed)
