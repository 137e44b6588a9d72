"""Speaker diarization on CPU, without torch.

Who spoke when, for a 16 kHz mono s16le WAV file of any length:

1. Silero VAD (the ONNX model that ships inside ``faster-whisper``) finds the
   speech regions; the file is read block by block with :mod:`wave`, never whole.
2. Resemblyzer's pretrained voice encoder (the ``pretrained.pt`` inside the
   ``resemblyzer`` wheel: a 3-layer LSTM over 40-channel mel power frames) embeds
   1.5 s windows of speech every 0.75 s.  The torch checkpoint is read with a
   small pickle loader into numpy arrays and the LSTM runs in numpy, so neither
   torch nor librosa is needed (``resemblyzer`` itself is never imported).
3. The number of speakers is estimated from the eigengap of a refined cosine
   affinity (spectral clustering); the windows are clustered, clusters whose
   centroids are too alike are merged (one voice gives one speaker), and a
   Viterbi pass smooths the labels, with speaker changes cheap at pauses and
   dear inside continuous speech.
4. Adjacent windows with the same label become :class:`SpeakerTurn`s; speakers are
   numbered 1.. in order of first appearance.

Nothing here knows about Django, and nothing is downloaded at run time.

Needs: numpy; faster-whisper and onnxruntime (the VAD model); the ``resemblyzer``
wheel installed WITHOUT its dependencies (``pip install --no-deps resemblyzer==0.1.4``)
only for its ``pretrained.pt`` (or ``$TRANSCRIPTION_SPEAKER_WEIGHTS`` pointing at a copy);
threadpoolctl (optional: keeps BLAS single-threaded, which is several times faster
for these small matrices on a busy machine).  Settings: ``$TRANSCRIPTION_SPEAKER_THREADS``
(encoder threads, default the CPU count, at most 4).
"""
from __future__ import annotations

import importlib.util
import os
import pickle
import wave
import zipfile
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from .types import Segment, SpeakerTurn, Word

__all__ = [
    "SAMPLE_RATE",
    "VoiceEncoder",
    "assign_speakers",
    "cluster_embeddings",
    "detect_speech",
    "diarize",
    "find_encoder_weights",
    "load_torch_state_dict",
    "mel_filterbank",
    "mel_spectrogram",
]

SAMPLE_RATE = 16000

# Resemblyzer's hparams.py
N_FFT = 400  # 25 ms window
HOP = 160  # 10 ms hop
N_MELS = 40
HIDDEN = 256
NUM_LAYERS = 3
AUDIO_NORM_TARGET_DBFS = -30.0
INT16_MAX = 2**15 - 1

FRAME_S = HOP / SAMPLE_RATE  # 0.01 s

# Diarization settings
WINDOW_FRAMES = 150  # 1.5 s
HOP_FRAMES = 75  # 0.75 s
MIN_WINDOW_FRAMES = 40  # speech shorter than 0.4 s is not embedded on its own
MAX_REGION_S = 30.0  # long speech regions are processed in pieces this long
ENCODER_BATCH = 64  # windows per LSTM batch (small batches stay in cache)

WEIGHTS_ENV = "TRANSCRIPTION_SPEAKER_WEIGHTS"
THREADS_ENV = "TRANSCRIPTION_SPEAKER_THREADS"  # encoder threads (default: CPU count, at most 4)


# --------------------------------------------------------------------------
# Loading the torch checkpoint without torch
# --------------------------------------------------------------------------

_STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "BFloat16Storage": None,  # not supported by numpy
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class _StorageRef:
    __slots__ = ("key", "dtype", "numel", "array")

    def __init__(self, key: str, dtype: type, numel: int | None):
        self.key = key
        self.dtype = dtype
        self.numel = numel
        self.array: np.ndarray | None = None


class _LazyTensor:
    """A tensor whose storage bytes are read after the pickle."""

    __slots__ = ("storage", "offset", "shape", "stride")

    def __init__(self, storage: _StorageRef, offset: int, shape: tuple, stride: tuple):
        self.storage = storage
        self.offset = offset
        self.shape = tuple(shape)
        self.stride = tuple(stride)

    def materialize(self) -> np.ndarray:
        base = self.storage.array
        if base is None:
            raise ValueError(f"storage {self.storage.key} was never read")
        itemsize = base.dtype.itemsize
        if not self.shape:
            return np.array(base[self.offset])
        view = np.lib.stride_tricks.as_strided(
            base[self.offset :],
            shape=self.shape,
            strides=tuple(s * itemsize for s in self.stride),
        )
        return np.ascontiguousarray(view)


def _rebuild_tensor(storage, storage_offset, size, stride, *_ignored):
    return _LazyTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data, *_ignored):
    return data


class _StorageType:
    def __init__(self, name: str):
        self.name = name
        dtype = _STORAGE_DTYPES.get(name)
        if dtype is None:
            raise pickle.UnpicklingError(f"unsupported torch storage type {name}")
        self.dtype = dtype


class _TorchUnpickler(pickle.Unpickler):
    """Unpickles a torch checkpoint into _LazyTensors; allows nothing else."""

    _ALLOWED = {
        ("collections", "OrderedDict"): OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
    }

    def __init__(self, file, storages: dict[str, _StorageRef]):
        super().__init__(file)
        self.storages = storages

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")

    def persistent_load(self, pid):
        # ('storage', storage_type, key, location, numel[, view_metadata])
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        storage_type, key = pid[1], str(pid[2])
        numel = pid[4] if len(pid) > 4 else None
        if key not in self.storages:
            self.storages[key] = _StorageRef(key, storage_type.dtype, numel)
        return self.storages[key]


def _materialize(obj):
    if isinstance(obj, _LazyTensor):
        return obj.materialize()
    if isinstance(obj, dict):
        return type(obj)((k, _materialize(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_materialize(v) for v in obj)
    return obj


def load_torch_state_dict(path: str | os.PathLike) -> dict:
    """Read a torch checkpoint (legacy or zip format) into numpy arrays, without torch.

    Only plain containers and tensors are accepted; any other class in the
    pickle raises :class:`pickle.UnpicklingError`.
    """
    path = Path(path)
    storages: dict[str, _StorageRef] = {}
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            pkl = next(n for n in names if n.endswith("data.pkl"))
            prefix = pkl[: -len("data.pkl")]
            with zf.open(pkl) as f:
                obj = _TorchUnpickler(f, storages).load()
            for key, ref in storages.items():
                raw = zf.read(f"{prefix}data/{key}")
                ref.array = np.frombuffer(raw, dtype=np.dtype(ref.dtype).newbyteorder("<"))
        return _materialize(obj)

    with open(path, "rb") as f:
        pickle.load(f)  # magic number
        protocol = pickle.load(f)
        sys_info = pickle.load(f)
        if protocol != 1001:
            raise ValueError(f"unsupported torch legacy protocol {protocol}")
        if not sys_info.get("little_endian", True):
            raise ValueError("big-endian checkpoints are not supported")
        obj = _TorchUnpickler(f, storages).load()
        keys = pickle.load(f)
        for key in keys:
            ref = storages[str(key)]
            numel = int(np.frombuffer(f.read(8), dtype="<i8")[0])
            itemsize = np.dtype(ref.dtype).itemsize
            raw = f.read(numel * itemsize)
            if len(raw) != numel * itemsize:
                raise ValueError("truncated checkpoint")
            ref.array = np.frombuffer(raw, dtype=np.dtype(ref.dtype).newbyteorder("<"))
    return _materialize(obj)


def find_encoder_weights() -> Path:
    """Where Resemblyzer's ``pretrained.pt`` is.

    ``$TRANSCRIPTION_SPEAKER_WEIGHTS`` if set, otherwise the file inside the installed
    ``resemblyzer`` package (``pip install --no-deps resemblyzer``).  The package is
    located with :func:`importlib.util.find_spec`, which does not import it (importing
    it would import torch).
    """
    env = os.environ.get(WEIGHTS_ENV)
    if env:
        p = Path(env)
        if not p.is_file():
            raise FileNotFoundError(f"{WEIGHTS_ENV}={env} is not a file")
        return p
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "speaker encoder weights not found: `pip install --no-deps resemblyzer` "
            f"or set {WEIGHTS_ENV} to a pretrained.pt"
        )
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "pretrained.pt"
        if p.is_file():
            return p
    raise FileNotFoundError("the installed resemblyzer package has no pretrained.pt")


# --------------------------------------------------------------------------
# Features: librosa.feature.melspectrogram(sr=16000, n_fft=400, hop_length=160,
# n_mels=40) re-done in numpy (hann window, centred frames, power 2, slaney mel)
# --------------------------------------------------------------------------


def _hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def _mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)


@lru_cache(maxsize=4)
def mel_filterbank(sr: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """librosa.filters.mel(sr, n_fft, n_mels) with htk=False and norm='slaney'."""
    fmax = sr / 2.0
    fftfreqs = np.fft.rfftfreq(n_fft, d=1.0 / sr)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2 : n_mels + 2] - mel_f[:n_mels])
    weights *= enorm[:, None]
    weights.flags.writeable = False
    return weights.astype(np.float32)


@lru_cache(maxsize=1)
def _hann() -> np.ndarray:
    n = np.arange(N_FFT)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # periodic


def mel_spectrogram(wav: np.ndarray) -> np.ndarray:
    """Mel power spectrogram, shape (frames, 40), like resemblyzer's wav_to_mel_spectrogram.

    Frames are centred (zero padding, librosa >= 0.10's default): frame ``t`` is
    centred on sample ``t * 160`` and there are ``1 + len(wav) // 160`` of them.
    """
    wav = np.asarray(wav, dtype=np.float32)
    pad = N_FFT // 2
    y = np.pad(wav, (pad, pad))
    n_frames = 1 + (len(y) - N_FFT) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(y, N_FFT)[::HOP][:n_frames]
    spec = np.fft.rfft(frames * _hann(), axis=1)
    power = (spec.real**2 + spec.imag**2).astype(np.float32)
    return power @ mel_filterbank().T


def _normalize_volume(wav: np.ndarray, target_dbfs: float = AUDIO_NORM_TARGET_DBFS) -> np.ndarray:
    """resemblyzer.audio.normalize_volume(..., increase_only=True)."""
    rms = float(np.sqrt(np.mean((wav.astype(np.float64) * INT16_MAX) ** 2))) if len(wav) else 0.0
    if rms <= 0:
        return wav
    change = target_dbfs - 20 * np.log10(rms / INT16_MAX)
    if change < 0:
        return wav
    return (wav * (10 ** (change / 20))).astype(np.float32)


# --------------------------------------------------------------------------
# The voice encoder in numpy
# --------------------------------------------------------------------------


class VoiceEncoder:
    """Resemblyzer's VoiceEncoder (LSTM 40->256 x3, linear 256, ReLU, L2 norm) in numpy."""

    def __init__(self, weights_path: str | os.PathLike | None = None):
        path = Path(weights_path) if weights_path else find_encoder_weights()
        ckpt = load_torch_state_dict(path)
        state = ckpt.get("model_state", ckpt) if isinstance(ckpt, dict) else ckpt
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
            lengths = np.asarray(lengths, dtype=np.int64)
            if np.any(lengths < t_max):
                # right-align the windows so that they all end at t_max; steps before a
                # window's start are masked (state kept at zero)
                shifted = np.zeros_like(mels)
                for i, n in enumerate(lengths):
                    shifted[i, t_max - n :] = mels[i, :n]
                mels = shifted
                starts = t_max - lengths
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
            x = out
        emb = np.maximum(h @ self.linear_w + self.linear_b, 0.0)
        norm = np.linalg.norm(emb, axis=1, keepdims=True)
        return emb / np.maximum(norm, 1e-12)

    def embed_utterance(self, wav: np.ndarray) -> np.ndarray:
        """One embedding for a whole utterance (mean of 1.6 s partials, like resemblyzer)."""
        wav = _normalize_volume(np.asarray(wav, dtype=np.float32))
        mel = mel_spectrogram(wav)
        n = len(mel)
        step = 160
        if n <= step:
            return self.embed_mels(mel[None])[0]
        starts = list(range(0, n - step + 1, step // 2))
        if starts[-1] + step < n:
            starts.append(n - step)
        e = self.embed_mels(np.stack([mel[s : s + step] for s in starts])).mean(axis=0)
        return e / np.linalg.norm(e)


@lru_cache(maxsize=2)
def _default_encoder(weights: str | None = None) -> VoiceEncoder:
    return VoiceEncoder(weights)


# --------------------------------------------------------------------------
# Reading the WAV and finding speech
# --------------------------------------------------------------------------


def _open_wav(path: str | os.PathLike) -> wave.Wave_read:
    w = wave.open(str(path), "rb")
    if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SAMPLE_RATE:
        ch, sw, sr = w.getnchannels(), w.getsampwidth(), w.getframerate()
        w.close()
        raise ValueError(f"{path}: expected 16 kHz mono 16-bit WAV, got {sr} Hz, {ch} ch, {8 * sw} bit")
    return w


def _read(w: wave.Wave_read, n: int) -> np.ndarray:
    raw = w.readframes(n)
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


def _read_blocks(path, block_samples: int) -> Iterator[np.ndarray]:
    w = _open_wav(path)
    try:
        while True:
            block = _read(w, block_samples)
            if not len(block):
                return
            yield block
    finally:
        w.close()


def _read_span(w: wave.Wave_read, start: int, end: int) -> np.ndarray:
    start = max(0, start)
    end = min(end, w.getnframes())
    if end <= start:
        return np.zeros(0, dtype=np.float32)
    w.setpos(start)
    return _read(w, end - start)


VAD_WINDOW = 512  # silero: one probability per 32 ms
VAD_CONTEXT = 64  # samples of the previous window the model sees


def _speech_probabilities(path, block_seconds: float = 30.0) -> np.ndarray:
    """Silero speech probability for every 512 samples (32 ms), streamed in blocks.

    Same numbers as faster-whisper's ``SileroVADModel(audio)`` on the whole file: the
    LSTM state and the 64-sample context are carried from block to block.
    """
    from faster_whisper.vad import get_vad_model

    model = get_vad_model()
    session = getattr(model, "session", None)
    stateful = session is not None and [i.name for i in session.get_inputs()] == ["input", "h", "c"]
    block = max(1, int(block_seconds * SAMPLE_RATE) // VAD_WINDOW) * VAD_WINDOW
    h = np.zeros((1, 1, 128), dtype=np.float32)
    c = np.zeros((1, 1, 128), dtype=np.float32)
    context = np.zeros(VAD_CONTEXT, dtype=np.float32)
    probs = []
    for audio in _read_blocks(path, block):
        rem = len(audio) % VAD_WINDOW
        if rem:
            audio = np.pad(audio, (0, VAD_WINDOW - rem))
        if not stateful:  # pragma: no cover - another faster-whisper VAD interface
            probs.append(np.asarray(model(audio), dtype=np.float32).reshape(-1))
            continue
        frames = audio.reshape(-1, VAD_WINDOW)
        before = np.concatenate([context[None], frames[:-1, -VAD_CONTEXT:]])
        context = frames[-1, -VAD_CONTEXT:].copy()
        out, h, c = session.run(None, {"input": np.concatenate([before, frames], axis=1), "h": h, "c": c})
        probs.append(np.asarray(out, dtype=np.float32).reshape(-1))
    return np.concatenate(probs) if probs else np.zeros(0, dtype=np.float32)


def detect_speech(
    wav_path: str | os.PathLike,
    *,
    threshold: float = 0.5,
    neg_threshold: float | None = None,
    min_silence_s: float = 0.2,
    min_speech_s: float = 0.25,
    pad_s: float = 0.05,
) -> list[tuple[float, float]]:
    """Speech regions ``(start, end)`` in seconds, from Silero VAD, streamed."""
    probs = _speech_probabilities(wav_path)
    return _regions_from_probs(
        probs,
        duration=_wav_duration(wav_path),
        threshold=threshold,
        neg_threshold=neg_threshold,
        min_silence_s=min_silence_s,
        min_speech_s=min_speech_s,
        pad_s=pad_s,
    )


def _wav_duration(path) -> float:
    w = _open_wav(path)
    try:
        return w.getnframes() / SAMPLE_RATE
    finally:
        w.close()


def _regions_from_probs(
    probs: np.ndarray,
    *,
    duration: float,
    threshold: float,
    neg_threshold: float | None,
    min_silence_s: float,
    min_speech_s: float,
    pad_s: float,
) -> list[tuple[float, float]]:
    if neg_threshold is None:
        neg_threshold = max(threshold - 0.15, 0.01)
    step = VAD_WINDOW / SAMPLE_RATE
    # hysteresis: speech starts at p >= threshold, goes on while p >= neg_threshold
    regions: list[list[float]] = []
    active = False
    start = 0
    for i, p in enumerate(probs):
        if not active and p >= threshold:
            active, start = True, i
        elif active and p < neg_threshold:
            active = False
            regions.append([start * step, i * step])
    if active:
        regions.append([start * step, len(probs) * step])
    # close short silences, drop short speech, pad
    merged: list[list[float]] = []
    for r in regions:
        if merged and r[0] - merged[-1][1] < min_silence_s:
            merged[-1][1] = r[1]
        else:
            merged.append(r)
    out = []
    for s, e in merged:
        if e - s < min_speech_s:
            continue
        s, e = max(0.0, s - pad_s), min(duration, e + pad_s)
        if out and s < out[-1][1]:
            mid = (s + out[-1][1]) / 2
            out[-1] = (out[-1][0], mid)
            s = mid
        if e > s:
            out.append((s, e))
    return out


# --------------------------------------------------------------------------
# Windows and embeddings
# --------------------------------------------------------------------------


@dataclass
class _Window:
    start: float  # the audio the embedding saw
    end: float
    own_start: float  # the part of the timeline this window's label covers
    own_end: float
    piece: int  # index of the continuous speech piece it lies in


@dataclass
class _Piece:
    start: float
    end: float
    after_pause: bool  # False when it continues the previous piece without a pause


def _split_regions(regions: Sequence[tuple[float, float]]) -> list[_Piece]:
    """Regions cut into pieces of at most MAX_REGION_S, so no read is large."""
    pieces = []
    for s, e in regions:
        n = max(1, int(np.ceil((e - s) / MAX_REGION_S)))
        edges = np.linspace(s, e, n + 1)
        for k in range(n):
            pieces.append(_Piece(float(edges[k]), float(edges[k + 1]), k == 0))
    return pieces


def _piece_windows(n_frames: int) -> list[tuple[int, int]]:
    """Window frame ranges [a, b) inside a piece of n_frames frames."""
    if n_frames <= WINDOW_FRAMES:
        return [(0, n_frames)]
    starts = list(range(0, n_frames - WINDOW_FRAMES + 1, HOP_FRAMES))
    if starts[-1] + WINDOW_FRAMES < n_frames:
        starts.append(n_frames - WINDOW_FRAMES)
    return [(a, a + WINDOW_FRAMES) for a in starts]


def _threads() -> int:
    env = os.environ.get(THREADS_ENV)
    if env:
        return max(1, int(env))
    return max(1, min(4, os.cpu_count() or 1))


@contextmanager
def _single_threaded_blas():
    """The LSTM's matrices are small: BLAS threads only spin; parallelism comes from
    running batches in Python threads instead (numpy releases the GIL)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - works, only slower on many-core BLAS
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _embed_regions(
    wav_path, regions: Sequence[tuple[float, float]], encoder: VoiceEncoder, threads: int | None = None
) -> tuple[np.ndarray, list[_Window], list[_Piece]]:
    """Embed windows of the speech regions; returns (embeddings, windows, pieces)."""
    pieces = _split_regions(regions)
    windows: list[_Window] = []
    batch: list[np.ndarray] = []
    lengths: list[int] = []
    results: list[Future] = []
    threads = threads or _threads()

    def run(mels: list[np.ndarray], lens: list[int]) -> np.ndarray:
        arr = np.zeros((len(mels), max(lens), N_MELS), dtype=np.float32)
        for i, m in enumerate(mels):
            arr[i, : len(m)] = m
        return encoder.embed_mels(arr, lens)

    with _single_threaded_blas(), ThreadPoolExecutor(max_workers=threads) as pool:

        def flush():
            if batch:
                results.append(pool.submit(run, list(batch), list(lengths)))
                batch.clear()
                lengths.clear()
            # keep memory bounded: wait while too many batches are queued
            pending = [f for f in results if not f.done()]
            if len(pending) > 2 * threads:
                wait(pending[: len(pending) - 2 * threads])

        w = _open_wav(wav_path)
        try:
            for pi, piece in enumerate(pieces):
                s0 = int(round(piece.start * SAMPLE_RATE))
                s1 = int(round(piece.end * SAMPLE_RATE))
                audio = _normalize_volume(_read_span(w, s0, s1))
                n = len(audio) // HOP  # frames whose centre lies inside the piece
                if n < MIN_WINDOW_FRAMES:
                    continue
                mel = mel_spectrogram(audio)
                spans = _piece_windows(n)
                centres = [(a + b) / 2 for a, b in spans]
                for k, (a, b) in enumerate(spans):
                    own_start = piece.start if k == 0 else piece.start + (centres[k - 1] + centres[k]) / 2 * FRAME_S
                    own_end = piece.end if k == len(spans) - 1 else piece.start + (centres[k] + centres[k + 1]) / 2 * FRAME_S
                    windows.append(
                        _Window(piece.start + a * FRAME_S, piece.start + b * FRAME_S, own_start, own_end, pi)
                    )
                    batch.append(mel[a:b])
                    lengths.append(b - a)
                    if len(batch) >= ENCODER_BATCH:
                        flush()
            flush()
        finally:
            w.close()
        embeds = [f.result() for f in results]
    emb = np.concatenate(embeds) if embeds else np.zeros((0, HIDDEN), dtype=np.float32)
    return emb, windows, pieces


# --------------------------------------------------------------------------
# Clustering
# --------------------------------------------------------------------------

MAX_CLUSTER_WINDOWS = 1000  # the affinity matrix is at most this many rows
MERGE_SIMILARITY = 0.86  # clusters whose centroids are this alike are one voice
MIN_CLUSTER_SHARE = 0.02  # smaller clusters (share of windows) are folded into others
MIN_NEIGHBOURS = 10  # the affinity graph links each window to at least this many others
MIN_WINDOWS_TO_SPLIT = 6  # less speech than this (about 5 s) is one speaker
SMALL_N = 20  # below this many windows (about 15 s of speech): 2-means test, not spectral
SMALL_SPLIT_SIMILARITY = (0.68, 0.72)  # centroid similarity below which a small split holds (n < 12, n >= 12)


def _kmeans(x: np.ndarray, k: int, *, n_init: int = 10, iters: int = 100, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = len(x)
    best_labels, best_inertia = None, np.inf
    for _ in range(n_init):
        # k-means++
        centres = [x[rng.integers(n)]]
        d2 = ((x - centres[0]) ** 2).sum(1)
        for _j in range(1, k):
            p = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1.0 / n)
            centres.append(x[rng.choice(n, p=p)])
            d2 = np.minimum(d2, ((x - centres[-1]) ** 2).sum(1))
        c = np.array(centres)
        labels = np.zeros(n, dtype=np.int64)
        for it in range(iters):
            dist = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
            new = dist.argmin(1)
            if it and np.array_equal(new, labels):
                break
            labels = new
            for j in range(k):
                members = x[labels == j]
                c[j] = members.mean(0) if len(members) else x[rng.integers(n)]
        inertia = ((x - c[labels]) ** 2).sum()
        if inertia < best_inertia:
            best_inertia, best_labels = inertia, labels.copy()
    return best_labels


def _refined_affinity(emb: np.ndarray, p_keep: float) -> np.ndarray:
    sim = emb @ emb.T
    n = len(sim)
    # at least MIN_NEIGHBOURS (a quarter of the windows for few windows): sparser graphs
    # of short files fall apart into chance clusters of one voice
    keep = min(n - 1, max(2, int(round(p_keep * n)), min(MIN_NEIGHBOURS, n // 4)))
    # row-wise: keep the `keep` strongest neighbours, binarise
    idx = np.argpartition(-sim, min(keep, n - 1), axis=1)[:, :keep]
    a = np.zeros_like(sim)
    np.put_along_axis(a, idx, 1.0, axis=1)
    a = np.maximum(a, a.T)
    np.fill_diagonal(a, 1.0)
    return a


def _laplacian(a: np.ndarray) -> np.ndarray:
    d = a.sum(1)
    dinv = 1.0 / np.sqrt(np.maximum(d, 1e-12))
    return np.eye(len(a)) - dinv[:, None] * a * dinv[None, :]


def _spectral(emb: np.ndarray, max_speakers: int) -> np.ndarray:
    """Labels for emb (n, d) by spectral clustering of a binarised k-nearest-neighbour
    affinity, the neighbour count auto-tuned as in NME-SC (Park et al., 2019): the
    speaker count is the eigengap of the normalised Laplacian."""
    n = len(emb)
    k_max = max(1, min(max_speakers, n - 1))
    best = None
    for p_keep in np.linspace(0.05, 0.3, 11) if n > 40 else (0.3, 0.5):
        vals = np.linalg.eigvalsh(_laplacian(_refined_affinity(emb, float(p_keep))))[: k_max + 1]
        gaps = np.diff(vals)
        k = int(np.argmax(gaps)) + 1
        ratio = p_keep / max(gaps[k - 1], 1e-6)
        if best is None or ratio < best[0]:
            best = (ratio, k, float(p_keep))
    _, k, p_keep = best
    if k <= 1:
        return np.zeros(n, dtype=np.int64)
    _, vecs = np.linalg.eigh(_laplacian(_refined_affinity(emb, p_keep)))
    v = vecs[:, :k]
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return _kmeans(v, k)


def _centroids(emb: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    ks = int(labels.max()) + 1
    w = np.ones(len(emb)) if weights is None else weights
    c = np.zeros((ks, emb.shape[1]))
    for j in range(ks):
        m = labels == j
        if m.any():
            c[j] = (emb[m] * w[m, None]).sum(0)
    return c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)


def _compact(labels: np.ndarray) -> np.ndarray:
    _, inv = np.unique(labels, return_inverse=True)
    return inv.reshape(labels.shape)


def cluster_embeddings(
    emb: np.ndarray,
    *,
    max_speakers: int = 8,
    weights: np.ndarray | None = None,
    merge_similarity: float = MERGE_SIMILARITY,
) -> np.ndarray:
    """Cluster L2-normalised embeddings (n, d) into speakers; labels 0..k-1.

    At most MAX_CLUSTER_WINDOWS evenly spaced embeddings are clustered; every
    embedding is then given the nearest centroid.  Clusters whose centroids have
    cosine similarity >= merge_similarity are merged, and clusters holding less
    than MIN_CLUSTER_SHARE of the (weighted) embeddings are folded into the others.
    """
    with _single_threaded_blas():
        return _cluster(np.asarray(emb, dtype=np.float64), max_speakers, weights, merge_similarity)


def _cluster(emb: np.ndarray, max_speakers: int, weights, merge_similarity: float) -> np.ndarray:
    n = len(emb)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if n < MIN_WINDOWS_TO_SPLIT or max_speakers <= 1:
        return np.zeros(n, dtype=np.int64)
    if n < SMALL_N:
        # too few windows for a stable affinity graph: two speakers only when the two
        # halves of the best 2-means split are clearly different voices
        labels = _kmeans(emb, 2)
        centres = _centroids(emb, labels)
        limit = SMALL_SPLIT_SIMILARITY[0] if n < 12 else SMALL_SPLIT_SIMILARITY[1]
        if centres[0] @ centres[1] < limit and np.bincount(labels, minlength=2).min() >= 2:
            return _compact(labels)
        return np.zeros(n, dtype=np.int64)
    sel = np.arange(n)
    if n > MAX_CLUSTER_WINDOWS:
        sel = np.linspace(0, n - 1, MAX_CLUSTER_WINDOWS).round().astype(np.int64)
    labels_sel = _spectral(emb[sel], max_speakers)
    centres = _centroids(emb[sel], labels_sel, w[sel])
    labels = (emb @ centres.T).argmax(1)
    for _ in range(3):  # a few k-means refinement steps in embedding space
        centres = _centroids(emb, _compact(labels), w)
        labels = (emb @ centres.T).argmax(1)
    labels = _compact(labels)
    # merge look-alike clusters and fold tiny ones
    while labels.max() > 0:
        centres = _centroids(emb, labels, w)
        sims = centres @ centres.T
        np.fill_diagonal(sims, -np.inf)
        share = np.array([w[labels == j].sum() for j in range(len(centres))]) / w.sum()
        i, j = np.unravel_index(np.argmax(sims), sims.shape)
        if sims[i, j] >= merge_similarity:
            labels[labels == max(i, j)] = min(i, j)
            labels = _compact(labels)
            continue
        small = int(np.argmin(share))
        if share[small] < MIN_CLUSTER_SHARE:
            others = [c for c in range(len(centres)) if c != small]
            m = labels == small
            labels[m] = np.array(others)[(emb[m] @ centres[others].T).argmax(1)]
            labels = _compact(labels)
            continue
        break
    return labels


# --------------------------------------------------------------------------
# Smoothing and turns
# --------------------------------------------------------------------------

SWITCH_COST_CONTINUOUS = 0.1  # in cosine-similarity units, per change inside speech
SWITCH_COST_PAUSE = 0.02  # per change across a pause


def _viterbi(scores: np.ndarray, switch_cost: np.ndarray) -> np.ndarray:
    """Best label path: maximise sum(scores[t, l_t]) - sum(switch_cost[t] * [l_t != l_{t-1}])."""
    n, k = scores.shape
    if k == 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    back = np.zeros((n, k), dtype=np.int64)
    acc = scores[0].copy()
    for t in range(1, n):
        best_prev = int(acc.argmax())
        stay = acc
        switch = acc[best_prev] - switch_cost[t]
        back[t] = np.where(stay >= switch, np.arange(k), best_prev)
        acc = np.maximum(stay, switch) + scores[t]
    path = np.zeros(n, dtype=np.int64)
    path[-1] = int(acc.argmax())
    for t in range(n - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path


def _turns_from_labels(windows: Sequence[_Window], labels: Sequence[int]) -> list[SpeakerTurn]:
    turns: list[SpeakerTurn] = []
    for win, lab in zip(windows, labels):
        if turns and turns[-1].speaker == lab and win.own_start - turns[-1].end < 1e-6:
            turns[-1].end = win.own_end
        else:
            turns.append(SpeakerTurn(start=win.own_start, end=win.own_end, speaker=int(lab)))
    return _renumber(turns)


def _renumber(turns: list[SpeakerTurn]) -> list[SpeakerTurn]:
    order: dict[int, int] = {}
    out = []
    for t in sorted(turns, key=lambda t: (t.start, t.end)):
        order.setdefault(t.speaker, len(order) + 1)
        out.append(SpeakerTurn(start=round(t.start, 3), end=round(t.end, 3), speaker=order[t.speaker]))
    return out


def diarize(
    wav_path: str | os.PathLike,
    *,
    max_speakers: int = 8,
    encoder: VoiceEncoder | None = None,
    regions: Sequence[tuple[float, float]] | None = None,
) -> list[SpeakerTurn]:
    """Who spoke when in a 16 kHz mono 16-bit WAV file.

    Returns speaker turns sorted by time, covering the detected speech (silence
    gets no turn); speakers are numbered 1.. in order of first appearance.
    ``regions`` (seconds) may be given to skip the VAD.
    """
    if max_speakers < 1:
        raise ValueError("max_speakers must be >= 1")
    encoder = encoder or _default_encoder(os.environ.get(WEIGHTS_ENV))
    with _single_threaded_blas():
        return _diarize(wav_path, max_speakers, encoder, regions)


def _diarize(wav_path, max_speakers: int, encoder: VoiceEncoder, regions) -> list[SpeakerTurn]:
    if regions is None:
        regions = detect_speech(wav_path)
    if not regions:
        return []
    emb, windows, pieces = _embed_regions(wav_path, regions, encoder)
    if not windows:
        # only fragments too short to embed: one speaker for all of it
        return [SpeakerTurn(start=round(s, 3), end=round(e, 3), speaker=1) for s, e in regions]
    weights = np.array([w.own_end - w.own_start for w in windows])
    labels = cluster_embeddings(emb, max_speakers=max_speakers, weights=weights)
    k = int(labels.max()) + 1
    if k > 1:
        centres = _centroids(emb.astype(np.float64), labels, weights)
        scores = emb @ centres.T
        cost = np.full(len(windows), SWITCH_COST_CONTINUOUS)
        for t in range(1, len(windows)):
            prev, cur = windows[t - 1], windows[t]
            if any(p.after_pause for p in pieces[prev.piece + 1 : cur.piece + 1]):
                cost[t] = SWITCH_COST_PAUSE
        labels = _viterbi(scores, cost)
    turns = _turns_from_labels(windows, labels)
    # speech too short to embed: give it the speaker of the nearest turn
    return _fill_regions(turns, regions)


def _fill_regions(turns: list[SpeakerTurn], regions: Sequence[tuple[float, float]]) -> list[SpeakerTurn]:
    """Speech regions that no turn touches (too short to embed) get the nearest turn's speaker."""
    if not turns:
        return turns
    starts = np.array([t.start for t in turns])
    ends = np.array([t.end for t in turns])
    covered = list(turns)
    for s, e in regions:
        i = int(np.searchsorted(ends, s, side="right"))  # first turn ending after s
        if i < len(turns) and starts[i] < e:
            continue
        # nearest of the turns before (i - 1) and after (i)
        cands = [j for j in (i - 1, i) if 0 <= j < len(turns)]
        j = min(cands, key=lambda j: _distance(starts[j], ends[j], s, e))
        covered.append(SpeakerTurn(start=round(s, 3), end=round(e, 3), speaker=turns[j].speaker))
    covered.sort(key=lambda t: t.start)
    merged: list[SpeakerTurn] = []
    for t in covered:
        if merged and merged[-1].speaker == t.speaker and t.start - merged[-1].end < 1e-6:
            merged[-1] = SpeakerTurn(merged[-1].start, max(merged[-1].end, t.end), t.speaker)
        else:
            merged.append(t)
    return _renumber(merged)


# --------------------------------------------------------------------------
# Transcript segments
# --------------------------------------------------------------------------


def _distance(a0: float, a1: float, b0: float, b1: float) -> float:
    """Gap between intervals (0 when they touch or overlap)."""
    return max(0.0, max(a0, b0) - min(a1, b1))


def _speaker_at(start: float, end: float, starts: np.ndarray, ends: np.ndarray, spk: np.ndarray) -> int:
    """The speaker whose turns overlap [start, end] most; the nearest turn's when none does."""
    end = max(end, start + 1e-3)  # a word of no length still has a place in time
    ov = np.minimum(ends, end) - np.maximum(starts, start)
    pos = ov > 0
    if pos.any():
        totals: dict[int, float] = {}
        for sp, o in zip(spk[pos], ov[pos]):
            totals[int(sp)] = totals.get(int(sp), 0.0) + float(o)
        return max(totals.items(), key=lambda kv: (kv[1], -kv[0]))[0]
    gap = np.maximum(0.0, np.maximum(starts, start) - np.minimum(ends, end))
    return int(spk[int(np.argmin(gap))])


def _split_at_speaker_changes(seg: Segment, labels: list[int]) -> list[tuple[Segment, int]]:
    """The segment cut before every word whose speaker differs from the word before it."""
    runs: list[tuple[list[Word], int]] = []
    for word, label in zip(seg.words, labels):
        if runs and runs[-1][1] == label:
            runs[-1][0].append(word)
        else:
            runs.append(([word], label))
    if len(runs) == 1:
        return [(seg, runs[0][1])]
    out = []
    for k, (words, label) in enumerate(runs):
        start = seg.start if k == 0 else words[0].start
        end = seg.end if k == len(runs) - 1 else words[-1].end
        text = "".join(w.text for w in words).strip()
        out.append((replace(seg, start=start, end=end, text=text, words=words), label))
    return out


def assign_speakers(segments: Iterable[Segment], turns: Sequence[SpeakerTurn]) -> list[Segment]:
    """Give every word the speaker whose turns overlap it most (the nearest turn's speaker when
    none overlaps), and cut a segment where the speaker changes between two of its words, so a
    short answer is not glued to the other voice's sentence. A segment without word timestamps
    is given the speaker of its span as a whole. Speakers are renumbered 1.. in order of first
    appearance among the segments. Returns new Segment objects; the inputs are not changed.
    With no turns, every segment gets speaker None.
    """
    segments = list(segments)
    turns = sorted(turns, key=lambda t: (t.start, t.end))
    if not turns:
        return [replace(s, speaker=None) for s in segments]
    starts = np.array([t.start for t in turns])
    ends = np.array([t.end for t in turns])
    spk = np.array([t.speaker for t in turns])
    pieces: list[tuple[Segment, int]] = []
    for seg in segments:
        if not seg.words:
            pieces.append((seg, _speaker_at(seg.start, seg.end, starts, ends, spk)))
            continue
        labels = [_speaker_at(w.start, w.end, starts, ends, spk) for w in seg.words]
        pieces.extend(_split_at_speaker_changes(seg, labels))
    order: dict[int, int] = {}
    return [replace(seg, speaker=order.setdefault(label, len(order) + 1)) for seg, label in pieces]
