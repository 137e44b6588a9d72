"""Burning, without a video: output sizes, fonts per script, the ffmpeg command, and how libass lays
out a long cue at every quality and font size."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.support import font_families
from transcription.pipeline.burn import (
    FONT_SCALE,
    MARGIN_H,
    QUALITY_HEIGHT,
    burn_command,
    filter_escape,
    fit_lines,
    font_for,
    fonts,
    output_size,
    write_ass,
)
from transcription.pipeline.transcripts.captions import Cue


def test_output_size():
    assert output_size(1280, 720, "default") == (1280, 720)
    assert output_size(640, 360, "hd") == (1920, 1080)
    assert output_size(1280, 720, "uhd") == (3840, 2160)
    assert output_size(640, 480, "default") == (960, 720)
    assert output_size(720, 1280, "default") == (406, 720)  # 405 rounded to an even width
    assert output_size(853, 480, "hd") == (1920, 1080)  # 1919.25
    assert output_size(1000, 1000, "default") == (720, 720)
    for quality, height in QUALITY_HEIGHT.items():
        for size in [(1001, 777), (333, 999), (1920, 817)]:
            w, h = output_size(*size, quality)
            assert h == height and w % 2 == 0 and h % 2 == 0
            assert abs(w / h - size[0] / size[1]) < 2 / h
    with pytest.raises(ValueError):
        output_size(1280, 720, "8k")


def test_font_for():
    assert font_for(None) == font_for("") == font_for("xx-unknown") == "DejaVu Sans"
    for lang in ["en", "es", "de", "pt-BR", "el", "ru", "uk", "Spanish", "vi", "tr"]:
        assert font_for(lang) == "DejaVu Sans", lang
    assert font_for("zh") == font_for("zh-CN") == font_for("zh-Hans") == "Noto Sans CJK SC"
    assert font_for("zh-Hant") == font_for("zh-TW") == "Noto Sans CJK TC"
    assert font_for("zh-HK") == "Noto Sans CJK HK"
    assert font_for("ja") == font_for("Japanese") == "Noto Sans CJK JP"
    assert font_for("ko") == "Noto Sans CJK KR"
    assert font_for("ar") == font_for("fa") == font_for("ur") == "Noto Sans Arabic"
    assert font_for("hi") == font_for("mr") == font_for("ne") == "Noto Sans Devanagari"
    assert font_for("he") == "Noto Sans Hebrew"
    assert font_for("th") == "Noto Sans Thai"
    assert font_for("bn") == "Noto Sans Bengali"
    assert font_for("ta") == "Noto Sans Tamil"


def test_every_font_family_is_installed():
    families = font_families()
    wanted = set(fonts.SCRIPT_FONTS.values()) | set(fonts._REGION_FONTS.values()) | {fonts.DEFAULT_FONT}
    assert wanted - families == set()


def test_burn_command():
    cmd = burn_command("/in/a b.mp4", "/tmp/s.ass", "/out/x.mp4", width=1920, height=1080, has_audio=True)
    assert cmd[0] == "ffmpeg" and "-nostdin" in cmd
    assert cmd[cmd.index("-i") + 1] == "file:/in/a b.mp4"  # the one input file, by the file protocol only
    vf = cmd[cmd.index("-vf") + 1]
    assert vf == "scale=1920:1080:flags=lanczos,setsar=1,subtitles=filename=/tmp/s.ass"
    joined = " ".join(cmd)
    for part in [
        "-c:v libx264",
        "-preset veryfast",
        "-crf 21",
        "-pix_fmt yuv420p",
        "-c:a aac",
        "-b:a 128k",
        "-movflags +faststart",
        "-progress pipe:1",
        "-nostats",
    ]:
        assert part in joined
    assert cmd[-1] == "/out/x.mp4"
    silent = burn_command("a.mp4", "s.ass", "o.mp4", width=2, height=2, has_audio=False, fonts_dir="/f")
    assert "-an" in silent and "-c:a" not in silent
    assert "-t" not in cmd, "no length given, none kept"
    cut = burn_command("a.mp4", "s.ass", "o.mp4", width=2, height=2, has_audio=True, max_seconds=62)
    assert cut[cut.index("-t") + 1] == "62.000" and cut.index("-t") < cut.index("o.mp4"), "an output option"
    assert silent[silent.index("-vf") + 1].endswith("subtitles=filename=s.ass:fontsdir=/f")


def test_filter_escape():
    assert filter_escape("/tmp/plain.ass") == "/tmp/plain.ass"
    # option level: \ ' : get a backslash; graph level: \ ' [ ] , ; get one (so level-one ones double)
    assert filter_escape("a:b") == "a\\\\:b"
    assert filter_escape("a,b[c];d") == "a\\,b\\[c\\]\\;d"
    assert filter_escape("it's") == "it\\\\\\'s"


# A translated cue as long as the layout rule allows (2 lines of 42), with accents and descenders.
LONG_CUE = ["Je demanderai au département des finances", "et je te le dirai demain, c'est promis."]


def rendered_text_rows(ass: Path, width: int, height: int) -> tuple[int, int, np.ndarray]:
    """(first row, last row, columns) holding subtitle pixels in one frame that libass draws from
    ``ass`` on a black picture."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"color=c=black:s={width}x{height}:d=1"]
        + ["-vf", f"subtitles=filename={filter_escape(ass)}", "-frames:v", "1", "-f", "rawvideo"]
        + ["-pix_fmt", "gray", "-"],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    picture = np.frombuffer(raw, np.uint8).reshape(height, width)
    rows = np.flatnonzero((picture > 128).any(axis=1))
    columns = np.flatnonzero((picture > 128).any(axis=0))
    return int(rows[0]), int(rows[-1]), columns


@pytest.mark.parametrize("quality", sorted(QUALITY_HEIGHT))
@pytest.mark.parametrize("font_size", sorted(FONT_SCALE))
def test_a_burned_cue_shows_at_most_two_lines(tmp_path, quality, font_size):
    """At every quality and font size, on a 16:9 and a portrait picture, libass draws a long cue
    on at most two lines (the text is less than 2.5 line heights tall) inside the side margins."""
    for aspect in ((16, 9), (9, 16)):
        width, height = output_size(*aspect, quality)
        ass = write_ass(
            [Cue(0.0, 1.0, LONG_CUE)], tmp_path / "long.ass", width=width, height=height, font_size=font_size
        )
        top, bottom, columns = rendered_text_rows(ass, width, height)
        size = FONT_SCALE[font_size] * height
        assert bottom - top + 1 < 2.5 * size, f"{width}x{height}: text {bottom - top + 1} px tall at {size:.0f} px"
        assert bottom - top + 1 > 0.5 * size * min(1.0, width / height), "the text is drawn"
        assert columns[0] >= width * MARGIN_H * 0.5 and columns[-1] <= width * (1 - MARGIN_H * 0.5)


def test_fit_lines_keeps_lines_that_fit_and_rebreaks_others():
    short = ["Hello there.", "How are you?"]
    assert fit_lines(short, width=1000, family="DejaVu Sans", size=50.4) == (short, 50.4)
    lines, size = fit_lines(LONG_CUE, width=1100, family="DejaVu Sans", size=72.0)
    assert " ".join(lines) == " ".join(LONG_CUE) and len(lines) == 2
    assert size < 72.0  # two lines of this text are wider than 1100 px at 72 px
    dashes = ["- Where are you going tonight with all those friends?", "- To the library."]
    lines, size = fit_lines(dashes, width=900, family="DejaVu Sans", size=72.0)
    assert lines == dashes and size < 72.0  # speakers keep their lines
