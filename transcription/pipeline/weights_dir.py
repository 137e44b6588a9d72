"""Where the speaker models' weight files are: the setting SPEAKER_WEIGHTS_DIR handed down (by
transcription.apps at start, by apart.py to its diarization child, by the transcription-models
command), else DEFAULT_WEIGHTS_DIR. Apart from speakers.encoding.weight_files, and importing
nothing of the speaker models, so that the web process, which hands the setting down at start,
never loads numpy or the models (tests/test_web_processes.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Where `transcription-models fetch` puts the files when SPEAKER_WEIGHTS_DIR is not set.
DEFAULT_WEIGHTS_DIR = Path(sys.prefix) / "share" / "video-transcription" / "speaker-weights"
_handed_down: Path | None = None


def use_weights_dir(directory: str | os.PathLike[str] | None) -> None:
    """The weights directory from now on in this process (the setting SPEAKER_WEIGHTS_DIR, handed
    down); None or empty: DEFAULT_WEIGHTS_DIR."""
    global _handed_down
    _handed_down = Path(directory) if directory else None


def weights_dir() -> Path:
    """The directory handed down by use_weights_dir, else DEFAULT_WEIGHTS_DIR."""
    return _handed_down or DEFAULT_WEIGHTS_DIR
