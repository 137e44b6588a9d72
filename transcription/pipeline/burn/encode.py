"""ffmpeg draws and encodes: the command line (scale, subtitles filter, H.264/AAC in MP4), its
progress, its time limit, and ``burn``, which puts the steps together."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from transcription.pipeline.media.ffmpeg_commands import ffmpeg_media, refused_format
from transcription.pipeline.transcripts.captions import Cue

from .ass import FONT_SCALE, write_ass
from .errors import MSG_FAILED, MSG_NO_FFMPEG, MSG_TIMEOUT, BurnError, last_line
from .video import QUALITY_HEIGHT, output_size, probe_video

VIDEO_ARGS = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "21", "-pix_fmt", "yuv420p"]
AUDIO_ARGS = ["-c:a", "aac", "-b:a", "128k"]


def filter_escape(value: str | os.PathLike[str]) -> str:
    """``value`` as a filter option value inside an ``-vf`` graph, taken literally.

    ffmpeg unescapes twice (docs: "Notes on filtergraph escaping"): first the graph, where
    ``\\ ' [ ] , ;`` are special, then the filter's options, where ``\\ ' :`` are. So each
    level's special characters are backslash-escaped, innermost level first. No quotes are used;
    spaces inside the value are kept as they are.
    """
    text = os.fspath(value)
    text = re.sub(r"([\\':])", r"\\\1", text)  # option level
    return re.sub(r"([\\'\[\],;])", r"\\\1", text)  # graph level


def burn_command(
    source: str | os.PathLike[str],
    ass_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    width: int,
    height: int,
    has_audio: bool,
    fonts_dir: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    max_seconds: float | None = None,
) -> list[str]:
    """The ffmpeg command line: scale to ``width`` x ``height``, draw ``ass_path``, encode.

    ``threads`` (optional) limits the encoder's threads (``-threads N``); ffmpeg picks otherwise.
    ``max_seconds`` (optional) ends the output there, picture and sound alike (``-t``, an output
    option: the frames after it are never encoded): what the job was charged for (issue 56).
    """
    subtitles = f"subtitles=filename={filter_escape(ass_path)}"
    if fonts_dir is not None:
        subtitles += f":fontsdir={filter_escape(fonts_dir)}"
    vf = f"scale={int(width)}:{int(height)}:flags=lanczos,setsar=1,{subtitles}"
    cmd = ffmpeg_media(source, "-map", "0:V:0")
    if has_audio:
        cmd += ["-map", "0:a:0?"]
    cmd += ["-vf", vf, *VIDEO_ARGS]
    cmd += AUDIO_ARGS if has_audio else ["-an"]
    if threads:
        cmd += ["-threads", str(int(threads))]
    if max_seconds is not None:
        cmd += ["-t", f"{float(max_seconds):.3f}"]
    cmd += [
        "-sn",
        "-dn",
        "-map_metadata",
        "-1",
        "-movflags",
        "+faststart",
        "-progress",
        "pipe:1",
        "-nostats",
        "-f",
        "mp4",
        os.fspath(output),
    ]
    return cmd


def _progress_seconds(key: str, value: str) -> float | None:
    """Output time in seconds from one ``-progress`` line, or ``None``."""
    try:
        if key in ("out_time_us", "out_time_ms"):  # both are microseconds (an old ffmpeg misnomer)
            return int(value) / 1_000_000
        if key == "out_time":
            h, m, s = value.split(":")
            return int(h) * 3600 + int(m) * 60 + float(s)
    except ValueError:  # "N/A" before the first frame
        return None
    return None


@dataclass(frozen=True)
class BurnOptions:
    """The operator's options for drawing a video, handed whole to :func:`burn` (the service builds
    them from its settings: transcription.stages.pipeline_options). ``timeout``: seconds before
    ffmpeg is killed; ``threads``: the encoder's threads (None: ffmpeg picks); ``fonts_dir``: a
    folder of fonts libass looks in besides the system's."""

    timeout: float = 3 * 3600
    threads: int | None = None
    fonts_dir: str | os.PathLike[str] | None = None


NO_BURN_OPTIONS = BurnOptions()


def burn(
    source: str | os.PathLike[str],
    cues: Sequence[Cue],
    output: str | os.PathLike[str],
    *,
    quality: str = "default",
    font_size: str = "default",
    background: bool = False,
    language: str | None = None,
    on_progress: Callable[[float], None] | None = None,
    options: BurnOptions = NO_BURN_OPTIONS,
    max_seconds: float | None = None,
) -> Path:
    """Draw ``cues`` into ``source``, writing an MP4 to ``output``; return ``output``.

    ``max_seconds`` keeps only the beginning, picture and sound: the length the job was charged for,
    whatever the source's streams or header say.

    ``on_progress(fraction)`` is called with increasing fractions of the video done, from ffmpeg's
    progress lines, and with ``1.0`` at the end. Raises ``BurnError`` (a customer-readable sentence)
    when the source has no picture or cannot be read, when ffmpeg fails, or after ``options.timeout``
    seconds (ffmpeg is killed). No partial output is left behind on failure.
    """
    if quality not in QUALITY_HEIGHT:
        raise ValueError(f"unknown quality {quality!r}; expected one of {sorted(QUALITY_HEIGHT)}")
    if font_size not in FONT_SCALE:
        raise ValueError(f"unknown font size {font_size!r}; expected one of {sorted(FONT_SCALE)}")
    output = Path(output)
    info = probe_video(source)
    width, height = output_size(info.width, info.height, quality)
    output.parent.mkdir(parents=True, exist_ok=True)

    fd, ass_name = tempfile.mkstemp(prefix=".burn-", suffix=".ass", dir=output.parent)
    os.close(fd)
    ass_path = Path(ass_name)
    ok = False
    try:
        write_ass(
            cues, ass_path, width=width, height=height, font_size=font_size, background=background, language=language
        )
        cmd = burn_command(
            source,
            ass_path,
            output,
            width=width,
            height=height,
            has_audio=info.has_audio,
            fonts_dir=options.fonts_dir,
            threads=options.threads,
            max_seconds=max_seconds,
        )
        length = info.duration if max_seconds is None else min(info.duration or max_seconds, max_seconds)
        _run_ffmpeg(cmd, length, on_progress, options.timeout)
        ok = True
        return output
    finally:
        ass_path.unlink(missing_ok=True)
        if not ok:
            output.unlink(missing_ok=True)


def _duration_words(seconds: float) -> str:
    if seconds >= 60:
        minutes = max(1, round(seconds / 60))
        return f"{minutes} minute" + ("s" if minutes != 1 else "")
    secs = max(1, round(seconds))
    return f"{secs} second" + ("s" if secs != 1 else "")


def _run_ffmpeg(cmd: list[str], duration: float, on_progress: Callable[[float], None] | None, timeout: float) -> None:
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        except OSError as e:
            raise BurnError(MSG_NO_FFMPEG) from e
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.daemon = True
        timer.start()
        last = 0.0
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                key, _, value = raw.decode("ascii", "replace").strip().partition("=")
                if key == "progress" and value == "end":
                    continue
                if on_progress is None or duration <= 0:
                    continue
                seconds = _progress_seconds(key, value)
                if seconds is None:
                    continue
                fraction = min(max(seconds / duration, 0.0), 0.999)
                if fraction > last:
                    last = fraction
                    on_progress(fraction)
            returncode = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            timer.cancel()
            if proc.stdout is not None:
                proc.stdout.close()
        if timed_out.is_set():
            raise BurnError(MSG_TIMEOUT.format(limit=_duration_words(timeout)))
        if returncode != 0:
            err.seek(0)
            stderr = err.read()[-20000:].decode("utf-8", "replace")
            raise BurnError(refused_format(stderr) or MSG_FAILED.format(detail=last_line(stderr)))
    if on_progress is not None:
        on_progress(1.0)
