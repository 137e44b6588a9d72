"""CTranslate2 translation packages: fetched from a package index, checked, unpacked, listed.

Nothing here knows about Django: the index address and the folder come in as arguments.

    entries = fetch_index("https://…/index.json")           # the Argos Translate package index
    folder = install("en", "de", index_url, root)            # root/en-de/{model/, sentencepiece.model, metadata.json}
    installed(root)                                          # {"en-de": root/"en-de", ...}

The index is the Argos Translate one (argospm-index): a JSON list of packages, each with
``from_code``, ``to_code``, ``package_version`` and ``links`` (download addresses), and, where the
index gives one, ``sha256`` (checked when present). A package (``.argosmodel``) is a zip holding one
folder with ``model/`` (a CTranslate2 model: ``model.bin`` and its vocabulary), ``sentencepiece.model``
(source and target share it) and ``metadata.json``. A download is checked (checksum when the index
gives one, a readable zip, that layout, no path leaving the folder) before anything is unpacked, and
unpacked into a temporary folder renamed into place, so a broken download never replaces a working
package.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from transcription.pipeline.recognition.languages import short_code

__all__ = ["DEFAULT_INDEX", "PackageError", "fetch_index", "find_package", "install", "installed"]

DEFAULT_INDEX = "https://raw.githubusercontent.com/argosopentech/argospm-index/main/index.json"
TIMEOUT = 60.0  # seconds without an answer before a download is given up
REQUIRED = ("model/model.bin", "sentencepiece.model", "metadata.json")


class PackageError(Exception):
    """Installing a package failed; ``str(e)`` says why, for the operator."""


def _get(url: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - an operator's index
            body: bytes = response.read()
            return body
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise PackageError(f"could not download {url}: {reason}") from error


def fetch_index(url: str = DEFAULT_INDEX, *, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
    """The index's package entries."""
    try:
        entries = json.loads(_get(url, timeout))
    except ValueError as error:
        raise PackageError(f"the package index at {url} is not JSON") from error
    if not isinstance(entries, list):
        raise PackageError(f"the package index at {url} is not a list of packages")
    return [entry for entry in entries if isinstance(entry, dict) and entry.get("links")]


def find_package(entries: list[dict[str, Any]], source: str, target: str) -> dict[str, Any] | None:
    """The newest package for ``source`` -> ``target`` in the index, or None."""
    matches = [
        entry
        for entry in entries
        if short_code(str(entry.get("from_code", ""))) == short_code(source)
        and short_code(str(entry.get("to_code", ""))) == short_code(target)
    ]

    def version(entry: dict[str, Any]) -> tuple[int, ...]:
        return tuple(int(part) for part in str(entry.get("package_version", "0")).split(".") if part.isdigit())

    return max(matches, key=version, default=None)


def _check(archive: Path, entry: dict[str, Any]) -> str:
    """The package's top folder inside ``archive`` after checking it; PackageError when not sound."""
    expected = str(entry.get("sha256") or entry.get("checksum") or "").lower()
    if expected:
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != expected:
            raise PackageError(f"the download's SHA-256 is {digest}, the index says {expected}")
    try:
        with zipfile.ZipFile(archive) as package:
            broken = package.testzip()
            names = package.namelist()
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise PackageError(f"the download is not a readable package (zip): {error}") from error
    if broken:
        raise PackageError(f"the package is damaged: {broken} does not match its checksum")
    if any(name.startswith("/") or ".." in Path(name).parts for name in names):
        raise PackageError("the package holds a path outside its folder")
    tops = {name.split("/", 1)[0] for name in names if "/" in name}
    if len(tops) != 1:
        raise PackageError("the package does not hold exactly one folder")
    top = tops.pop()
    missing = [name for name in REQUIRED if f"{top}/{name}" not in names]
    if missing:
        raise PackageError(f"the package lacks {', '.join(missing)}")
    return top


def install(source: str, target: str, index_url: str, root: Path, *, timeout: float = TIMEOUT) -> Path:
    """Download, check and unpack the ``source`` -> ``target`` package into ``root/<source>-<target>``
    (replacing an older one only once the new one is sound); returns that folder."""
    source, target = short_code(source), short_code(target)
    entry = find_package(fetch_index(index_url, timeout=timeout), source, target)
    if entry is None:
        raise PackageError(f"the package index at {index_url} has no {source}-{target} package")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".install-") as work:
        archive = Path(work) / "package.zip"
        archive.write_bytes(_get(str(entry["links"][0]), timeout))
        top = _check(archive, entry)
        with zipfile.ZipFile(archive) as package:
            package.extractall(Path(work) / "unpacked")
        unpacked = Path(work) / "unpacked" / top
        metadata = json.loads((unpacked / "metadata.json").read_text(encoding="utf-8") or "{}")
        metadata.setdefault("from_code", source)
        metadata.setdefault("to_code", target)
        metadata["package_version"] = entry.get("package_version", metadata.get("package_version"))
        metadata["installed_from"] = str(entry["links"][0])
        (unpacked / "metadata.json").write_text(json.dumps(metadata, indent=2), encoding="utf-8")
        folder = root / f"{source}-{target}"
        old = root / f".old-{source}-{target}"
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            folder.rename(old)
        unpacked.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    return folder


def installed(root: Path) -> dict[str, str]:
    """{"en-de": folder} for every sound package under ``root``."""
    found: dict[str, str] = {}
    root = Path(root)
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        if folder.name.startswith(".") or not all((folder / name).is_file() for name in REQUIRED):
            continue
        try:
            metadata = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
            pair = f"{short_code(metadata['from_code'])}-{short_code(metadata['to_code'])}"
        except (ValueError, KeyError, TypeError, OSError):
            continue
        found[pair] = str(folder)
    return found
