"""Clustering never fails a job, whatever the windows' embeddings: property tests.

Degenerate input (digital silence, one window repeated, two windows, rows an encoder left NaN or
zero, near-identical rows whose order a BLAS rounds either way) once made k-means return a
single centre and ``clustering.py`` index the second: the job failed on one machine and passed on
another.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import resemblyzer_encoder
from transcription.pipeline import speakers as sp
from transcription.pipeline.speakers import clustering
from transcription.pipeline.speakers.encoding.embedding import Piece, Window

SETTINGS = settings(max_examples=150, deadline=None)


def _normalised(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.where(norm > 0, x / np.where(norm > 0, norm, 1.0), 0.0)


@st.composite
def embeddings(draw, max_windows: int = 70) -> np.ndarray:
    """Unit rows drawn around a few voices, with repeats, zero rows, NaN rows and tiny jitter."""
    n = draw(st.integers(0, max_windows))
    dim = draw(st.sampled_from([3, 8, 32]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    voices = draw(st.integers(1, 5))
    spread = draw(st.sampled_from([0.0, 1e-9, 1e-6, 0.05, 0.5, 3.0]))
    centres = rng.normal(size=(voices, dim))
    x = centres[rng.integers(voices, size=n)] + spread * rng.normal(size=(n, dim))
    if n and draw(st.booleans()):
        bad = rng.random(n) < draw(st.sampled_from([0.1, 0.5, 1.0]))
        x[bad] = draw(st.sampled_from([0.0, np.nan]))
    return _normalised(x).astype(draw(st.sampled_from([np.float32, np.float64])))


def _assert_labels(labels: np.ndarray, n: int, max_speakers: int) -> None:
    assert labels.shape == (n,)
    assert labels.dtype.kind == "i"
    if n:
        k = int(labels.max()) + 1
        assert set(labels.tolist()) == set(range(k)), "labels are 0..k-1 without gaps"
        assert k <= max(1, max_speakers)


@SETTINGS
@given(emb=embeddings(), max_speakers=st.integers(1, 8), weighted=st.booleans())
def test_clustering_gives_every_window_a_speaker_whatever_the_embeddings(emb, max_speakers, weighted):
    weights = np.random.default_rng(len(emb)).uniform(0.0, 1.0, len(emb)) if weighted else None
    labels = clustering.cluster_embeddings(emb, max_speakers=max_speakers, weights=weights)
    _assert_labels(labels, len(emb), max_speakers)


@SETTINGS
@given(
    n=st.integers(1, 120),
    dim=st.sampled_from([3, 256]),
    seed=st.integers(0, 2**32 - 1),
    jitter=st.sampled_from([0.0, 1e-12, 1e-7]),
)
def test_one_window_repeated_is_one_speaker(n, dim, seed, jitter):
    rng = np.random.default_rng(seed)
    emb = _normalised(np.repeat(rng.normal(size=(1, dim)), n, axis=0) + jitter * rng.normal(size=(n, dim)))
    assert set(clustering.cluster_embeddings(emb).tolist()) == {0}


@SETTINGS
@given(emb=embeddings(max_windows=2))
def test_one_or_two_windows_are_one_speaker(emb):
    assert set(clustering.cluster_embeddings(emb).tolist()) <= {0}


@SETTINGS
@given(emb=embeddings(max_windows=40), max_speakers=st.integers(1, 8))
def test_turns_from_any_embeddings_cover_the_speech(emb, max_speakers):
    # windows 0.75 s apart in one continuous piece, as embedding.py lays them out
    windows = [Window(i * 0.75, i * 0.75 + 1.5, i * 0.75, (i + 1) * 0.75, 0) for i in range(len(emb))]
    extent = [(0.0, max(0.75 * len(emb), 0.5))]
    turns = sp.turns_from_embeddings(emb, windows, [Piece(*extent[0], True)], extent, max_speakers=max_speakers)
    assert turns, "speech always gets a speaker"
    assert turns[0].start == 0.0 and turns[-1].end == round(extent[0][1], 3)
    assert all(a.end <= b.start for a, b in zip(turns, turns[1:], strict=False))
    assert {t.speaker for t in turns} <= set(range(1, max(1, max_speakers) + 1))


@pytest.mark.parametrize("kind", resemblyzer_encoder.ENCODER_NAMES)
def test_digital_silence_is_one_speaker(kind):
    """5 s of zeros through each real encoder, windows laid out as embedding.py lays them: all alike."""
    encoder = resemblyzer_encoder.encoder_named(kind)
    feats = encoder.features(np.zeros(5 * 16000, dtype=np.float32))
    windows = np.stack([feats[a : a + 150] for a in range(0, len(feats) - 150 + 1, 75)])
    emb = encoder.embed_frames(windows)
    assert emb.shape == (len(windows), encoder.dim) and np.isfinite(emb).all()
    assert set(clustering.cluster_embeddings(emb).tolist()) == {0}
