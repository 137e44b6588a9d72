"""Cheaper diarization, same turns: the first look (every other window embedded first; one voice
there is the answer) and the segmentation model run only in the windows the changes are read in."""

from __future__ import annotations

import numpy as np
import pytest

from harness import speaker_audio as sa
from transcription.pipeline import speakers as sp
from transcription.pipeline.speakers import changes
from transcription.pipeline.speakers import segmentation as seg
from transcription.pipeline.speakers.encoding import embedding

NL = {"m": lambda: sa.clips("nl", "m"), "v": lambda: sa.clips("nl", "v")}


class Counting:
    """The real encoder, counting the windows it embeds."""

    def __init__(self, encoder: sp.SpeakerEncoder):
        self.encoder, self.windows = encoder, 0
        self.name, self.dim = encoder.name, encoder.dim
        self.merge_similarity = encoder.merge_similarity
        self.small_split_similarity = encoder.small_split_similarity
        self.between_similarity = encoder.between_similarity

    def features(self, samples: np.ndarray) -> np.ndarray:
        return self.encoder.features(samples)

    def embed_frames(self, frames: np.ndarray, lengths=None) -> np.ndarray:
        self.windows += len(frames)
        return self.encoder.embed_frames(frames, lengths)


@pytest.fixture(scope="module")
def one_voice(audio_cache):
    return sa.conversation(
        audio_cache / "first-look-one.wav", {"m": NL["m"]()}, n_clips=20, seed=5, cache=audio_cache / "clips"
    )


@pytest.fixture(scope="module")
def two_voices(audio_cache):
    voices = {"m": NL["m"](), "v": NL["v"]()}
    return sa.conversation(
        audio_cache / "first-look-two.wav",
        voices,
        n_clips=24,
        seed=1,
        order="random",
        gap=(0.0, 0.4),
        cache=audio_cache / "clips",
    )


def test_known_windows_are_not_embedded_again_and_keep_their_places(encoder, one_voice):
    regions = sp.find_speech(one_voice.path).for_diarization()
    full, windows, _ = embedding.embed_regions(one_voice.path, regions, encoder)
    first, first_windows, _ = embedding.embed_regions(
        one_voice.path, regions, encoder, stride=embedding.FIRST_LOOK_STRIDE
    )
    counting = Counting(encoder)
    again, again_windows, _ = embedding.embed_regions(one_voice.path, regions, counting, known=(first, first_windows))
    assert [(w.start, w.end, w.own_start, w.own_end) for w in again_windows] == [
        (w.start, w.end, w.own_start, w.own_end) for w in windows
    ]
    assert len(first_windows) < 0.6 * len(windows)
    assert counting.windows == len(windows) - len(first_windows)  # the known ones were not embedded
    np.testing.assert_array_equal(again, full)  # the same embeddings, in the same order, to the bit


def _diarized(path, encoder, monkeypatch, first_look: bool) -> tuple[list, int]:
    counting = Counting(encoder)
    monkeypatch.setattr(sp, "FIRST_LOOK_MIN_SPEECH_S", 0.0 if first_look else float("inf"))
    return sp.diarize(path, encoder=counting), counting.windows


def test_the_first_look_hears_one_voice_from_half_the_windows(encoder, one_voice, monkeypatch):
    whole, whole_windows = _diarized(one_voice.path, encoder, monkeypatch, first_look=False)
    looked, looked_windows = _diarized(one_voice.path, encoder, monkeypatch, first_look=True)
    assert {t.speaker for t in looked} == {1}
    assert looked == whole
    assert looked_windows < 0.6 * whole_windows


def test_where_the_first_look_hears_two_voices_the_whole_grid_gives_the_same_turns(encoder, two_voices, monkeypatch):
    whole, whole_windows = _diarized(two_voices.path, encoder, monkeypatch, first_look=False)
    looked, looked_windows = _diarized(two_voices.path, encoder, monkeypatch, first_look=True)
    assert len({t.speaker for t in looked}) == 2
    assert looked == whole
    assert looked_windows == whole_windows  # every window embedded once, none twice


def test_the_model_run_near_the_changes_reads_what_the_whole_file_gives(two_voices):
    model = seg.default_segmentation()
    assert model is not None
    turns = sp.diarize(two_voices.path)
    times = changes.change_times(turns)
    assert len(times) >= 3
    whole = model.activity_of_wav(two_voices.path)
    near = model.activity_of_wav(two_voices.path, near=times)
    assert len(near.starts) < len(whole.starts)
    for t in times:
        a, b = whole.window_near(t), near.window_near(t)
        assert whole.starts[a] == near.starts[b]
        np.testing.assert_array_equal(whole.probabilities[a], near.probabilities[b])
    assert changes.redraw_changes(turns, near) == changes.redraw_changes(turns, whole)
