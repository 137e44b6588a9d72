"""The speaker models' ONNX graphs kept in a cache file: built once, read back byte for byte with the
same outputs as a fresh build, and rebuilt (never trusted) when the file is damaged, stale or not
one of ours."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from transcription.pipeline.speakers import segmentation as seg
from transcription.pipeline.speakers.encoding import campplus, graph_cache


@pytest.fixture
def cache(tmp_path):
    graph_cache.keep_graphs_in(tmp_path / "graphs")
    yield tmp_path / "graphs"
    graph_cache.keep_graphs_in(None)


def _fresh_build(tmp_path: Path) -> tuple[Path, Path, list[int]]:
    """Weights, a builder module and a file it reads, of our own, and a counter of builds."""
    weights, builder = tmp_path / "w.bin", tmp_path / "builder.py"
    weights.write_bytes(b"weights v1")
    builder.write_text("# builder v1\n")
    (tmp_path / "ranges.json").write_text("{}")
    return weights, builder, []


def _graph(weights: Path, builder: Path, builds: list[int], graph: bytes = b"graph bytes") -> bytes:
    def build() -> bytes:
        builds.append(1)
        return graph

    return graph_cache.graph_bytes("toy", weights, builder, build, also=(builder.with_name("ranges.json"),))


def test_without_a_cache_directory_every_call_builds(tmp_path):
    weights, builder, builds = _fresh_build(tmp_path)
    graph_cache.keep_graphs_in(None)
    assert _graph(weights, builder, builds) == _graph(weights, builder, builds) == b"graph bytes"
    assert len(builds) == 2


def test_a_graph_is_built_once_then_read_from_its_file(tmp_path, cache):
    weights, builder, builds = _fresh_build(tmp_path)
    assert _graph(weights, builder, builds) == b"graph bytes"
    (path,) = cache.iterdir()
    before = path.stat()
    assert _graph(weights, builder, builds, graph=b"never built") == b"graph bytes"
    assert len(builds) == 1
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-3],  # torn write
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one bit flipped in the graph
        lambda data: data.replace(b"sha256=", b"sha256=0"),  # the header spoilt
        lambda data: data.partition(b"\n")[2],  # a bare ONNX file, not one of ours
        lambda data: b"",
    ],
    ids=["truncated", "bit-flip", "header", "no-header", "empty"],
)
def test_a_damaged_cache_file_is_rebuilt_and_replaced(tmp_path, cache, damage):
    weights, builder, builds = _fresh_build(tmp_path)
    _graph(weights, builder, builds)
    (path,) = cache.iterdir()
    path.write_bytes(damage(path.read_bytes()))
    assert _graph(weights, builder, builds, graph=b"graph rebuilt") == b"graph rebuilt"
    assert len(builds) == 2
    assert graph_cache.read_graph(path) == b"graph rebuilt"


@pytest.mark.parametrize("changed", ["w.bin", "builder.py", "ranges.json"])
def test_new_weights_or_a_changed_builder_make_a_new_graph_and_the_stale_one_goes(tmp_path, cache, changed):
    weights, builder, builds = _fresh_build(tmp_path)
    _graph(weights, builder, builds)
    (stale,) = cache.iterdir()
    (tmp_path / changed).write_bytes(b"v2")
    assert _graph(weights, builder, builds, graph=b"graph v2") == b"graph v2"
    assert len(builds) == 2
    (path,) = cache.iterdir()
    assert path != stale and graph_cache.read_graph(path) == b"graph v2"


def test_missing_weights_are_an_error_even_with_a_cached_graph(tmp_path, cache):
    weights, builder, builds = _fresh_build(tmp_path)
    _graph(weights, builder, builds)
    weights.unlink()
    with pytest.raises(FileNotFoundError, match="w.bin"):
        _graph(weights, builder, builds)


def test_a_cache_that_cannot_be_written_still_gives_the_graph(tmp_path):
    weights, builder, builds = _fresh_build(tmp_path)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    graph_cache.keep_graphs_in(blocked / "graphs")
    try:
        assert _graph(weights, builder, builds) == b"graph bytes"
    finally:
        graph_cache.keep_graphs_in(None)


def test_a_model_whose_name_starts_with_anothers_keeps_its_graph(tmp_path, cache):
    weights, builder, builds = _fresh_build(tmp_path)
    graph_cache.graph_bytes("toy-int8", weights, builder, lambda: b"8-bit graph")
    _graph(weights, builder, builds)  # "toy" removes its own stale files, not toy-int8's
    assert sorted(path.name.split("-")[1] for path in cache.iterdir())[-1] == "int8"
    assert len(list(cache.iterdir())) == 2


def test_campplus_from_its_cached_graph_embeds_as_a_fresh_build(cache):
    rng = np.random.default_rng(5)
    frames = rng.normal(0, 1, (3, 150, campplus.N_MELS)).astype(np.float32)
    lengths = [150, 120, 60]
    graph_cache.keep_graphs_in(None)
    fresh = campplus.CamPlusPlus().embed_frames(frames, lengths)
    graph_cache.keep_graphs_in(cache)
    campplus.CamPlusPlus()  # builds and writes the file
    (path,) = cache.iterdir()
    written = path.stat().st_mtime_ns
    cached = campplus.CamPlusPlus()  # reads it
    assert path.stat().st_mtime_ns == written
    assert cached.dim == 192
    assert np.array_equal(cached.embed_frames(frames, lengths), fresh)


def test_segmentation_from_its_cached_graph_reads_as_a_fresh_build(cache):
    windows = np.random.default_rng(6).normal(0, 0.1, (2, seg.WINDOW_SAMPLES)).astype(np.float32)
    graph_cache.keep_graphs_in(None)
    fresh = seg.Segmentation().log_probabilities(windows)
    graph_cache.keep_graphs_in(cache)
    seg.Segmentation()
    (path,) = cache.iterdir()
    assert path.name.startswith("segmentation-")
    before = os.stat(path).st_mtime_ns
    assert np.array_equal(seg.Segmentation().log_probabilities(windows), fresh)
    assert os.stat(path).st_mtime_ns == before
