"""The speaker encoder diarization uses: what any encoder offers (:class:`SpeakerEncoder`), and CAM++.

CAM++ (:mod:`.campplus`) is the service's encoder: on the channel-matched bench it alone tells
close voices apart (bench/speakers/README.md, docs/decisions/speech-and-text.md; Resemblyzer, what
it is compared with, is harness/resemblyzer_encoder.py). A voice print (``voice_print``) lies in one
encoder's space: prints are compared only with prints of the same ``name``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import numpy as np

from transcription.pipeline.speakers.encoding import campplus


class SpeakerEncoder(Protocol):
    name: str  # the space its embeddings lie in
    dim: int
    merge_similarity: float  # clusters whose centroids are this alike are one voice
    small_split_similarity: tuple[float, float]  # a split of under 12 / under 20 windows holds below these
    between_similarity: float | None  # a cluster this like a mix of two others is handed out to them

    def features(self, samples: np.ndarray) -> np.ndarray:
        """10 ms frames (frames, features) of 16 kHz samples in [-1, 1]."""
        ...

    def embed_frames(self, frames: np.ndarray, lengths: Sequence[int] | None = None) -> np.ndarray:
        """L2-normalised embeddings (B, dim) of windows of frames (B, T, features), left-aligned."""
        ...


VOICE_PRINT_MODEL = campplus.VOICE_PRINT_MODEL  # the name of the space the encoder's voice prints lie in


@lru_cache(maxsize=4)
def default_encoder(weights: str | None = None) -> SpeakerEncoder:
    """CAM++, built once per process; ``weights`` is a copy of its checkpoint (a string: the cache's
    key must be hashable, and one path one key)."""
    return campplus.CamPlusPlus(weights)
