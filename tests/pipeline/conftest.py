"""Fixtures of the speaker tests (test_speakers.py, test_speakers_apart.py): the encoder, loaded once,
and a folder for the synthetic conversations they share."""

from pathlib import Path

import pytest

from transcription.pipeline import speakers as sp


@pytest.fixture(scope="session")
def encoder() -> sp.SpeakerEncoder:
    """The service's encoder (CAM++)."""
    return sp.default_encoder()


@pytest.fixture(scope="session")
def audio_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("speaker-audio")
