"""Resemblyzer's encoder (harness/resemblyzer_encoder.py), what the service's CAM++ is compared with
on the bench: its legacy-format weights read without torch (and nothing but tensors accepted),
its mel features and LSTM as resemblyzer computes them, and two real voices told apart."""

from __future__ import annotations

import pickle
import shutil
import sys

import numpy as np
import pytest

from harness import resemblyzer_encoder
from harness import speaker_audio as sa

NL = {"m": lambda: sa.clips("nl", "m"), "v": lambda: sa.clips("nl", "v")}


@pytest.fixture(scope="session")
def resemblyzer() -> resemblyzer_encoder.VoiceEncoder:
    return resemblyzer_encoder.VoiceEncoder()


# --------------------------------------------------------------------------
# its legacy-format weights, without torch
# --------------------------------------------------------------------------


def test_weights_come_from_the_resemblyzer_package_without_importing_it():
    path = resemblyzer_encoder.find_encoder_weights()
    assert path.name == "pretrained.pt" and path.is_file()
    assert "resemblyzer" not in sys.modules and "torch" not in sys.modules


def test_legacy_checkpoint_loads_into_numpy():
    state = resemblyzer_encoder.load_legacy_state_dict(resemblyzer_encoder.find_encoder_weights())
    model = state["model_state"]
    assert model["lstm.weight_ih_l0"].shape == (1024, 40)
    assert model["lstm.weight_hh_l2"].shape == (1024, 256)
    assert model["linear.weight"].shape == (256, 256)
    for v in model.values():
        assert v.dtype == np.float32 and np.isfinite(v).all()
    # tensors that share one storage at different offsets are told apart
    assert not np.array_equal(model["lstm.bias_ih_l0"], model["lstm.bias_hh_l0"])


def test_loader_refuses_arbitrary_classes(tmp_path):
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:  # the legacy layout: magic number, protocol, system info, then the pickle
        for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
            pickle.dump(header, f, protocol=2)
        pickle.dump({"a": shutil.rmtree}, f, protocol=2)
    with pytest.raises(pickle.UnpicklingError):
        resemblyzer_encoder.load_legacy_state_dict(path)


def test_loader_refuses_a_checkpoint_that_is_not_a_state_dict(tmp_path):
    path = tmp_path / "list.pt"
    with open(path, "wb") as f:  # the legacy layout, holding a list and no storages
        for part in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}, [1, 2], []):
            pickle.dump(part, f, protocol=2)
    with pytest.raises(ValueError, match="not a torch state dict"):
        resemblyzer_encoder.load_legacy_state_dict(path)


# --------------------------------------------------------------------------
# features and the encoder
# --------------------------------------------------------------------------


def test_mel_filterbank_is_slaney_normalised():
    fb = resemblyzer_encoder.mel_filterbank()
    assert fb.shape == (40, 201)
    assert (fb >= 0).all()
    # slaney: each triangle has area 1 on the Hz axis (2 / bandwidth height)
    hz = np.fft.rfftfreq(400, 1 / 16000)
    areas = np.trapezoid(fb, hz, axis=1) if hasattr(np, "trapezoid") else np.trapz(fb, hz, axis=1)
    np.testing.assert_allclose(areas[5:], 1.0, rtol=0.15)


def test_mel_frames_are_centred():
    y = np.zeros(16000, dtype=np.float32)
    y[8000] = 1.0  # an impulse at 0.5 s
    mel = resemblyzer_encoder.mel_spectrogram(y)
    assert mel.shape == (101, 40)
    assert mel.sum(1).argmax() == 50


def _reference_lstm(state, mel):
    """Straight from torch's LSTM equations, one window at a time, gate order i f g o."""

    def sig(x):
        return 1 / (1 + np.exp(-x))

    x = mel.astype(np.float64)
    for layer in range(3):
        w_ih = state[f"lstm.weight_ih_l{layer}"].astype(np.float64)
        w_hh = state[f"lstm.weight_hh_l{layer}"].astype(np.float64)
        b = state[f"lstm.bias_ih_l{layer}"] + state[f"lstm.bias_hh_l{layer}"]
        h = np.zeros(256)
        c = np.zeros(256)
        outs = []
        for xt in x:
            g = w_ih @ xt + w_hh @ h + b
            i, f, gg, o = np.split(g, 4)
            c = sig(f) * c + sig(i) * np.tanh(gg)
            h = sig(o) * np.tanh(c)
            outs.append(h)
        x = np.array(outs)
    e = np.maximum(state["linear.weight"] @ h + state["linear.bias"], 0)
    return e / np.linalg.norm(e)


def test_encoder_matches_reference_lstm_including_short_windows(resemblyzer):
    encoder = resemblyzer
    state = resemblyzer_encoder.load_legacy_state_dict(resemblyzer_encoder.find_encoder_weights())["model_state"]
    rng = np.random.default_rng(1)
    mels = (rng.random((3, 30, 40)) ** 4 * 5).astype(np.float32)
    lengths = [30, 17, 5]
    got = encoder.embed_mels(mels, lengths)
    for i, n in enumerate(lengths):
        np.testing.assert_allclose(got[i], _reference_lstm(state, mels[i, :n]), atol=2e-5)
    assert got.shape == (3, 256)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)


def test_resemblyzer_tells_the_two_actors_apart(resemblyzer, audio_cache):
    encoder = resemblyzer
    emb = {
        who: np.stack([encoder.embed_utterance(sa.decode(p, audio_cache / "clips")) for p in NL[who]()[:12:2]])
        for who in "mv"
    }
    same = np.mean([(emb[w] @ emb[w].T)[np.triu_indices(6, 1)].mean() for w in "mv"])
    other = (emb["m"] @ emb["v"].T).mean()
    assert same - other > 0.1
