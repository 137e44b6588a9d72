"""Windows' embeddings into speakers: spectral clustering with the count from the eigengap, then
look-alike clusters merged and tiny ones folded (one voice gives one speaker)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from transcription.pipeline.speakers.encoding.blas import single_threaded_blas

MAX_CLUSTER_WINDOWS = 1000  # the affinity matrix is at most this many rows
# clusters whose centroids are this alike are one voice; the figures are Resemblyzer's (bench/speakers,
# seed 12: one voice over loud music split at 0.855, two different voices at most 0.837 apart), the
# defaults of a caller that names no encoder; each encoder carries its own (encoders.py)
MERGE_SIMILARITY = 0.845
MIN_CLUSTER_SHARE = 0.02  # smaller clusters (share of windows) are folded into others
MIN_NEIGHBOURS = 10  # the affinity graph links each window to at least this many others
MIN_WINDOWS_TO_SPLIT = 6  # less speech than this (about 5 s) is one speaker
SMALL_N = 20  # below this many windows (about 15 s of speech): 2-means test, not spectral
SMALL_SPLIT_SIMILARITY = (0.68, 0.72)  # centroid similarity below which a small split holds (n < 12, n >= 12)
# a cluster whose centroid lies between two others' (a positive mix of them) and is at least this like
# that mix is no voice of its own but windows of both (overlap, short lines, changes of speaker): its
# windows go to the other clusters. None: never (the encoder names its own; encoders.py)
BETWEEN_SIMILARITY: float | None = None


def kmeans(x: np.ndarray, k: int, *, n_init: int = 10, iters: int = 100, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = len(x)
    # every run beats infinity (unless x holds NaN: then all are one cluster)
    best_labels, best_inertia = np.zeros(n, dtype=np.int64), np.inf
    for _ in range(n_init):
        # k-means++
        centres = [x[rng.integers(n)]]
        d2 = ((x - centres[0]) ** 2).sum(1)
        for _j in range(1, k):
            # all points alike (identical windows): any start is as good as another
            p = d2 / d2.sum() if d2.sum() > 1e-12 else np.full(n, 1.0 / n)
            centres.append(x[rng.choice(n, p=p)])
            d2 = np.minimum(d2, ((x - centres[-1]) ** 2).sum(1))
        c = np.array(centres)
        labels = np.zeros(n, dtype=np.int64)
        for it in range(iters):
            dist = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
            new = dist.argmin(1)
            if it and np.array_equal(new, labels):
                break
            labels = new
            for j in range(k):
                members = x[labels == j]
                c[j] = members.mean(0) if len(members) else x[rng.integers(n)]
        inertia = ((x - c[labels]) ** 2).sum()
        if inertia < best_inertia:
            best_inertia, best_labels = inertia, labels.copy()
    return best_labels


def _refined_affinity(emb: np.ndarray, p_keep: float) -> np.ndarray:
    sim = emb @ emb.T
    n = len(sim)
    # at least MIN_NEIGHBOURS (a quarter of the windows for few windows): sparser graphs
    # of short files fall apart into chance clusters of one voice
    keep = min(n - 1, max(2, int(round(p_keep * n)), min(MIN_NEIGHBOURS, n // 4)))
    # row-wise: keep the `keep` strongest neighbours, binarise
    idx = np.argpartition(-sim, min(keep, n - 1), axis=1)[:, :keep]
    a = np.zeros_like(sim)
    np.put_along_axis(a, idx, 1.0, axis=1)
    symmetric: npt.NDArray[np.float64] = np.maximum(a, a.T)
    np.fill_diagonal(symmetric, 1.0)
    return symmetric


def _laplacian(a: np.ndarray) -> np.ndarray:
    d = a.sum(1)
    dinv = 1.0 / np.sqrt(np.maximum(d, 1e-12))
    laplacian: npt.NDArray[np.float64] = np.eye(len(a)) - dinv[:, None] * a * dinv[None, :]
    return laplacian


# Up to this many windows (about 30 s of speech) the eigengap is read on denser graphs (a share of
# 0.3 or 0.5 of the windows as neighbours): sparser ones fall apart into chance clusters of one voice
SHORT_WINDOWS = 40
SHORT_GRID = (0.3, 0.5)
WIDE_GRID = tuple(float(p) for p in np.linspace(0.05, 0.3, 11))
# ... unless the sparser graphs of longer files hear this many voices or more there: a short
# meeting, whose three to six voices the dense graph joins into one to three (bench/speakers/README.md,
# "Meetings": 29.1 -> 23.6% DER at collar 0.25; two voices and short monologues as before)
MANY_VOICES = 3


def _eigengap(emb: np.ndarray, k_max: int, grid: tuple[float, ...]) -> tuple[int, float]:
    """The speaker count by the eigengap of the normalised Laplacian, and the share of neighbours
    of the graph it was read on: of the graphs in ``grid``, the one with the clearest gap."""
    tried: list[tuple[float, int, float]] = []  # (ratio, speakers, p_keep)
    for p_keep in grid:
        vals = np.linalg.eigvalsh(_laplacian(_refined_affinity(emb, p_keep)))[: k_max + 1]
        gaps = np.diff(vals)
        k = int(np.argmax(gaps)) + 1
        tried.append((float(p_keep / max(gaps[k - 1], 1e-6)), k, p_keep))
    _, k, p_keep = min(tried, key=lambda t: t[0])  # the first of the lowest ratios
    return k, p_keep


def _labels(emb: np.ndarray, k: int, p_keep: float) -> np.ndarray:
    if k <= 1:
        return np.zeros(len(emb), dtype=np.int64)
    _, vecs = np.linalg.eigh(_laplacian(_refined_affinity(emb, p_keep)))
    v = vecs[:, :k]
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return kmeans(v, k)


def _spectral(emb: np.ndarray, max_speakers: int, speakers: int | None = None) -> np.ndarray:
    """Labels for emb (n, d) by spectral clustering of a binarised k-nearest-neighbour
    affinity, the neighbour count auto-tuned as in NME-SC (Park et al., 2019): the
    speaker count is the eigengap of the normalised Laplacian (or ``speakers``, given)."""
    n = len(emb)
    k_max = max(1, min(max_speakers, n - 1))
    if speakers is not None:
        k = max(1, min(speakers, n - 1))
        return _labels(emb, k, _eigengap(emb, k, WIDE_GRID)[1])
    if n > SHORT_WINDOWS:
        return _labels(emb, *_eigengap(emb, k_max, WIDE_GRID))
    labels = _labels(emb, *_eigengap(emb, k_max, SHORT_GRID))
    wide = _labels(emb, *_eigengap(emb, k_max, WIDE_GRID))
    return wide if int(wide.max()) + 1 >= MANY_VOICES else labels


def centroids(
    emb: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None, count: int | None = None
) -> np.ndarray:
    """One L2-normalised (weighted) mean per label 0..count-1 (default: the labels present); a label
    with no member gets a zero row."""
    ks = int(labels.max()) + 1 if count is None else count
    w = np.ones(len(emb)) if weights is None else weights
    c = np.zeros((ks, emb.shape[1]))
    for j in range(ks):
        m = labels == j
        if m.any():
            c[j] = (emb[m] * w[m, None]).sum(0)
    normalised: npt.NDArray[np.float64] = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
    return normalised


def between(centres: np.ndarray, i: int) -> float:
    """How like centroid ``i`` is to the nearest positive mix of two other centroids (the norm of its
    projection on the cone they span; 0 when it lies between no two others). A cluster of windows that
    hold two voices lies between theirs; a voice of its own lies apart from every such mix."""
    best = 0.0
    for j in range(len(centres)):
        for k in range(j + 1, len(centres)):
            if i in (j, k):
                continue
            pair = centres[[j, k]]
            gram, dots = pair @ pair.T, pair @ centres[i]
            if abs(np.linalg.det(gram)) < 1e-9:
                continue  # two identical centroids span no plane
            mix = np.linalg.solve(gram, dots)
            if (mix > 0).all():
                best = max(best, float(np.sqrt(max(float(dots @ mix), 0.0))))
    return best


def _compact(labels: np.ndarray) -> np.ndarray:
    _, inv = np.unique(labels, return_inverse=True)
    return inv.reshape(labels.shape)


def cluster_embeddings(
    emb: np.ndarray,
    *,
    max_speakers: int = 8,
    weights: np.ndarray | None = None,
    merge_similarity: float = MERGE_SIMILARITY,
    small_split_similarity: tuple[float, float] = SMALL_SPLIT_SIMILARITY,
    between_similarity: float | None = BETWEEN_SIMILARITY,
    speakers: int | None = None,
) -> np.ndarray:
    """Cluster L2-normalised embeddings (n, d) into speakers; labels 0..k-1.

    ``speakers``: the count is given (bench/speakers/sets.py --oracle-count: what the
    rest of the pipeline reaches when the count is right); the spectral labels for that many, refined,
    nothing merged or folded.

    At most MAX_CLUSTER_WINDOWS evenly spaced embeddings are clustered; every
    embedding is then given the nearest centroid.  Clusters whose centroids have
    cosine similarity >= merge_similarity are merged, clusters holding less
    than MIN_CLUSTER_SHARE of the (weighted) embeddings are folded into the others,
    and of three clusters or more, one lying between two others (:func:`between`
    >= between_similarity) is handed out to the others.
    """
    with single_threaded_blas():
        return _cluster(
            np.asarray(emb, dtype=np.float64),
            max_speakers,
            weights,
            merge_similarity,
            small_split_similarity,
            between_similarity,
            speakers,
        )


def _cluster(
    emb: np.ndarray,
    max_speakers: int,
    weights: np.ndarray | None,
    merge_similarity: float,
    small_split: tuple[float, float],
    between_similarity: float | None,
    speakers: int | None = None,
) -> np.ndarray:
    n = len(emb)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    # an encoder's output for silence may hold NaN or all zeros: such rows say nothing about a voice
    emb = np.where(np.isfinite(emb), emb, 0.0)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    if w.sum() <= 0:
        w = np.ones(n)
    if n < MIN_WINDOWS_TO_SPLIT or max_speakers <= 1:
        return np.zeros(n, dtype=np.int64)
    if n < SMALL_N:
        # too few windows for a stable affinity graph: two speakers only when the two
        # halves of the best 2-means split are clearly different voices
        # (identical windows, e.g. digital silence, leave one side of the split empty)
        labels = kmeans(emb, 2)
        centres = centroids(emb, labels, count=2)
        limit = small_split[0] if n < 12 else small_split[1]
        if np.bincount(labels, minlength=2).min() >= 2 and centres[0] @ centres[1] < limit:
            return _compact(labels)
        return np.zeros(n, dtype=np.int64)
    sel = np.arange(n)
    if n > MAX_CLUSTER_WINDOWS:
        sel = np.linspace(0, n - 1, MAX_CLUSTER_WINDOWS).round().astype(np.int64)
    labels_sel = _spectral(emb[sel], max_speakers, speakers)
    centres = centroids(emb[sel], labels_sel, w[sel])
    labels = (emb @ centres.T).argmax(1)
    for _ in range(3):  # a few k-means refinement steps in embedding space
        centres = centroids(emb, _compact(labels), w)
        labels = (emb @ centres.T).argmax(1)
    labels = _compact(labels)
    if speakers is not None:
        return labels
    # merge look-alike clusters, fold tiny ones, hand out those of windows of two voices
    while labels.max() > 0:
        centres = centroids(emb, labels, w)
        sims = centres @ centres.T
        np.fill_diagonal(sims, -np.inf)
        share = np.array([w[labels == j].sum() for j in range(len(centres))]) / w.sum()
        i, j = np.unravel_index(np.argmax(sims), sims.shape)
        if sims[i, j] >= merge_similarity:
            labels[labels == max(i, j)] = min(i, j)
            labels = _compact(labels)
            continue
        small = int(np.argmin(share))
        if share[small] < MIN_CLUSTER_SHARE:
            others = [c for c in range(len(centres)) if c != small]
            m = labels == small
            labels[m] = np.array(others)[(emb[m] @ centres[others].T).argmax(1)]
            labels = _compact(labels)
            continue
        if between_similarity is not None and len(centres) >= 3:
            mixed = [between(centres, c) for c in range(len(centres))]
            worst = int(np.argmax(mixed))
            if mixed[worst] >= between_similarity:
                others = [c for c in range(len(centres)) if c != worst]
                m = labels == worst
                labels[m] = np.array(others)[(emb[m] @ centres[others].T).argmax(1)]
                labels = _compact(labels)
                continue
        break
    return labels
