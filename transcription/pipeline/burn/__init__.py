"""Draw subtitle cues into the picture of a video with ffmpeg and libass.  No Django here.

The modules: ``video`` (probe, output size), ``fonts`` (a script's font, cues fitted to the width),
``ass`` (the subtitle file), ``encode`` (the ffmpeg command, its progress and limit: ``burn``),
``errors``.

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

from .ass import FONT_SCALE, MARGIN_H, ass_escape, write_ass
from .encode import BurnOptions, burn, burn_command, filter_escape
from .errors import BurnError
from .fonts import DEFAULT_FONT, fit_lines, font_for
from .video import QUALITY_HEIGHT, VideoInfo, output_size, picture_seconds, probe_video

__all__ = [
    "QUALITY_HEIGHT",
    "FONT_SCALE",
    "MARGIN_H",
    "DEFAULT_FONT",
    "BurnError",
    "BurnOptions",
    "VideoInfo",
    "probe_video",
    "picture_seconds",
    "output_size",
    "font_for",
    "fit_lines",
    "write_ass",
    "ass_escape",
    "filter_escape",
    "burn_command",
    "burn",
]
