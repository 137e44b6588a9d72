"""The speaker models' ONNX graphs, built from their weights once and then read from a cache file.

CAM++'s graph is built from its checkpoint (:mod:`.campplus`) and the segmentation model's from
its own (:mod:`.segmentation`). Diarization's child process, one per job (:mod:`.apart`), did that
every time: importing onnx, reading the weights, building and checking the graph took about 0.35 s
of CPU that recognition wanted too (bench/asr/README.md). With a cache directory set
(:func:`keep_graphs_in`, which the child is given), the first build writes the graph's bytes to a
file and later processes read them, without onnx.

A file's name holds a key made of what the graph was built from: the model's name, the sha256 of
its weights, and the sha256 of the module that builds it and of any other file it reads (CAM++'s
8-bit ranges): a change to any of them is a new key, no version number to forget to raise. Its
first line holds the sha256 of the graph that follows: a file that does not match (torn, truncated, corrupted on disk) or is not one of these files is
rebuilt and replaced, never trusted. Files are written under a temporary name and renamed, so a
reader sees a whole file or none, and two processes that build at once write the same bytes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from transcription.pipeline.speakers.encoding.weight_files import sha256_of

logger = logging.getLogger(__name__)

FORMAT = b"transcription-onnx-graph 1"  # the first line starts with it
SUFFIX = ".onnx-cache"

_directory: Path | None = None


def keep_graphs_in(directory: str | os.PathLike[str] | None) -> None:
    """Where this process caches the graphs it builds (None: build each one, keep none)."""
    global _directory
    _directory = Path(directory) if directory else None


def cache_key(model: str, weights: Path, builder: Path, also: Sequence[Path] = ()) -> str:
    """What the graph was built from: the model's name, its weights, the module that builds it,
    the other files it reads."""
    parts = [FORMAT.decode(), model, *(sha256_of(path) for path in (weights, builder, *also))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cache_file(directory: Path, model: str, weights: Path, builder: Path, also: Sequence[Path] = ()) -> Path:
    return directory / f"{model}-{cache_key(model, weights, builder, also)[:32]}{SUFFIX}"


def graph_bytes(
    model: str, weights: Path, builder: Path, build: Callable[[], bytes], *, also: Sequence[Path] = ()
) -> bytes:
    """The serialised ONNX graph of ``model``: read from the cache where a sound file is there,
    else ``build()`` (and written there, where a cache directory is set). ``weights`` must exist:
    a missing file raises FileNotFoundError, cache or not. ``also``: other files ``build`` reads."""
    if not weights.is_file():
        raise FileNotFoundError(f"{model} weights: {weights} is not a file")
    directory = _directory
    if directory is None:
        return build()
    path = cache_file(directory, model, weights, builder, also)
    cached = read_graph(path)
    if cached is not None:
        return cached
    graph = build()
    try:
        write_graph(path, graph)
        # other weights, an older builder; not another model whose name starts with this one's
        for old in directory.glob(f"{model}-{'[0-9a-f]' * 32}{SUFFIX}"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError as error:  # a read-only or full disk: the graph is used anyway, and built again next time
        logger.warning("speaker model graph not cached in %s: %s", directory, error)
    return graph


def read_graph(path: Path) -> bytes | None:
    """The graph kept in ``path``; None where there is no file or it is not sound (then rebuilt)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:  # not readable: built, and used without the cache
        logger.warning("speaker model graph cache %s cannot be read: %s", path, error)
        return None
    head, newline, graph = data.partition(b"\n")
    expected = FORMAT + b" sha256=" + hashlib.sha256(graph).hexdigest().encode()
    if not newline or head != expected:
        logger.warning("speaker model graph cache %s is damaged or stale: rebuilt", path)
        return None
    return graph


def write_graph(path: Path, graph: bytes) -> None:
    """Written whole under a temporary name, then renamed over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = FORMAT + b" sha256=" + hashlib.sha256(graph).hexdigest().encode() + b"\n"
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(head)
            f.write(graph)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
