"""The operator's options for the speaker models, handed whole to the speakers' entry points
(:func:`.diarize`, :class:`.DiarizationApart`, :func:`.voices.voice_sample`,
:func:`.voices.recognise_voices`). The service builds one from its settings
(transcription.stages.pipeline_options)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class SpeakerOptions:
    """``weights``: a copy of the encoder's checkpoint (None: the installed one); ``threads``: the
    models' threads (None: the CPU count, at most 16); ``graphs``: a folder where
    :class:`.DiarizationApart`'s child keeps the models' ONNX graphs, so that only the first child
    builds them (None: built in memory each time; only the child reads it)."""

    weights: str | os.PathLike[str] | None = None
    threads: int | None = None
    graphs: str | os.PathLike[str] | None = None


NO_OPTIONS = SpeakerOptions()
