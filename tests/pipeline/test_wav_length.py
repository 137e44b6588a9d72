"""The length a job is charged for is counted from the samples in the pipeline's WAV, never from
its header's sizes (issue 41); a preview decided after decoding cuts that WAV in place."""

import struct

import numpy as np

from harness.media_files import write_wav
from transcription.pipeline.media import wav


def test_the_length_is_the_samples_in_the_file_whatever_the_header_says(tmp_path):
    path = write_wav(tmp_path / "a.wav", np.zeros(16000 * 3))
    data = bytearray(path.read_bytes())
    at = data.find(b"data")
    data[at + 4 : at + 8] = struct.pack("<I", 16000 * 2)  # the header now claims one second
    data[4:8] = struct.pack("<I", 36 + 16000 * 2)
    path.write_bytes(data)
    assert wav.wav_duration(path) == 1.0
    assert wav.decoded_seconds(path) == 3.0


def test_truncate_keeps_the_first_seconds_and_a_header_that_says_so(tmp_path):
    samples = np.linspace(-0.5, 0.5, 16000 * 5)
    path = write_wav(tmp_path / "a.wav", samples)
    wav.truncate(path, 2)
    assert wav.decoded_seconds(path) == wav.wav_duration(path) == 2.0
    assert path.stat().st_size == 44 + 16000 * 2 * 2
    np.testing.assert_allclose(wav.read_slice(path), samples[: 16000 * 2], atol=1e-4)
    wav.truncate(path, 10)  # longer than the file: nothing changes
    assert wav.decoded_seconds(path) == 2.0
