"""3D-Speaker's CAM++ (speakerlab/models/campplus) transliterated module by module into plain numpy,
as torch computes it in eval mode: the reference the service's ONNX graph is checked against.
Slow and simple on purpose; nothing is folded or fused."""

from __future__ import annotations

import numpy as np

EPS = 1e-5


def conv(x: np.ndarray, w: np.ndarray, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1)) -> np.ndarray:
    """torch.nn.functional.conv2d on (C, H, W) (conv1d: H = 1)."""
    c_out, c_in, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    h_out = (x.shape[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    w_out = (x.shape[2] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((c_out, h_out, w_out))
    for i in range(kh):
        for j in range(kw):
            patch = x[
                :,
                i * dilation[0] : i * dilation[0] + stride[0] * (h_out - 1) + 1 : stride[0],
                j * dilation[1] : j * dilation[1] + stride[1] * (w_out - 1) + 1 : stride[1],
            ]
            out += np.einsum("oc,chw->ohw", w[:, :, i, j], patch)
    if bias is not None:
        out += bias[:, None, None]
    return out


def conv1d(x, w, bias=None, stride=1, padding=0, dilation=1):
    return conv(x[:, None, :], w[:, :, None, :], bias, (1, stride), (0, padding), (1, dilation))[:, 0, :]


def batchnorm(x, s, prefix, affine=True):
    shape = (-1,) + (1,) * (x.ndim - 1)
    y = (x - s[f"{prefix}.running_mean"].reshape(shape)) / np.sqrt(s[f"{prefix}.running_var"].reshape(shape) + EPS)
    if affine:
        y = y * s[f"{prefix}.weight"].reshape(shape) + s[f"{prefix}.bias"].reshape(shape)
    return y


def relu(x):
    return np.maximum(x, 0)


def basic_res_block(x, s, p, stride):
    out = relu(batchnorm(conv(x, s[f"{p}.conv1.weight"], stride=(stride, 1), padding=(1, 1)), s, f"{p}.bn1"))
    out = batchnorm(conv(out, s[f"{p}.conv2.weight"], padding=(1, 1)), s, f"{p}.bn2")
    if f"{p}.shortcut.0.weight" in s:
        x = batchnorm(conv(x, s[f"{p}.shortcut.0.weight"], stride=(stride, 1)), s, f"{p}.shortcut.1")
    return relu(out + x)


def seg_pooling(x, seg_len=100):
    t = x.shape[-1]
    segs = [x[:, k : k + seg_len].mean(-1) for k in range(0, t, seg_len)]  # avg_pool1d, ceil_mode
    return np.repeat(np.stack(segs, -1), seg_len, axis=-1)[:, :t]


def cam_layer(x, s, p, dilation):
    y = conv1d(x, s[f"{p}.linear_local.weight"], padding=dilation, dilation=dilation)
    context = x.mean(-1, keepdims=True) + seg_pooling(x)
    context = relu(conv1d(context, s[f"{p}.linear1.weight"], s[f"{p}.linear1.bias"]))
    m = 1 / (1 + np.exp(-conv1d(context, s[f"{p}.linear2.weight"], s[f"{p}.linear2.bias"])))
    return y * m


def campplus(s: dict, feats: np.ndarray) -> np.ndarray:
    """CAMPPlus.forward for one utterance: feats (T, 80), mean-normalised -> embedding (192,)."""
    s = {k: v.astype(np.float64) for k, v in s.items()}
    x = feats.T[None]  # (1, 80, T): one input channel
    out = relu(batchnorm(conv(x, s["head.conv1.weight"], padding=(1, 1)), s, "head.bn1"))
    for layer in (1, 2):
        out = basic_res_block(out, s, f"head.layer{layer}.0", 2)
        out = basic_res_block(out, s, f"head.layer{layer}.1", 1)
    out = relu(batchnorm(conv(out, s["head.conv2.weight"], stride=(2, 1), padding=(1, 1)), s, "head.bn2"))
    x = out.reshape(-1, out.shape[-1])
    x = relu(
        batchnorm(
            conv1d(x, s["xvector.tdnn.linear.weight"], stride=2, padding=2), s, "xvector.tdnn.nonlinear.batchnorm"
        )
    )
    for block, dilation in ((1, 1), (2, 2), (3, 2)):
        layer = 1
        while f"xvector.block{block}.tdnnd{layer}.linear1.weight" in s:
            p = f"xvector.block{block}.tdnnd{layer}"
            h = conv1d(relu(batchnorm(x, s, f"{p}.nonlinear1.batchnorm")), s[f"{p}.linear1.weight"])
            h = cam_layer(relu(batchnorm(h, s, f"{p}.nonlinear2.batchnorm")), s, f"{p}.cam_layer", dilation)
            x = np.concatenate([x, h], 0)
            layer += 1
        p = f"xvector.transit{block}"
        x = conv1d(relu(batchnorm(x, s, f"{p}.nonlinear.batchnorm")), s[f"{p}.linear.weight"])
    x = relu(batchnorm(x, s, "xvector.out_nonlinear.batchnorm"))
    stats = np.concatenate([x.mean(-1), x.std(-1, ddof=1)])
    dense = s["xvector.dense.linear.weight"][:, :, 0] @ stats
    return batchnorm(dense, s, "xvector.dense.nonlinear.batchnorm", affine=False)  # config 'batchnorm_': no ReLU
