"""The ASS file libass draws: the style in output pixels, each cue fitted and escaped."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pysubs2

from transcription.pipeline.transcripts.captions import Cue

from .fonts import FIT_SAFETY, fit_lines, font_for

# Text height (the ASS font size: ascender to descender) as a fraction of the output height.
FONT_SCALE = {"default": 0.07, "large": 0.10, "xl": 0.125}

MARGIN_V = 0.05  # bottom margin, fraction of the output height
MARGIN_H = 0.04  # left/right margins, fraction of the output width
OUTLINE = 0.07  # outline width, fraction of the font size (background=False)
BOX_PAD = 0.2  # padding of the box around the text, fraction of the font size (background=True)
BOX_ALPHA = 0x66  # ASS alpha of the box: 0x00 opaque .. 0xFF invisible; 0x66 = 40 % transparent

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
    path: str | os.PathLike[str],
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
