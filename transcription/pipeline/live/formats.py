"""A live stream's audio as the client sends it -> the pipeline's 16 kHz float32 mono samples.

PCM16 little-endian at 24 kHz (what OpenAI's Realtime clients send) or 16 kHz, and G.711 (µ-law
``pcmu``, A-law ``pcma``) at 8 kHz for telephony. Decoding and resampling are libswresample's and
FFmpeg's G.711 decoders, through PyAV (which faster-whisper already needs): a stateful
:class:`Resampler` keeps the filter's memory between chunks, so chunk borders do not click.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["RATE", "AudioFormat", "BadAudio", "Resampler", "to_16k"]

RATE = 16000  # what comes out: the speech model's rate

Kind = Literal["pcm16", "pcmu", "pcma"]
_RATES: dict[str, tuple[int, ...]] = {"pcm16": (24000, 16000), "pcmu": (8000,), "pcma": (8000,)}
_G711_CODEC = {"pcmu": "pcm_mulaw", "pcma": "pcm_alaw"}


class BadAudio(Exception):
    """The audio cannot be read as the stream's format; the message says why, for the client."""


@dataclass(frozen=True)
class AudioFormat:
    """How a stream's audio bytes are to be read: ``kind`` and its sample ``rate`` (Hz)."""

    kind: Kind
    rate: int

    def __post_init__(self) -> None:
        rates = _RATES.get(self.kind)
        if rates is None:
            raise BadAudio(f"Unknown audio format {self.kind!r}: use one of pcm16, pcmu, pcma.")
        if self.rate not in rates:
            allowed = " or ".join(str(r) for r in rates)
            raise BadAudio(f"{self.kind} audio must be at {allowed} Hz, not {self.rate} Hz.")

    @property
    def bytes_per_second(self) -> int:
        return self.rate * (2 if self.kind == "pcm16" else 1)


class Resampler:
    """One stream's converter: :meth:`convert` each payload in order, :meth:`flush` at the end
    (the resampler's last few samples, held back by its filter)."""

    def __init__(self, fmt: AudioFormat) -> None:
        import av

        self.fmt = fmt
        self._decoder = None
        if fmt.kind in _G711_CODEC:
            self._decoder = av.CodecContext.create(_G711_CODEC[fmt.kind], "r")
            self._decoder.sample_rate = fmt.rate
            self._decoder.layout = "mono"
        self._resampler = None if fmt.rate == RATE else av.AudioResampler(format="flt", layout="mono", rate=RATE)

    def convert(self, payload: bytes) -> npt.NDArray[np.float32]:
        """The samples of ``payload`` (float32, 16 kHz, -1..1); :class:`BadAudio` when it cannot be read."""
        if not payload:
            raise BadAudio("The audio payload is empty.")
        if self.fmt.kind == "pcm16":
            if len(payload) % 2:
                raise BadAudio(f"PCM16 audio comes in whole 2-byte samples; this payload has {len(payload)} bytes.")
            pcm = np.frombuffer(payload, dtype="<i2")
        else:
            import av

            frames = self._decoder.decode(av.Packet(payload))  # type: ignore[union-attr]
            pcm = np.concatenate([f.to_ndarray().reshape(-1) for f in frames]) if frames else np.zeros(0, "<i2")
        if self._resampler is None:
            return (pcm.astype(np.float32) / 32768.0).astype(np.float32)
        return self._resample(pcm)

    def _resample(self, pcm: npt.NDArray[np.int16] | None) -> npt.NDArray[np.float32]:
        import av

        assert self._resampler is not None
        frame = None
        if pcm is not None:
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(pcm, dtype="<i2")[None, :], format="s16", layout="mono"
            )
            frame.sample_rate = self.fmt.rate
        out = self._resampler.resample(frame)
        if not out:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate([f.to_ndarray().reshape(-1) for f in out]).astype(np.float32, copy=False)

    def flush(self) -> npt.NDArray[np.float32]:
        """What the resampler still holds (a millisecond or so); empty when nothing is resampled."""
        if self._resampler is None:
            return np.zeros(0, dtype=np.float32)
        return self._resample(None)


def to_16k(payload: bytes, fmt: AudioFormat) -> npt.NDArray[np.float32]:
    """All of ``payload`` as 16 kHz float32 mono samples (one-shot: a stream uses :class:`Resampler`)."""
    resampler = Resampler(fmt)
    samples = resampler.convert(payload)
    return np.concatenate([samples, resampler.flush()])
