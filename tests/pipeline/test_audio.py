"""audio.py against real ffmpeg/ffprobe (no mocks)."""

from __future__ import annotations

import os
import tracemalloc
import wave

import numpy as np
import pytest

from harness.media_files import media_duration, write_wav
from tests.support import ends_within
from transcription.pipeline.media import audio
from transcription.pipeline.media.audio import AudioError
from transcription.pipeline.media.wav import wav_duration


@pytest.fixture(scope="module")
def media(media_server):
    return media_server.folder


# --------------------------------------------------------------------------- cut_media


def _streams(path):
    import json
    import subprocess

    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)],
        capture_output=True,
        check=True,
    ).stdout
    return json.loads(out)


def test_cut_media_keeps_the_beginning_with_picture_and_sound(media, tmp_path):
    whole = _streams(media / "speech.mp4")
    assert float(whole["format"]["duration"]) > 3
    cut = audio.cut_media(media / "speech.mp4", tmp_path / "preview.mp4", seconds=2, timeout=60)
    info = _streams(cut)
    assert {s["codec_type"] for s in info["streams"]} == {"video", "audio"}
    assert 1.9 <= float(info["format"]["duration"]) < float(whole["format"]["duration"]) - 0.5


def test_cut_media_of_garbage_is_a_readable_error(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_text("not a video")
    with pytest.raises(AudioError, match="The video could not be cut: "):
        audio.cut_media(bad, tmp_path / "out.mp4", seconds=2, timeout=60)
    assert not (tmp_path / "out.mp4").exists()


# --------------------------------------------------------------------------- probe_audio


def test_probe_audio_mp4(media):
    # the audio track (the speech), not the slightly longer video track
    assert audio.probe_audio(media / "speech.mp4") == pytest.approx(media_duration(media / "speech.wav"), abs=0.05)


def test_probe_audio_wav(media):
    assert audio.probe_audio(media / "sine.wav") == pytest.approx(5.0, abs=0.01)


def test_probe_audio_video_without_audio(media):
    with pytest.raises(AudioError) as e:
        audio.probe_audio(media / "video_only.mp4")
    assert str(e.value) == "The file has no audio track."


def test_probe_audio_unreadable(tmp_path):
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"this is not a video\n" * 100)
    for path in (junk, tmp_path / "missing.mp4"):
        with pytest.raises(AudioError) as e:
            audio.probe_audio(path)
        assert str(e.value) == "The file could not be read as audio or video."


# --------------------------------------------------------------------------- to_wav


def _wav_params(path):
    with wave.open(str(path), "rb") as w:
        return w.getframerate(), w.getnchannels(), w.getsampwidth(), w.getnframes() / w.getframerate()


def test_to_wav_16k_mono(media, tmp_path):
    out = audio.to_wav(media / "speech.mp4", tmp_path / "out.wav", timeout=60)
    rate, channels, width, seconds = _wav_params(out)
    assert (rate, channels, width) == (16000, 1, 2)
    assert seconds == pytest.approx(media_duration(media / "speech.wav"), abs=0.05)
    assert wav_duration(out) == pytest.approx(seconds)


def test_to_wav_stereo_44k_and_preview(media, tmp_path):
    out = audio.to_wav(media / "sine.wav", tmp_path / "preview.wav", timeout=60, max_seconds=2)
    rate, channels, width, seconds = _wav_params(out)
    assert (rate, channels, width) == (16000, 1, 2)
    assert seconds == pytest.approx(2.0, abs=0.01)


def test_to_wav_no_audio_track(media, tmp_path):
    with pytest.raises(AudioError) as e:
        audio.to_wav(media / "video_only.mp4", tmp_path / "x.wav", timeout=60)
    assert str(e.value) == "The file has no audio track."
    assert not (tmp_path / "x.wav").exists()


def test_to_wav_garbage_reports_ffmpeg_line(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(AudioError) as e:
        audio.to_wav(junk, tmp_path / "x.wav", timeout=60)
    msg = str(e.value)
    assert msg.startswith("The audio could not be converted: ")
    assert "junk.bin" in msg or "Invalid data" in msg  # ffmpeg's last stderr line
    assert not (tmp_path / "x.wav").exists()


def test_to_wav_timeout_kills_ffmpeg(tmp_path):
    fifo = tmp_path / "never.fifo"
    os.mkfifo(fifo)  # ffmpeg blocks opening it: nobody ever writes
    with ends_within(1.5, "a conversion past its timeout"), pytest.raises(AudioError) as e:
        audio.to_wav(fifo, tmp_path / "x.wav", timeout=1.5)
    assert str(e.value) == "Converting the audio took longer than 1.5 seconds."
    # unblock any opener that might still exist (there should be none: ffmpeg was killed)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    os.close(fd)


# --------------------------------------------------------------------------- wav_duration / plan_chunks

SILENCES = ((24.0, 25.5), (50.0, 51.5))


@pytest.fixture(scope="module")
def gapped_wav(media):
    return media / "gapped.wav"  # 70 s, quiet at 24-25.5 and 50-51.5 (see harness/media_files.py)


def _assert_cover(chunks, total, max_chunk):
    assert chunks[0][0] == 0.0
    assert chunks[-1][1] == pytest.approx(total)
    for (_, b), (c, _) in zip(chunks, chunks[1:]):
        assert b == c  # contiguous
    for a, b in chunks:
        assert 0 < b - a <= max_chunk + 1e-9


def test_wav_duration(gapped_wav):
    assert wav_duration(gapped_wav) == pytest.approx(70.0)


@pytest.mark.parametrize("search_window", [10.0, 60.0])
def test_plan_chunks_cuts_at_silences(gapped_wav, search_window):
    chunks = audio.plan_chunks(gapped_wav, max_chunk=30.0, search_window=search_window)
    _assert_cover(chunks, 70.0, 30.0)
    assert len(chunks) == 3
    cuts = [b for _, b in chunks[:-1]]
    for cut, (lo, hi) in zip(cuts, SILENCES):
        assert lo <= cut <= hi, (cut, lo, hi)


def test_plan_chunks_short_file(media, tmp_path):
    out = audio.to_wav(media / "speech.mp4", tmp_path / "s.wav", timeout=60)
    d = wav_duration(out)
    assert audio.plan_chunks(out) == [(0.0, d)]
    assert audio.plan_chunks(out, max_chunk=d + 0.01) == [(0.0, d)]


def test_plan_chunks_no_silence_still_bounded(tmp_path):
    rate = 16000
    t = np.arange(65 * rate) / rate
    path = write_wav(tmp_path / "tone.wav", 0.3 * np.sin(2 * np.pi * 300 * t), rate)
    chunks = audio.plan_chunks(path, max_chunk=20.0, search_window=5.0)
    _assert_cover(chunks, 65.0, 20.0)
    assert len(chunks) == 4


def _write_long_wav(path, total, silence, rate=16000):
    """Tone + noise written 10 s at a time, near-silent inside ``silence``."""
    rng = np.random.default_rng(2)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        for block in range(int(total // 10)):
            t = block * 10 + np.arange(10 * rate) / rate
            x = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(t.size)
            quiet = (t >= silence[0]) & (t < silence[1])
            x[quiet] = 0.001 * rng.standard_normal(int(quiet.sum()))
            w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def test_plan_chunks_memory_does_not_grow_with_length(tmp_path):
    # 40 minutes at 16 kHz (77 MB of samples); chunks of 5 minutes
    path = _write_long_wav(tmp_path / "long.wav", 2400.0, (290.0, 292.0))
    tracemalloc.start()
    try:
        chunks = audio.plan_chunks(path, max_chunk=300.0, search_window=20.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    _assert_cover(chunks, 2400.0, 300.0)
    assert 290.0 <= chunks[0][1] <= 292.0
    assert peak < 2 * 1024**2, peak  # one 0.5 s frame at a time, not the file


def test_plan_chunks_unreadable(tmp_path):
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF....nonsense")
    with pytest.raises(AudioError):
        audio.plan_chunks(junk)
