"""Silero VAD (the v6 model inside faster-whisper) run as the audio comes: one speech probability
per 512 samples (32 ms), the LSTM state and the 64-sample context carried from call to call, so a
stream fed in any chunks gets the numbers the whole recording would (as
``transcription.pipeline.speakers.speech.speech_probabilities`` reads a file)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["FRAME", "StreamingVad"]

FRAME = 512  # samples per probability: 32 ms at 16 kHz
_CONTEXT = 64


class StreamingVad:
    """``probabilities(samples)`` -> one probability per whole 512-sample frame completed so far
    (samples left over wait for the next call)."""

    def __init__(self) -> None:
        from faster_whisper.vad import get_vad_model

        model = get_vad_model()
        self._session = model.session
        if [i.name for i in self._session.get_inputs()] != ["input", "h", "c"]:  # pragma: no cover
            raise RuntimeError("faster-whisper's Silero VAD has another interface than this code reads")
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(_CONTEXT, dtype=np.float32)
        self._rest = np.zeros(0, dtype=np.float32)

    def probabilities(self, samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        audio = np.concatenate([self._rest, np.asarray(samples, dtype=np.float32)])
        whole = len(audio) // FRAME * FRAME
        self._rest = audio[whole:]
        if not whole:
            return np.zeros(0, dtype=np.float32)
        frames = audio[:whole].reshape(-1, FRAME)
        before = np.concatenate([self._context[None], frames[:-1, -_CONTEXT:]])
        self._context = frames[-1, -_CONTEXT:].copy()
        out, self._h, self._c = self._session.run(
            None, {"input": np.concatenate([before, frames], axis=1), "h": self._h, "c": self._c}
        )
        return np.asarray(out, dtype=np.float32).reshape(-1)
