"""Resemblyzer's voice encoder in numpy (mel features, librosa's re-done, and the 3-layer LSTM), for
the comparison only: the service runs CAM++ (``speakers.encoding.campplus``), which alone tells close voices
apart on the channel-matched bench (docs/decisions/speech-and-text.md). Its legacy-format checkpoint
(the ``pretrained.pt`` of the ``resemblyzer`` wheel, installed without its dependencies with the
test extra) is read here with the service's unpickler, without torch.

:func:`encoder_named` gives the benches and tests either encoder by name; windows of speech are
embedded by ``speakers.encoding.embedding`` as the service embeds them.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from transcription.pipeline.speakers.clustering import BETWEEN_SIMILARITY, MERGE_SIMILARITY, SMALL_SPLIT_SIMILARITY
from transcription.pipeline.speakers.encoding.encoders import SpeakerEncoder, default_encoder
from transcription.pipeline.speakers.encoding.weights import StorageRef, TorchUnpickler, file_in_package, state_dict_of
from transcription.pipeline.speakers.speech import SAMPLE_RATE

# Resemblyzer's hparams.py
N_FFT = 400  # 25 ms window
HOP = 160  # 10 ms hop
N_MELS = 40
HIDDEN = 256
NUM_LAYERS = 3
AUDIO_NORM_TARGET_DBFS = -30.0
INT16_MAX = 2**15 - 1

FRAME_S = HOP / SAMPLE_RATE  # 0.01 s
VOICE_PRINT_MODEL = "resemblyzer-0.1.4"


DEFAULT_ENCODER = "campplus"  # the service's (``speakers.default_encoder``)
ENCODER_NAMES = (DEFAULT_ENCODER, "resemblyzer")  # ... and the one it is compared with


def encoder_named(name: str) -> SpeakerEncoder:
    """The encoder of that name, built once per process: the service's own for "campplus"."""
    if name == DEFAULT_ENCODER:
        return default_encoder()
    if name == "resemblyzer":
        return _resemblyzer()
    raise ValueError(f"unknown speaker encoder {name!r}: one of {', '.join(ENCODER_NAMES)}")


@lru_cache(maxsize=1)
def _resemblyzer() -> VoiceEncoder:
    return VoiceEncoder()


def find_encoder_weights() -> Path:
    """Resemblyzer's ``pretrained.pt`` inside the installed ``resemblyzer`` package."""
    return file_in_package("resemblyzer", "pretrained.pt", "`pip install --no-deps resemblyzer` (the test extra)")


def load_legacy_state_dict(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A torch checkpoint of the legacy format (what resemblyzer ships: magic number, protocol, system
    info, the pickle, then each storage's element count and little-endian bytes) into numpy arrays;
    only plain containers and tensors are accepted (``speakers.encoding.weights.TorchUnpickler``)."""
    checkpoint = Path(path)
    storages: dict[str, StorageRef] = {}
    with open(checkpoint, "rb") as f:
        pickle.load(f)  # magic number
        protocol = pickle.load(f)
        sys_info = pickle.load(f)
        if protocol != 1001:
            raise ValueError(f"unsupported torch legacy protocol {protocol}")
        if not sys_info.get("little_endian", True):
            raise ValueError("big-endian checkpoints are not supported")
        obj = TorchUnpickler(f, storages).load()
        keys = pickle.load(f)
        for key in keys:
            ref = storages[str(key)]
            numel = int(np.frombuffer(f.read(8), dtype="<i8")[0])
            itemsize = np.dtype(ref.dtype).itemsize
            raw = f.read(numel * itemsize)
            if len(raw) != numel * itemsize:
                raise ValueError("truncated checkpoint")
            ref.array = np.frombuffer(raw, dtype=np.dtype(ref.dtype).newbyteorder("<"))
    return state_dict_of(obj, checkpoint)


# --------------------------------------------------------------------------
# Features: librosa.feature.melspectrogram(sr=16000, n_fft=400, hop_length=160,
# n_mels=40) re-done in numpy (hann window, centred frames, power 2, slaney mel)
# --------------------------------------------------------------------------


def _hz_to_mel(f: npt.ArrayLike) -> npt.NDArray[np.float64]:
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    mel: npt.NDArray[np.float64] = np.where(
        f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels
    )
    return mel


def _mel_to_hz(m: npt.ArrayLike) -> npt.NDArray[np.float64]:
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    hz: npt.NDArray[np.float64] = np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)
    return hz


@lru_cache(maxsize=4)
def mel_filterbank(sr: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> npt.NDArray[np.float32]:
    """librosa.filters.mel(sr, n_fft, n_mels) with htk=False and norm='slaney'."""
    fmax = sr / 2.0
    fftfreqs = np.fft.rfftfreq(n_fft, d=1.0 / sr)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights: npt.NDArray[np.float64] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2 : n_mels + 2] - mel_f[:n_mels])
    weights *= enorm[:, None]
    weights.flags.writeable = False
    return weights.astype(np.float32)


@lru_cache(maxsize=1)
def _hann() -> np.ndarray:
    n = np.arange(N_FFT)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # periodic


def mel_spectrogram(wav: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Mel power spectrogram, shape (frames, 40), like resemblyzer's wav_to_mel_spectrogram.

    Frames are centred (zero padding, librosa >= 0.10's default): frame ``t`` is
    centred on sample ``t * 160`` and there are ``1 + len(wav) // 160`` of them.
    """
    samples = np.asarray(wav, dtype=np.float32)
    pad = N_FFT // 2
    y = np.pad(samples, (pad, pad))
    n_frames = 1 + (len(y) - N_FFT) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(y, N_FFT)[::HOP][:n_frames]
    spec = np.fft.rfft(frames * _hann(), axis=1)
    power = (spec.real**2 + spec.imag**2).astype(np.float32)
    mels: npt.NDArray[np.float32] = power @ mel_filterbank().T
    return mels


def normalize_volume(
    wav: npt.NDArray[np.float32], target_dbfs: float = AUDIO_NORM_TARGET_DBFS
) -> npt.NDArray[np.float32]:
    """resemblyzer.audio.normalize_volume(..., increase_only=True)."""
    rms = float(np.sqrt(np.mean((wav.astype(np.float64) * INT16_MAX) ** 2))) if len(wav) else 0.0
    if rms <= 0:
        return wav
    change = target_dbfs - 20 * np.log10(rms / INT16_MAX)
    if change < 0:
        return wav
    louder: npt.NDArray[np.float32] = (wav * (10 ** (change / 20))).astype(np.float32)
    return louder


# --------------------------------------------------------------------------
# The voice encoder in numpy
# --------------------------------------------------------------------------


class VoiceEncoder:
    """Resemblyzer's VoiceEncoder (LSTM 40->256 x3, linear 256, ReLU, L2 norm) in numpy."""

    dim = HIDDEN
    name = VOICE_PRINT_MODEL
    merge_similarity = MERGE_SIMILARITY
    small_split_similarity = SMALL_SPLIT_SIMILARITY
    between_similarity = BETWEEN_SIMILARITY  # not calibrated for Resemblyzer: off

    def __init__(self, weights_path: str | os.PathLike[str] | None = None):
        path = Path(weights_path) if weights_path else find_encoder_weights()
        if not path.is_file():
            raise FileNotFoundError(f"speaker encoder weights: {path} is not a file")
        ckpt = load_legacy_state_dict(path)
        state = ckpt.get("model_state", ckpt)
        self.layers: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # torch's gate rows are i, f, g, o; they are reordered to i, f, o, g so the three
        # sigmoid gates are one block.  sigmoid(x) = 0.5 * tanh(x / 2) + 0.5, so their rows
        # are pre-scaled by 1/2 and a single tanh call serves all four gates.
        h = HIDDEN
        order = np.r_[0 : 2 * h, 3 * h : 4 * h, 2 * h : 3 * h]
        scale = np.ones(4 * h, dtype=np.float32)
        scale[: 3 * h] = 0.5
        for layer in range(NUM_LAYERS):
            w_ih = np.asarray(state[f"lstm.weight_ih_l{layer}"], dtype=np.float32)[order]
            w_hh = np.asarray(state[f"lstm.weight_hh_l{layer}"], dtype=np.float32)[order]
            bias = (
                np.asarray(state[f"lstm.bias_ih_l{layer}"], dtype=np.float32)
                + np.asarray(state[f"lstm.bias_hh_l{layer}"], dtype=np.float32)
            )[order]
            self.layers.append(
                (
                    np.ascontiguousarray((w_ih * scale[:, None]).T),
                    np.ascontiguousarray((w_hh * scale[:, None]).T),
                    bias * scale,
                )
            )
        self.linear_w = np.ascontiguousarray(np.asarray(state["linear.weight"], dtype=np.float32).T)
        self.linear_b = np.asarray(state["linear.bias"], dtype=np.float32)

    def features(self, samples: np.ndarray) -> np.ndarray:
        """The mel frames the LSTM reads, of a stretch's samples brought up to -30 dBFS."""
        return mel_spectrogram(normalize_volume(samples))

    def embed_frames(self, frames: np.ndarray, lengths: Sequence[int] | None = None) -> np.ndarray:
        return self.embed_mels(frames, lengths)

    def embed_mels(self, mels: np.ndarray, lengths: Sequence[int] | None = None) -> np.ndarray:
        """Embed a batch of mel windows, shape (B, T, 40) -> (B, 256), L2-normalised.

        Windows shorter than T are given with ``lengths`` and must be left-aligned
        in ``mels`` (frames ``[0, length)``); the result equals running the LSTM
        on each window alone.
        """
        mels = np.asarray(mels, dtype=np.float32)
        b, t_max, _ = mels.shape
        if b == 0:
            return np.zeros((0, HIDDEN), dtype=np.float32)
        mask = None
        if lengths is not None:
            window_lengths = np.asarray(lengths, dtype=np.int64)
            if np.any(window_lengths < t_max):
                # right-align the windows so that they all end at t_max; steps before a
                # window's start are masked (state kept at zero)
                shifted = np.zeros_like(mels)
                for i, n in enumerate(window_lengths):
                    shifted[i, t_max - n :] = mels[i, :n]
                mels = shifted
                starts = t_max - window_lengths
                mask = (np.arange(t_max)[None, :] >= starts[:, None]).astype(np.float32)
        x = np.ascontiguousarray(mels.transpose(1, 0, 2))  # time-major (T, B, F)
        if mask is not None:
            mask = np.ascontiguousarray(mask.T[:, :, None])  # (T, B, 1)
        hs = HIDDEN
        h = np.zeros((b, hs), dtype=np.float32)
        for li, (w_ih, w_hh, bias) in enumerate(self.layers):
            pre = (x.reshape(t_max * b, -1) @ w_ih).reshape(t_max, b, 4 * hs)
            pre += bias
            h = np.zeros((b, hs), dtype=np.float32)
            c = np.zeros((b, hs), dtype=np.float32)
            last = li == NUM_LAYERS - 1
            out = None if last else np.empty((t_max, b, hs), dtype=np.float32)
            gates = np.empty((b, 4 * hs), dtype=np.float32)
            tmp = np.empty((b, hs), dtype=np.float32)
            sig = gates[:, : 3 * hs]
            i_g, f_g, o_g, g_g = (gates[:, k * hs : (k + 1) * hs] for k in range(4))
            for t in range(t_max):
                np.matmul(h, w_hh, out=gates)
                gates += pre[t]
                np.tanh(gates, out=gates)
                sig += 1.0
                sig *= 0.5  # i, f, o are now sigmoids; g is tanh
                c *= f_g
                np.multiply(i_g, g_g, out=tmp)
                c += tmp
                np.tanh(c, out=h)
                h *= o_g
                if mask is not None:
                    h *= mask[t]
                    c *= mask[t]
                if out is not None:
                    out[t] = h
            if out is not None:  # the last layer keeps only h
                x = out
        emb = np.maximum(h @ self.linear_w + self.linear_b, 0.0)
        norm = np.linalg.norm(emb, axis=1, keepdims=True)
        normalised: npt.NDArray[np.float32] = emb / np.maximum(norm, 1e-12)
        return normalised

    def embed_utterance(self, wav: np.ndarray) -> np.ndarray:
        """One embedding for a whole utterance (mean of 1.6 s partials, like resemblyzer)."""
        wav = normalize_volume(np.asarray(wav, dtype=np.float32))
        mel = mel_spectrogram(wav)
        n = len(mel)
        step = 160
        if n <= step:
            whole: npt.NDArray[np.float32] = self.embed_mels(mel[None])[0]
            return whole
        starts = list(range(0, n - step + 1, step // 2))
        if starts[-1] + step < n:
            starts.append(n - step)
        e = self.embed_mels(np.stack([mel[s : s + step] for s in starts])).mean(axis=0)
        mean: npt.NDArray[np.float32] = e / np.linalg.norm(e)
        return mean
