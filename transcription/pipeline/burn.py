"""Draw subtitle cues into the picture of a video with ffmpeg and libass.  No Django here.

    info = probe_video(source)
    burn(source, cues, "out.mp4", quality="hd", font_size="large", background=True,
         language="ja", on_progress=lambda f: print(f"{f:.0%}"))

What comes out: H.264 (libx264, veryfast, CRF 21, yuv420p) and AAC 128 kb/s in MP4 with the
``moov`` atom first (faststart), ``QUALITY_HEIGHT[quality]`` pixels high, the width keeping the
displayed aspect ratio (rotation and non-square pixels included), both even. The picture is scaled
*before* the subtitles are drawn, and the ASS file's PlayResX/PlayResY are the output size, so text
is rasterised once at its final size and every size in the style is in output pixels.

ffmpeg is called directly with :mod:`subprocess` rather than through ``ffmpeg-python``: that package
has had no release since 2019, and the whole filter graph is one line
(``scale=W:H:flags=lanczos,setsar=1,subtitles=filename=...``), so a graph-building library would
add a dependency without making anything clearer. What does need care, the escaping of the ASS
path inside the filter graph, is done by :func:`filter_escape` and tested with a hostile path.

Progress comes from ``-progress pipe:1`` (``out_time_us=``/``progress=end`` lines on stdout); stderr
goes to a temporary file (so a chatty ffmpeg can never fill a pipe and stall) and its last meaningful
line is what a failure reports.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import langcodes
import pysubs2

from .captions import Cue
from .linebreaks import MAX_LINES, wrap_lines

__all__ = [
    "QUALITY_HEIGHT",
    "FONT_SCALE",
    "DEFAULT_FONT",
    "BurnError",
    "VideoInfo",
    "probe_video",
    "output_size",
    "font_for",
    "write_ass",
    "ass_escape",
    "filter_escape",
    "burn_command",
    "burn",
]

QUALITY_HEIGHT = {"default": 720, "hd": 1080, "uhd": 2160}
# Text height (the ASS font size: ascender to descender) as a fraction of the output height.
FONT_SCALE = {"default": 0.07, "large": 0.10, "xl": 0.125}

MARGIN_V = 0.05  # bottom margin, fraction of the output height
MARGIN_H = 0.04  # left/right margins, fraction of the output width
OUTLINE = 0.07  # outline width, fraction of the font size (background=False)
BOX_PAD = 0.2  # padding of the box around the text, fraction of the font size (background=True)
BOX_ALPHA = 0x66  # ASS alpha of the box: 0x00 opaque .. 0xFF invisible; 0x66 = 40 % transparent

VIDEO_ARGS = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "21", "-pix_fmt", "yuv420p"]
AUDIO_ARGS = ["-c:a", "aac", "-b:a", "128k"]

MSG_NO_PICTURE = "The video has no picture to draw subtitles on."
MSG_UNREADABLE = "ffmpeg could not read this video: {detail}"
MSG_TIMEOUT = "Drawing subtitles took longer than {limit} and was stopped."
MSG_FAILED = "Drawing subtitles failed: {detail}"
MSG_NO_FFMPEG = "ffmpeg is not installed on this server."


class BurnError(Exception):
    """Burning subtitles failed; ``str(error)`` is a sentence that can be shown to the customer."""


@dataclass
class VideoInfo:
    width: int  # as displayed: rotation and the sample aspect ratio applied
    height: int
    duration: float  # seconds; 0.0 when the container does not say
    has_audio: bool


# --------------------------------------------------------------------------------------------
# Probing and sizes
# --------------------------------------------------------------------------------------------


# ffmpeg's closing lines that only say *that* something failed; the cause is on an earlier line.
_GENERIC = re.compile(
    r"^(Conversion failed|Error while (processing|filtering|decoding|encoding)|Error reinitializing filters"
    r"|Failed to inject frame|Error initializing (filter|output|complex)|Exiting normally|Press \[q\]"
    r"|frame=|size=)",
)
_COMPONENT = re.compile(r"^\[[^\]]* @ 0x[0-9a-f]+\]\s*")  # "[Parsed_subtitles_1 @ 0x55..] "


def _last_line(text: str) -> str:
    """The last line of ffmpeg's stderr that says what went wrong, without its component prefix."""
    lines = [_COMPONENT.sub("", ln.strip()) for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        return "unknown error"
    meaningful = [ln for ln in lines if not _GENERIC.match(ln)]
    return (meaningful or lines)[-1][:300]


def _rotation(stream: dict) -> int:
    for side in stream.get("side_data_list") or []:
        if "rotation" in side:
            try:
                return int(round(float(side["rotation"])))
            except (TypeError, ValueError):
                pass
    try:
        return int((stream.get("tags") or {}).get("rotate", 0))
    except (TypeError, ValueError):
        return 0


def _ratio(text: str | None) -> Fraction | None:
    if not text or ":" not in text:
        return None
    num, _, den = text.partition(":")
    try:
        num_i, den_i = int(num), int(den)
    except ValueError:
        return None
    return Fraction(num_i, den_i) if num_i > 0 and den_i > 0 else None


def probe_video(path: str | os.PathLike, timeout: float = 60) -> VideoInfo:
    """Displayed size, duration and whether there is sound, via ffprobe.

    The size is what a player shows, which is what ffmpeg's filters see: a 90/270 degree rotation
    (display matrix side data, or the old ``rotate`` tag) swaps width and height, since ffmpeg
    rotates decoded frames itself; a non-square sample aspect ratio widens or narrows the width.
    Cover art (an attached picture in an audio file) is not a picture to draw on.
    """
    cmd = ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", os.fspath(path)]
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BurnError(MSG_UNREADABLE.format(detail="reading it took too long.")) from None
    except OSError as e:
        raise BurnError(MSG_NO_FFMPEG) from e
    if res.returncode != 0:
        detail = _last_line(res.stderr.decode("utf-8", "replace"))
        raise BurnError(MSG_UNREADABLE.format(detail=detail))
    try:
        data = json.loads(res.stdout or b"{}")
    except ValueError:
        data = {}
    streams = data.get("streams") or []
    videos = [
        s
        for s in streams
        if s.get("codec_type") == "video"
        and not (s.get("disposition") or {}).get("attached_pic")
        and int(s.get("width") or 0) > 0
        and int(s.get("height") or 0) > 0
    ]
    if not videos:
        raise BurnError(MSG_NO_PICTURE)
    v = videos[0]
    width, height = int(v["width"]), int(v["height"])
    sar = _ratio(v.get("sample_aspect_ratio"))
    if sar is not None and sar != 1:
        width = max(1, round(width * sar))
    if _rotation(v) % 180 != 0:
        width, height = height, width
    duration = 0.0
    for value in ((data.get("format") or {}).get("duration"), v.get("duration")):
        try:
            duration = float(value)
        except (TypeError, ValueError):
            continue
        if duration > 0:
            break
    has_audio = any(s.get("codec_type") == "audio" for s in streams)
    return VideoInfo(width=width, height=height, duration=max(duration, 0.0), has_audio=has_audio)


def output_size(width: int, height: int, quality: str) -> tuple[int, int]:
    """Output size for ``quality``: the height from ``QUALITY_HEIGHT``, the width keeping the aspect
    ratio of ``width`` x ``height``, rounded to the nearest even number (yuv420p needs both even)."""
    try:
        out_h = QUALITY_HEIGHT[quality]
    except KeyError:
        raise ValueError(f"unknown quality {quality!r}; expected one of {sorted(QUALITY_HEIGHT)}") from None
    if width <= 0 or height <= 0:
        raise ValueError(f"bad video size {width}x{height}")
    out_w = max(2, int(width * out_h / height / 2 + 0.5) * 2)  # half up: 405 -> 406
    return out_w, out_h


# --------------------------------------------------------------------------------------------
# Fonts
# --------------------------------------------------------------------------------------------

DEFAULT_FONT = "DejaVu Sans"  # Latin, Greek, Cyrillic (fonts-dejavu-core)

# Font family per ISO 15924 script (the language's likely script, from langcodes). Every family
# here is in Debian's fonts-dejavu-core, fonts-noto-core or fonts-noto-cjk (tests check fc-list).
# libass also falls back through fontconfig, glyph by glyph, for characters the family lacks.
SCRIPT_FONTS = {
    "Latn": DEFAULT_FONT,
    "Grek": DEFAULT_FONT,
    "Cyrl": DEFAULT_FONT,
    "Hans": "Noto Sans CJK SC",
    "Hant": "Noto Sans CJK TC",
    "Jpan": "Noto Sans CJK JP",
    "Kore": "Noto Sans CJK KR",
    "Arab": "Noto Sans Arabic",
    "Deva": "Noto Sans Devanagari",
    "Hebr": "Noto Sans Hebrew",
    "Thai": "Noto Sans Thai",
    "Beng": "Noto Sans Bengali",
    "Taml": "Noto Sans Tamil",
    "Telu": "Noto Sans Telugu",
    "Knda": "Noto Sans Kannada",
    "Mlym": "Noto Sans Malayalam",
    "Gujr": "Noto Sans Gujarati",
    "Guru": "Noto Sans Gurmukhi",
    "Orya": "Noto Sans Oriya",
    "Sinh": "Noto Sans Sinhala",
    "Khmr": "Noto Sans Khmer",
    "Laoo": "Noto Sans Lao",
    "Mymr": "Noto Sans Myanmar",
    "Ethi": "Noto Sans Ethiopic",
    "Geor": "Noto Sans Georgian",
    "Armn": "Noto Sans Armenian",
    "Thaa": "Noto Sans Thaana",
    "Syrc": "Noto Sans Syriac",
}
# Hong Kong and Macau write traditional Chinese with their own glyph forms.
_REGION_FONTS = {("Hant", "HK"): "Noto Sans CJK HK", ("Hant", "MO"): "Noto Sans CJK HK"}


def font_for(language: str | None) -> str:
    """Font family that covers the script of ``language`` (a code such as ``"ja"``, ``"zh-Hant"``,
    ``"pt-BR"`` or a name such as ``"Japanese"``); ``DEFAULT_FONT`` when unknown or ``None``."""
    if not language or not str(language).strip():
        return DEFAULT_FONT
    text = str(language).strip()
    lang = None
    try:
        lang = langcodes.Language.get(text)
        if not lang.is_valid():
            lang = None
    except (ValueError, LookupError):
        lang = None
    if lang is None:
        try:
            lang = langcodes.find(text)
        except (ValueError, LookupError):
            return DEFAULT_FONT
    try:
        full = lang.maximize()
    except (ValueError, LookupError):
        return DEFAULT_FONT
    script, region = full.script, full.territory
    return _REGION_FONTS.get((script, region)) or SCRIPT_FONTS.get(script or "", DEFAULT_FONT)


# --------------------------------------------------------------------------------------------
# Text that fits: at most two lines at the chosen size
# --------------------------------------------------------------------------------------------

FIT_SAFETY = 0.96  # of the width left between the margins: libass's shaping and ours differ a little


@functools.lru_cache(maxsize=32)
def _font_file(family: str) -> str | None:
    """The file fontconfig gives libass for ``family`` (the same lookup), or None."""
    try:
        found = subprocess.run(
            ["fc-match", "-f", "%{file}", family], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return found or None


@functools.lru_cache(maxsize=64)
def _measure(family: str, size: float):
    """A function giving a line's width in pixels at ASS font size ``size`` in ``family``. libass
    sizes a font so that its ascent plus descent is ``size``; Pillow sizes the em, so the em is
    scaled by the font's own ascent + descent. Without the font file: 0.6 of the size a character,
    wider than DejaVu Sans's average advance (about 0.5)."""
    from PIL import ImageFont

    path = _font_file(family)
    if path:
        try:
            probe = ImageFont.truetype(path, 1000)
            ascent, descent = probe.getmetrics()
            font = ImageFont.truetype(path, max(1, round(size * 1000 / (ascent + descent))))
            return font.getlength
        except OSError:
            pass
    return lambda text: len(text) * size * 0.6


def fit_lines(lines: list[str], *, width: float, family: str, size: float) -> tuple[list[str], float]:
    """(lines, font size) for one cue so that it shows on at most two lines no wider than
    ``width`` pixels: the cue's own lines when they fit; otherwise its text re-broken by the line
    scorer for fewer characters a line, down to what two lines allow; if two lines cannot hold it
    at ``size`` (a long translation, ``xl`` on a narrow picture), the size is lowered for that cue
    until they do. Speaker-dash lines are never merged, only made smaller."""
    measure = _measure(family, size)
    widest = max((measure(line) for line in lines), default=0.0)
    if widest <= width:
        return lines, size
    dashes = len(lines) > 1 and all(line.startswith("- ") for line in lines)
    best = lines
    if not dashes:
        text = " ".join(lines)
        for chars in range(max(len(line) for line in lines), 0, -1):
            candidate = wrap_lines(text, chars, MAX_LINES)
            if len(candidate) > MAX_LINES:
                break
            best = candidate
            if max(measure(line) for line in candidate) <= width:
                return candidate, size
        widest = max(measure(line) for line in best)
    return best, round(size * width / widest * 0.98, 1)


# --------------------------------------------------------------------------------------------
# ASS
# --------------------------------------------------------------------------------------------

_WORD_JOINER = "\u2060"  # invisible, zero width


def ass_escape(line: str) -> str:
    """Text for one line of an ASS event, shown literally.

    ``{`` and ``}`` become ``\\{`` and ``\\}`` (libass prints them instead of opening an override
    block), and an invisible word joiner goes after every backslash, so ``\\N``, ``\\h`` or
    ``\\fs200`` in a transcript are printed as written instead of acting as line breaks or tags.
    """
    text = line.replace("\r", "").replace("\\", "\\" + _WORD_JOINER)
    return text.replace("{", "\\{").replace("}", "\\}").replace("\n", "\\N")


def _ms(seconds: float) -> int:
    return max(0, int(round(seconds * 1000)))


def write_ass(
    cues: Iterable[Cue],
    path: str | os.PathLike,
    *,
    width: int,
    height: int,
    font_size: str = "default",
    background: bool = False,
    language: str | None = None,
) -> Path:
    """Write ``cues`` as an ASS file laid out for a ``width`` x ``height`` picture.

    PlayResX/PlayResY are the output size, so every size below is in output pixels: font size
    ``FONT_SCALE[font_size] * height``, bottom-centred ``MARGIN_V * height`` above the bottom edge.
    ``background=False``: white text, black outline ``OUTLINE`` x font size, no shadow.
    ``background=True``: white text, no outline, on one black box per cue, 40 % transparent.

    The box is libass's BorderStyle 4 (libass >= 0.17; Debian 12 has 0.17.1): one box around the
    whole event, filled with BackColour and padded by the Outline width, while OutlineColour draws
    an ordinary outline (made invisible here). The classic BorderStyle 3 draws one box per line,
    filled with OutlineColour and padded by Outline on every side, so the boxes of a two-line cue
    overlap and a semi-transparent box gets a darker stripe between the lines (or a seam when the
    vertical padding is 0); tests check there is no such stripe.

    Text fits: each cue is laid out by ``fit_lines`` for the width the margins and the outline or
    box leave at this font size (measured with the font fontconfig gives libass), so it shows on at
    most two lines; WrapStyle 2 then keeps exactly those lines (libass never adds a third).
    """
    try:
        scale = FONT_SCALE[font_size]
    except KeyError:
        raise ValueError(f"unknown font size {font_size!r}; expected one of {sorted(FONT_SCALE)}") from None
    size = round(scale * height, 1)
    subs = pysubs2.SSAFile()
    subs.info.update(
        {
            "Title": "Burned-in subtitles",
            "ScriptType": "v4.00+",
            "PlayResX": str(int(width)),
            "PlayResY": str(int(height)),
            "WrapStyle": "2",
            "ScaledBorderAndShadow": "yes",
            "YCbCr Matrix": "None",
        }
    )
    black = pysubs2.Color(0, 0, 0, 0)
    if background:
        outline_colour = pysubs2.Color(0, 0, 0, 0xFF)  # invisible
        back_colour = pysubs2.Color(0, 0, 0, BOX_ALPHA)  # the box
    else:
        outline_colour = back_colour = black
    style = pysubs2.SSAStyle(
        fontname=font_for(language),
        fontsize=size,
        primarycolor=pysubs2.Color(255, 255, 255, 0),
        secondarycolor=pysubs2.Color(255, 255, 255, 0),
        outlinecolor=outline_colour,
        backcolor=back_colour,
        bold=False,
        borderstyle=4 if background else 1,
        outline=round(size * (BOX_PAD if background else OUTLINE), 1),
        shadow=0,
        alignment=pysubs2.Alignment.BOTTOM_CENTER,
        marginl=round(width * MARGIN_H),
        marginr=round(width * MARGIN_H),
        marginv=round(height * MARGIN_V),
        encoding=1,
    )
    subs.styles = {"Default": style}
    room = (width - 2 * style.marginl - 2 * style.outline) * FIT_SAFETY
    for cue in cues:
        start, end = _ms(cue.start), _ms(cue.end)
        if end <= start:
            continue
        lines, fitted = fit_lines(cue.lines, width=room, family=style.fontname, size=size)
        text = "\\N".join(ass_escape(line) for line in lines)
        if fitted != size:
            text = f"{{\\fs{fitted:g}}}" + text
        if not text.strip():
            continue
        subs.events.append(pysubs2.SSAEvent(start=start, end=end, text=text, style="Default"))
    path = Path(path)
    subs.save(os.fspath(path), format_="ass", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# ffmpeg
# --------------------------------------------------------------------------------------------


def filter_escape(value: str | os.PathLike) -> str:
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
    source: str | os.PathLike,
    ass_path: str | os.PathLike,
    output: str | os.PathLike,
    *,
    width: int,
    height: int,
    has_audio: bool,
    fonts_dir: str | os.PathLike | None = None,
    threads: int | None = None,
) -> list[str]:
    """The ffmpeg command line: scale to ``width`` x ``height``, draw ``ass_path``, encode.

    ``threads`` (optional) limits the encoder's threads (``-threads N``); ffmpeg picks otherwise.
    """
    subtitles = f"subtitles=filename={filter_escape(ass_path)}"
    if fonts_dir is not None:
        subtitles += f":fontsdir={filter_escape(fonts_dir)}"
    vf = f"scale={int(width)}:{int(height)}:flags=lanczos,setsar=1,{subtitles}"
    cmd = [
        "ffmpeg",
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-y",
        "-i",
        os.fspath(source),
        "-map",
        "0:V:0",
    ]
    if has_audio:
        cmd += ["-map", "0:a:0?"]
    cmd += ["-vf", vf, *VIDEO_ARGS]
    cmd += AUDIO_ARGS if has_audio else ["-an"]
    if threads:
        cmd += ["-threads", str(int(threads))]
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


def burn(
    source: str | os.PathLike,
    cues: Sequence[Cue],
    output: str | os.PathLike,
    *,
    quality: str = "default",
    font_size: str = "default",
    background: bool = False,
    language: str | None = None,
    on_progress: Callable[[float], None] | None = None,
    timeout: float = 3 * 3600,
    threads: int | None = None,
    fonts_dir: str | os.PathLike | None = None,
) -> Path:
    """Draw ``cues`` into ``source``, writing an MP4 to ``output``; return ``output``.

    ``on_progress(fraction)`` is called with increasing fractions of the video done, from ffmpeg's
    progress lines, and with ``1.0`` at the end. Raises ``BurnError`` (a customer-readable sentence)
    when the source has no picture or cannot be read, when ffmpeg fails, or after ``timeout``
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
            fonts_dir=fonts_dir,
            threads=threads,
        )
        _run_ffmpeg(cmd, info.duration, on_progress, timeout)
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
            detail = _last_line(err.read()[-20000:].decode("utf-8", "replace"))
            raise BurnError(MSG_FAILED.format(detail=detail))
    if on_progress is not None:
        on_progress(1.0)
