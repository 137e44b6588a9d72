"""Files handed between workers, in Django's storage (MEDIA_ROOT, or an S3-compatible bucket).

The converted audio travels from the media worker to the speech worker ("uploading"), a burned
job's source video from the media worker to the burn worker, so the three may run on different
machines. Burned videos stay under burned/<job id>/ and are handed out by signed links
(artifacts.py).
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from django.core.files import File
from django.core.files.storage import default_storage

SHARED_FOLDERS = ("audio", "sources")  # copies that only live while their job runs


def audio_name(job_id) -> str:
    return f"audio/{job_id}.wav"


def source_name(job_id) -> str:
    """A burned job's downloaded video, kept in storage until the job ends."""
    return f"sources/{job_id}.video"


def burned_name(job_id, language: str | None) -> str:
    """Storage name of a burned video; the last part is the file name a browser saves."""
    return f"burned/{job_id}/video.{language}.mp4" if language else f"burned/{job_id}/video.mp4"


def job_id_of(name: str) -> uuid.UUID | None:
    """The job a burned video's storage name belongs to (burned_name), or None for any other name."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != "burned":
        return None
    try:
        return uuid.UUID(parts[1])
    except ValueError:
        return None


def store(local: Path, name: str) -> str:
    """Copy a local file into storage under exactly `name` (replacing an older copy)."""
    default_storage.delete(name)
    with local.open("rb") as handle:
        return default_storage.save(name, File(handle))


def fetch(name: str, local: Path) -> Path:
    """Copy a stored file to local disk."""
    with default_storage.open(name, "rb") as source, local.open("wb") as target:
        shutil.copyfileobj(source, target, 1024 * 1024)
    return local


def uploaded(job_id, job_type: str) -> bool:
    """Whether the media stage handed over everything the speech and burn stages read."""
    needed = [audio_name(job_id)] + ([source_name(job_id)] if job_type == "burned" else [])
    return all(default_storage.exists(name) for name in needed)
