"""The font for a language's script, and cues fitted to the picture's width at the chosen size."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable

import langcodes

from transcription.pipeline.transcripts.linebreaks import MAX_LINES, wrap_lines

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
    return _REGION_FONTS.get((script or "", region or "")) or SCRIPT_FONTS.get(script or "", DEFAULT_FONT)


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
def _measure(family: str, size: float) -> Callable[[str], float]:
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
