"""Burning subtitles into 60 s of 720p: the service's burn stage against a bare ffmpeg command.

For each quality (default 720p, hd 1080p, uhd 2160p) and each repeat, in alternating order:

- **ours**: ``transcription.pipeline.burn.burn()`` exactly as the burn worker calls it (ffprobe,
  ASS file written with pysubs2, ffmpeg with ``-progress`` read line by line, progress callback);
- **bare**: one ffmpeg command doing the same encode: the same scale + libass filter graph over
  the same ASS file, libx264 veryfast CRF 21 yuv420p, AAC 128 kb/s, MP4 with faststart.

Overhead = ours / bare - 1, on wall-clock time and on the CPU time of the child processes
(``RUSAGE_CHILDREN``), the steadier figure on a shared machine. ``speed`` = encode time / video
length (0.5 = twice as fast as real time).

The source is generated once with lavfi (``testsrc2``, 1280x720, 30 fps, moving picture, with a
sine tone) into ``--folder``; the cues are two-line subtitles every 3 s, as a talk would have.

    python bench/burn/run.py                     # 3 repeats of each quality
    python bench/burn/run.py --repeats 1 --qualities default hd
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from transcription.pipeline import burn as burn_stage  # noqa: E402
from transcription.pipeline.transcripts.captions import Cue  # noqa: E402

SECONDS = 60
SOURCE_SIZE = "1280x720"
FPS = 30

LINES = [
    ("Good morning, and welcome to the weekly", "planning meeting of the whole team."),
    ("Today we look at the budget for the", "third quarter and the hiring plan."),
    ("The numbers from last month were", "better than anyone had expected."),
    ("Sales grew by twelve percent,", "mostly in the north of the country."),
]


def cues() -> list[Cue]:
    """A two-line cue every 3 s (2.6 s on screen), 20 in 60 s."""
    return [Cue(start, start + 2.6, list(LINES[i % len(LINES)])) for i, start in enumerate(range(0, SECONDS, 3))]


def make_source(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"source-{SECONDS}s-720p.mp4"
    if not source.exists():
        partial = source.with_suffix(".tmp.mp4")
        subprocess.run(
            [
                "ffmpeg",
                "-nostdin",
                "-v",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                f"testsrc2=s={SOURCE_SIZE}:r={FPS}:d={SECONDS}",
                "-f",
                "lavfi",
                "-i",
                f"sine=f=440:sample_rate=48000:d={SECONDS}",
                "-c:v",
                "libx264",
                "-preset",
                "medium",
                "-crf",
                "23",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "aac",
                "-b:a",
                "128k",
                "-shortest",
                str(partial),
            ],
            check=True,
            timeout=1800,
        )
        partial.rename(source)
    return source


def bare_command(source: Path, ass: Path, output: Path, width: int, height: int) -> list[str]:
    """The same encode typed by hand: what an operator would run without the service."""
    return [
        "ffmpeg",
        "-nostdin",
        "-v",
        "error",
        "-y",
        "-i",
        str(source),
        "-map",
        "0:v:0",
        "-map",
        "0:a:0",
        "-vf",
        f"scale={width}:{height}:flags=lanczos,setsar=1,subtitles=filename={ass}",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-crf",
        "21",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
        "-b:a",
        "128k",
        "-movflags",
        "+faststart",
        str(output),
    ]


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of child processes) of fn()."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def probe_height(path: Path) -> int:
    out = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=height",
            "-of",
            "csv=p=0",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return int(out.strip())


def bench_quality(quality: str, source: Path, folder: Path, repeats: int) -> dict:
    info = burn_stage.probe_video(source)
    width, height = burn_stage.output_size(info.width, info.height, quality)
    subtitles = cues()
    ass = burn_stage.write_ass(subtitles, folder / f"bare-{quality}.ass", width=width, height=height)
    ours_out, bare_out = folder / f"ours-{quality}.mp4", folder / f"bare-{quality}.mp4"
    progress_calls: list[float] = []

    def ours() -> None:
        progress_calls.clear()
        burn_stage.burn(source, subtitles, ours_out, quality=quality, on_progress=progress_calls.append)

    def bare() -> None:
        subprocess.run(
            bare_command(source, ass, bare_out, width, height), check=True, stdin=subprocess.DEVNULL, timeout=6 * 3600
        )

    runs: dict[str, list[dict[str, float]]] = {"ours": [], "bare": []}
    for repeat in range(repeats):
        order = [("ours", ours), ("bare", bare)] if repeat % 2 == 0 else [("bare", bare), ("ours", ours)]
        for name, fn in order:
            load = os.getloadavg()[0]
            wall, cpu = timed(fn)
            runs[name].append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "loadavg_1m": round(load, 2)})
            print(
                f"  {quality:8s} {name:4s} run {repeat + 1}: {wall:7.2f} s wall, {cpu:7.2f} s CPU (load {load:.1f})",
                flush=True,
            )
    assert probe_height(ours_out) == probe_height(bare_out) == height
    ours_wall = statistics.median(r["wall_s"] for r in runs["ours"])
    bare_wall = statistics.median(r["wall_s"] for r in runs["bare"])
    ours_cpu = statistics.median(r["cpu_s"] for r in runs["ours"])
    bare_cpu = statistics.median(r["cpu_s"] for r in runs["bare"])
    result = {
        "output": f"{width}x{height}",
        "ours_wall_s": round(ours_wall, 2),
        "bare_wall_s": round(bare_wall, 2),
        "overhead_wall": round(ours_wall / bare_wall - 1, 4),
        "ours_cpu_s": round(ours_cpu, 2),
        "bare_cpu_s": round(bare_cpu, 2),
        "overhead_cpu": round(ours_cpu / bare_cpu - 1, 4),
        "speed_ours": round(ours_wall / SECONDS, 3),
        "speed_bare": round(bare_wall / SECONDS, 3),
        "progress_callbacks": len(progress_calls),
        "output_mb": {"ours": round(ours_out.stat().st_size / 1e6, 2), "bare": round(bare_out.stat().st_size / 1e6, 2)},
        "runs": runs,
    }
    for path in (ours_out, bare_out):
        path.unlink(missing_ok=True)
    return result


def ffmpeg_version() -> str:
    out = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True, timeout=30).stdout
    return out.splitlines()[0] if out else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--qualities", nargs="+", default=list(burn_stage.QUALITY_HEIGHT), choices=list(burn_stage.QUALITY_HEIGHT)
    )
    parser.add_argument("--folder", type=Path, default=Path("/tmp/bench-burn"))
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results.json"))
    args = parser.parse_args()

    source = make_source(args.folder)
    results = {
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "ffmpeg": ffmpeg_version(),
        "source": f"{SECONDS} s, {SOURCE_SIZE}, {FPS} fps, H.264 + AAC (lavfi testsrc2 + sine)",
        "cues": len(cues()),
        "repeats": args.repeats,
        "qualities": {},
    }
    for quality in args.qualities:
        print(f"{quality}:", flush=True)
        results["qualities"][quality] = result = bench_quality(quality, source, args.folder, args.repeats)
        print(
            f"  -> {result['output']}: ours {result['ours_wall_s']} s, bare {result['bare_wall_s']} s, "
            f"overhead {result['overhead_wall']:+.1%} wall, {result['overhead_cpu']:+.1%} CPU; "
            f"encode time / video length {result['speed_ours']}",
            flush=True,
        )
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
