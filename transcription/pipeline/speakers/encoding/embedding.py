"""Windows of speech embedded by the voice encoder: 1.5 s windows every 0.75 s, read piece by piece
(and, for :mod:`.closer`, 0.75 s windows every 0.25 s where clustering is unsure)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from transcription.pipeline.speakers.encoding.blas import BatchPool, diarization_threads, single_threaded_blas
from transcription.pipeline.speakers.encoding.encoders import SpeakerEncoder
from transcription.pipeline.speakers.speech import SAMPLE_RATE, open_wav, read_span

# Diarization settings
# both encoders' features are 10 ms frames
FRAME_S = 0.01
WINDOW_FRAMES = 150  # 1.5 s
HOP_FRAMES = 75  # 0.75 s
MIN_WINDOW_FRAMES = 40  # speech shorter than 0.4 s is not embedded on its own
MAX_REGION_S = 30.0  # long speech regions are processed in pieces this long
# windows per encoder call: CAM++'s first layers hold 32 x 40 x 150 floats per window, 49 MB for 64
# windows, which run from memory rather than cache; at 16 a window cost 12-20% less CPU than at 64
# (22.3-23.4 ms against 25.7-29.8 ms, two threads). At 4 it costs no more than at 16 (8.2 against
# 8.5 CPU-s for a 5-minute file here) and a GPU machine's 16 threads share the batches out evenly:
# 0.9 s against 1.3 s for that file there (bench/asr/README.md). The embeddings are the same to the bit.
ENCODER_BATCH = 4
# The first look (speakers.diarize): where there is this much speech, every other window of the grid
# (counted across pieces) is embedded first; where clustering hears one voice in them, that is the
# answer (one voice's turns are the speech, whichever windows heard it), for half the encoder's CPU;
# where it hears two or more, the rest of the grid is embedded too and the whole grid is clustered
# as before (the same embeddings). Below SHORT_WINDOWS' worth of first-look windows clustering reads
# few windows differently (clustering.py), so shorter speech is embedded on the whole grid at once.
# Chosen in docs/decisions/speech-and-text.md.
FIRST_LOOK_STRIDE = 2
FIRST_LOOK_MIN_SPEECH_S = 120.0


@dataclass
class Window:
    start: float  # the audio the embedding saw
    end: float
    own_start: float  # the part of the timeline this window's label covers
    own_end: float
    piece: int  # index of the continuous speech piece it lies in


@dataclass
class Piece:
    start: float
    end: float
    after_pause: bool  # False when it continues the previous piece without a pause


def split_regions(regions: Sequence[tuple[float, float]]) -> list[Piece]:
    """Regions cut into pieces of at most MAX_REGION_S, so no read is large."""
    pieces = []
    for s, e in regions:
        n = max(1, int(np.ceil((e - s) / MAX_REGION_S)))
        edges = np.linspace(s, e, n + 1)
        for k in range(n):
            pieces.append(Piece(float(edges[k]), float(edges[k + 1]), k == 0))
    return pieces


def _piece_windows(n_frames: int, size: int = WINDOW_FRAMES, hop: int = HOP_FRAMES) -> list[tuple[int, int]]:
    """Window frame ranges [a, b) inside a piece of n_frames frames."""
    if n_frames <= size:
        return [(0, n_frames)]
    starts = list(range(0, n_frames - size + 1, hop))
    if starts[-1] + size < n_frames:
        starts.append(n_frames - size)
    return [(a, a + size) for a in starts]


def centred_in(window: Window, spans: Sequence[tuple[float, float]]) -> bool:
    """Whether the middle of the audio ``window`` saw lies in one of ``spans``."""
    middle = (window.start + window.end) / 2
    return any(s <= middle < e for s, e in spans)


def embed_regions(
    wav_path: str | os.PathLike[str],
    regions: Sequence[tuple[float, float]],
    encoder: SpeakerEncoder,
    threads: int | None = None,
    *,
    size: int = WINDOW_FRAMES,
    hop: int = HOP_FRAMES,
    only: Sequence[tuple[float, float]] | None = None,
    known: tuple[np.ndarray, Sequence[Window]] | None = None,
    stride: int = 1,
) -> tuple[np.ndarray, list[Window], list[Piece]]:
    """Embed windows of the speech regions; returns (embeddings, windows, pieces). Windows are
    ``size`` frames long every ``hop`` frames; with ``only`` (seconds), just the windows of that
    grid :func:`centred_in` those spans are embedded and returned (the same windows, to the bit,
    as those of a run without ``only``). ``stride``: every ``stride``-th window of the grid alone
    (counted across pieces: the first look). ``known``: embeddings and windows of an earlier call
    over the same regions and grid; those windows are not embedded again."""
    pieces = split_regions(regions)
    windows: list[Window] = []
    done = {} if known is None else {_key(w): row for w, row in zip(known[1], known[0], strict=True)}
    reused: dict[int, np.ndarray] = {}  # index in ``windows`` -> its known embedding
    grid_index = -1
    batch: list[np.ndarray] = []
    lengths: list[int] = []

    def run(feats: list[np.ndarray], lens: list[int]) -> np.ndarray:
        arr = np.zeros((len(feats), max(lens), feats[0].shape[1]), dtype=np.float32)
        for i, m in enumerate(feats):
            arr[i, : len(m)] = m
        return encoder.embed_frames(arr, lens)

    with single_threaded_blas(), BatchPool(threads or diarization_threads()) as pool:

        def flush() -> None:
            if batch:
                pool.submit(run, list(batch), list(lengths))
                batch.clear()
                lengths.clear()

        w = open_wav(wav_path)
        try:
            for pi, piece in enumerate(pieces):
                if only is not None and not any(s < piece.end and e > piece.start for s, e in only):
                    continue
                s0 = int(round(piece.start * SAMPLE_RATE))
                s1 = int(round(piece.end * SAMPLE_RATE))
                audio = read_span(w, s0, s1)
                if len(audio) // round(FRAME_S * SAMPLE_RATE) < MIN_WINDOW_FRAMES:
                    continue
                feats = encoder.features(audio)
                n = min(len(feats), len(audio) // round(FRAME_S * SAMPLE_RATE))  # frames inside the piece
                if n < MIN_WINDOW_FRAMES:
                    continue
                spans = _piece_windows(n, size, hop)
                centres = [(a + b) / 2 for a, b in spans]
                for k, (a, b) in enumerate(spans):
                    own_start = piece.start if k == 0 else piece.start + (centres[k - 1] + centres[k]) / 2 * FRAME_S
                    own_end = (
                        piece.end if k == len(spans) - 1 else piece.start + (centres[k] + centres[k + 1]) / 2 * FRAME_S
                    )
                    window = Window(piece.start + a * FRAME_S, piece.start + b * FRAME_S, own_start, own_end, pi)
                    grid_index += 1
                    if (only is not None and not centred_in(window, only)) or grid_index % stride:
                        continue
                    windows.append(window)
                    if _key(window) in done:
                        reused[len(windows) - 1] = done[_key(window)]
                        continue
                    batch.append(feats[a:b])
                    lengths.append(b - a)
                    if len(batch) >= ENCODER_BATCH:
                        flush()
            flush()
        finally:
            w.close()
        embeds = pool.results()
    return _in_order(embeds, reused, len(windows), encoder.dim), windows, pieces


def _in_order(embeds: list[np.ndarray], reused: dict[int, np.ndarray], n: int, dim: int) -> np.ndarray:
    """The windows' embeddings in order: the batches' rows, with the known ones put in their places."""
    emb = np.concatenate(embeds) if embeds else np.zeros((0, dim), dtype=np.float32)
    if not reused:
        return emb
    rows = np.zeros((n, dim), dtype=np.float32)
    rows[[i for i in range(n) if i not in reused]] = emb
    for i, row in reused.items():
        rows[i] = row
    return rows


def _key(window: Window) -> tuple[int, float, float]:
    """A window's place: the same piece and frames give the same floats in every call."""
    return window.piece, window.start, window.end
