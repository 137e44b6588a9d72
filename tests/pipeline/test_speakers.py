"""Speaker diarization: the torch-free encoder, clustering, and real two-voice recordings."""

from __future__ import annotations

import pickle
import wave
import zipfile

import numpy as np
import pytest

from harness import speaker_audio as sa
from transcription.pipeline import speakers as sp
from transcription.pipeline.speakers import clustering, speech
from transcription.pipeline.speakers import turns as speaker_turns
from transcription.pipeline.speakers.encoding import embedding, weights
from transcription.pipeline.types import Segment, SpeakerTurn, Word

# The recordings and tools come from Debian packages that `make test` installs
# (bin/install-system-packages); a missing one fails these tests rather than skipping them.


NL = {"m": lambda: sa.clips("nl", "m"), "v": lambda: sa.clips("nl", "v")}


# --------------------------------------------------------------------------
# weights without torch (the zip format's refusals: test_campplus.py)
# --------------------------------------------------------------------------


def test_a_weights_path_that_is_not_a_file_is_refused_by_name(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        sp.diarize(tmp_path / "any.wav", options=sp.SpeakerOptions(weights=tmp_path / "missing.pt"))


def test_loader_refuses_a_checkpoint_that_is_not_a_state_dict(tmp_path):
    path = tmp_path / "list.pt"
    with zipfile.ZipFile(path, "w") as z:  # the zip layout, holding a list and no storages
        z.writestr("archive/data.pkl", pickle.dumps([1, 2], protocol=2))
    with pytest.raises(ValueError, match="not a torch state dict"):
        weights.load_torch_state_dict(path)


def test_loader_refuses_what_is_not_a_zip_checkpoint_by_name(tmp_path):
    path = tmp_path / "old.pt"
    path.write_bytes(pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2))  # the legacy layout's magic number
    with pytest.raises(ValueError, match="old.pt: not a torch checkpoint of the zip format"):
        weights.load_torch_state_dict(path)


# --------------------------------------------------------------------------
# pieces: VAD regions, clustering, smoothing
# --------------------------------------------------------------------------


def test_regions_from_probabilities_hysteresis_and_merging():
    step = 512 / 16000
    probs = np.zeros(200, dtype=np.float32)
    probs[10:40] = 0.9
    probs[40:42] = 0.4  # above neg_threshold: still speech
    probs[42:60] = 0.9
    probs[63:90] = 0.9  # 3-frame (96 ms) gap: merged
    probs[120:125] = 0.9  # 160 ms: too short, dropped
    probs[150:180] = 0.9
    regions = speech.regions_from_probs(
        probs, duration=200 * step, threshold=0.5, neg_threshold=None, min_silence_s=0.2, min_speech_s=0.25, pad_s=0.0
    )
    assert [(round(s / step), round(e / step)) for s, e in regions] == [(10, 90), (150, 180)]


def test_long_regions_are_read_in_pieces():
    pieces = embedding.split_regions([(0.0, 95.0), (100.0, 101.0)])
    assert all(p.end - p.start <= embedding.MAX_REGION_S + 1e-9 for p in pieces)
    assert [p.after_pause for p in pieces] == [True, False, False, False, True]
    assert pieces[-1].start == 100.0


def test_wav_is_read_in_blocks(tmp_path):
    path = tmp_path / "a.wav"
    sa.write_wav(path, np.zeros(16000 * 3, dtype=np.float32))
    from transcription.pipeline.media import wav

    blocks = list(wav.read_blocks(path, 16000))
    assert [len(b) for b in blocks] == [16000, 16000, 16000]


def _blobs(rng, sizes, dim=256, spread=0.35):
    centres = rng.random((len(sizes), dim)) ** 3
    xs, ys = [], []
    for k, n in enumerate(sizes):
        x = centres[k] + spread * rng.random((n, dim)) ** 3
        xs.append(x)
        ys += [k] * n
    x = np.concatenate(xs)
    return x / np.linalg.norm(x, axis=1, keepdims=True), np.array(ys)


@pytest.mark.parametrize("sizes", [[60, 40], [50, 30, 20], [25, 25, 25, 25]])
def test_clustering_finds_the_number_of_groups(sizes):
    x, y = _blobs(np.random.default_rng(len(sizes)), sizes)
    labels = clustering.cluster_embeddings(x)
    assert labels.max() + 1 == len(sizes)
    # perfect up to renaming
    assert len({(a, b) for a, b in zip(labels, y)}) == len(sizes)


def test_clustering_one_group_is_one_speaker():
    x, _ = _blobs(np.random.default_rng(7), [120])
    assert set(clustering.cluster_embeddings(x)) == {0}


def test_clustering_respects_max_speakers_and_scales():
    x, y = _blobs(np.random.default_rng(3), [1800, 1200])  # beyond MAX_CLUSTER_WINDOWS
    labels = clustering.cluster_embeddings(x)
    assert labels.max() == 1 and (labels == labels[0]).sum() in (1800, 1200)
    assert set(clustering.cluster_embeddings(x, max_speakers=1)) == {0}


def test_viterbi_keeps_changes_at_pauses_and_drops_blips_inside_speech():
    scores = np.array([[1, 0], [1, 0], [0.4, 0.6], [1, 0], [0, 1], [0, 1]], dtype=float)
    cost = np.array([0, 0.3, 0.3, 0.3, 0.02, 0.3])
    assert list(speaker_turns.viterbi(scores, cost)) == [0, 0, 0, 0, 1, 1]


# --------------------------------------------------------------------------
# diarize on real recordings
# --------------------------------------------------------------------------


def _check_turns(turns):
    assert turns == sorted(turns, key=lambda t: t.start)
    seen = []
    for t in turns:
        assert t.end > t.start
        if t.speaker not in seen:
            seen.append(t.speaker)
    assert seen == list(range(1, len(seen) + 1))  # numbered in order of first appearance
    for speaker in seen:  # two voices may overlap at a change of speaker, a voice never itself
        own = [t for t in turns if t.speaker == speaker]
        for a, b in zip(own, own[1:]):
            assert a.end < b.start


@pytest.mark.parametrize(
    "seed,order,gap",
    [(0, "alternate", (0.3, 1.0)), (1, "random", (0.3, 1.0)), (202, "random", (0.0, 0.15))],
    ids=["alternating", "random-order", "short-pauses"],
)
def test_two_actors_taking_turns(encoder, audio_cache, seed, order, gap):
    fx = sa.conversation(
        audio_cache / f"two-{seed}.wav",
        {"m": NL["m"](), "v": NL["v"]()},
        n_clips=24,
        seed=seed,
        order=order,
        gap=gap,
        cache=audio_cache / "clips",
    )
    turns = sp.diarize(fx.path, encoder=encoder)
    _check_turns(turns)
    score = sa.score(fx.turns, turns)
    assert score["n_speakers"] == 2
    assert score["confusion"] <= 0.05, score
    assert score["missed"] < 0.3 and score["false_alarm"] < 0.1, score


def test_a_voice_print_matches_its_speaker_and_not_the_other(encoder, audio_cache):
    fx = sa.conversation(
        audio_cache / "two-print.wav",
        {"m": NL["m"](), "v": NL["v"]()},
        n_clips=16,
        seed=3,
        order="alternate",
        cache=audio_cache / "clips",
    )
    spans = {who: [(s, e) for s, e, w in fx.turns if w == who] for who in "mv"}
    halves = {
        who: (
            sp.voice_print(fx.path, spans[who][::2], encoder=encoder),
            sp.voice_print(fx.path, spans[who][1::2], encoder=encoder),
        )
        for who in "mv"
    }
    for print_a, print_b in halves.values():
        assert print_a.shape == print_b.shape == (encoder.dim,)
        assert abs(float(np.linalg.norm(print_a)) - 1.0) < 1e-5
    same = min(float(a @ b) for a, b in halves.values())
    other = float(halves["m"][0] @ halves["v"][0])
    assert same - other > 0.05, (same, other)
    with pytest.raises(ValueError, match="too little speech"):
        sp.voice_print(fx.path, [(spans["m"][0][0], spans["m"][0][0] + 0.2)], encoder=encoder)


@pytest.mark.parametrize("who", ["m", "v"])
def test_one_voice_is_one_speaker(encoder, audio_cache, who):
    fx = sa.conversation(
        audio_cache / f"one-{who}.wav", {who: NL[who]()}, n_clips=20, seed=5, cache=audio_cache / "clips"
    )
    turns = sp.diarize(fx.path, encoder=encoder)
    assert {t.speaker for t in turns} == {1}
    assert sa.score(fx.turns, turns)["missed"] < 0.3


def test_four_voices(encoder, audio_cache):
    voices = {f"{lang}-{who}": sa.clips(lang, who) for lang in ("nl", "cs") for who in "mv"}
    fx = sa.conversation(
        audio_cache / "four.wav", voices, n_clips=32, seed=7, order="random", cache=audio_cache / "clips"
    )
    turns = sp.diarize(fx.path, encoder=encoder)
    score = sa.score(fx.turns, turns)
    assert score["n_speakers"] == 4 and score["confusion"] <= 0.05, score
    assert {t.speaker for t in sp.diarize(fx.path, encoder=encoder, max_speakers=2)} <= {1, 2}


def test_two_synthetic_voices(encoder, audio_cache):
    fx = sa.espeak_conversation(audio_cache / "espeak.wav", cache=audio_cache / "espeak")
    turns = sp.diarize(fx.path, encoder=encoder)
    score = sa.score(fx.turns, turns)
    assert score["n_speakers"] == 2 and score["confusion"] <= 0.05, score


def test_silence_has_no_turns(encoder, tmp_path):
    path = tmp_path / "silence.wav"
    sa.write_wav(path, np.random.default_rng(0).normal(0, 1e-4, 16000 * 5).astype(np.float32))
    assert sp.diarize(path, encoder=encoder) == []


def test_rejects_other_formats(tmp_path):
    path = tmp_path / "stereo.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0" * 6400)
    with pytest.raises(ValueError, match="mono"):
        sp.diarize(path)


# --------------------------------------------------------------------------
# assign_speakers
# --------------------------------------------------------------------------


def _seg(s, e, text="x"):
    return Segment(start=s, end=e, text=text, words=[Word(s, e, text)])


def test_assign_by_largest_overlap_and_renumber():
    turns = [SpeakerTurn(0, 4, 2), SpeakerTurn(4, 10, 1), SpeakerTurn(10, 12, 2)]
    segs = [_seg(0.5, 3), _seg(3, 8), _seg(9, 12), _seg(11, 12)]
    out = sp.assign_speakers(segs, turns)
    # raw speakers 2, 1, 2 (9-12: 1 s of 1, 2 s of 2), 2 -> renumbered 1, 2, 1, 1
    assert [s.speaker for s in out] == [1, 2, 1, 1]
    assert [s.text for s in out] == ["x"] * 4 and out[0].words == segs[0].words
    assert all(s.speaker is None for s in segs)  # inputs untouched


def test_assign_nearest_turn_when_none_overlaps():
    turns = [SpeakerTurn(0, 2, 1), SpeakerTurn(5, 6, 2)]
    out = sp.assign_speakers([_seg(2.5, 3.0), _seg(4.2, 4.8), _seg(7, 8)], turns)
    assert [s.speaker for s in out] == [1, 2, 2]


def test_assign_without_turns():
    assert [s.speaker for s in sp.assign_speakers([_seg(0, 1)], [])] == [None]
    assert sp.assign_speakers([], [SpeakerTurn(0, 1, 1)]) == []


def test_short_regions_take_the_nearest_speaker():
    turns = [SpeakerTurn(1.0, 3.0, 1), SpeakerTurn(5.0, 7.0, 2)]
    regions = [(0.2, 0.4), (1.0, 3.0), (3.2, 3.5), (4.6, 4.9), (5.0, 7.0), (9.0, 9.2)]
    out = speaker_turns.fit_to_regions(turns, regions)
    assert [(t.start, t.end, t.speaker) for t in out] == [
        (0.2, 0.4, 1),
        (1.0, 3.0, 1),
        (3.2, 3.5, 1),
        (4.6, 4.9, 2),
        (5.0, 7.0, 2),
        (9.0, 9.2, 2),
    ]


def test_turns_are_laid_over_the_speech_with_its_soft_ends():
    # the encoder heard 1.2-2.8 (speaker 1) and 3.4-5.0 (speaker 2); the speech as a listener marks
    # it runs 1.0-5.3 with no pause, then 5.6-5.9, and nothing is spoken at 6-7 where a turn was
    turns = [SpeakerTurn(1.2, 2.8, 1), SpeakerTurn(3.4, 5.0, 2), SpeakerTurn(6.0, 7.0, 2)]
    out = speaker_turns.fit_to_regions(turns, [(1.0, 5.3), (5.6, 5.9)])
    assert [(t.start, t.end, t.speaker) for t in out] == [(1.0, 3.1, 1), (3.1, 5.3, 2), (5.6, 5.9, 2)]


def test_empty_wav_has_no_turns(encoder, tmp_path):
    path = tmp_path / "empty.wav"
    sa.write_wav(path, np.zeros(0, dtype=np.float32))
    assert sp.diarize(path, encoder=encoder) == []


def _spoken(text: str, start: float, step: float = 0.3) -> Segment:
    words = [
        Word(round(start + k * step, 3), round(start + (k + 1) * step - 0.05, 3), " " + w)
        for k, w in enumerate(text.split())
    ]
    return Segment(start=start, end=words[-1].end, text=text, words=words)


def test_a_turn_inside_a_segment_splits_it_at_the_word_where_the_voice_changes():
    # the recogniser heard one segment; the second voice answers "Yes, sure." from 1.2 s
    segment = _spoken("Are you coming tonight? Yes, sure. Great.", 0.0)
    turns = [SpeakerTurn(0.0, 1.18, 1), SpeakerTurn(1.18, 1.78, 2), SpeakerTurn(1.78, 3.0, 1)]
    out = sp.assign_speakers([segment], turns)
    assert [(s.text, s.speaker) for s in out] == [
        ("Are you coming tonight?", 1),
        ("Yes, sure.", 2),
        ("Great.", 1),
    ]
    assert [w for s in out for w in s.words] == segment.words
    assert out[1].start == segment.words[4].start and out[1].end == segment.words[5].end


def test_a_subtitle_cue_with_two_voices_has_one_dashed_line_per_voice():
    from transcription.pipeline.transcripts.captions import build_cues

    # a quick exchange heard as one segment: too fast for a cue per turn
    segment = _spoken("Ready? Yes. Then go now. Okay.", 0.0)
    at = [w.start for w in segment.words]
    turns = [
        SpeakerTurn(0, at[1], 1),
        SpeakerTurn(at[1], at[2], 2),
        SpeakerTurn(at[2], at[5], 1),
        SpeakerTurn(at[5], 3, 2),
    ]
    cues = build_cues(sp.assign_speakers([segment], turns), language="en")
    assert cues[0].lines == ["- Ready?", "- Yes."]
    assert all(not line.startswith("- ") for cue in cues[1:] for line in cue.lines)
