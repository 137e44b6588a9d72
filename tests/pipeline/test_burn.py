"""burn.py against real ffmpeg, ffprobe, libass and fontconfig (no mocks).

Sources are made with lavfi: a static light-grey 640x360 picture with a sine tone (6 s), a static
blue 4:3 picture without audio, a 2 s clip for uhd, an audio-only file and a text file named .mp4.
On a static source every frame is the same picture, so a frame at a cue's time compared with a
frame between cues shows exactly what the subtitles drew.
"""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness.media_files import claim_matroska_duration
from tests.support import font_families
from transcription.pipeline.burn import (
    FONT_SCALE,
    BurnError,
    BurnOptions,
    VideoInfo,
    burn,
    burn_command,
    encode,
    font_for,
    picture_seconds,
    probe_video,
    write_ass,
)
from transcription.pipeline.transcripts.captions import Cue

GREY = 0xC0  # light grey source: 192, 192, 192

CUES = [
    Cue(0.5, 1.5, ["Hello subtitles, this is line one", "and here is a second line"]),
    # 1.5 .. 2.5: no cue (the reference frame is at 2.0)
    Cue(2.5, 3.5, ["Hxg"]),
    # override tags, a literal "\N" and braces in a transcript must be printed, not obeyed
    Cue(4.0, 5.0, ["{\\fs200}Hxg \\N Hxg {x}"]),
]
T_TWO_LINES, T_NONE, T_ONE_LINE, T_TAGS = 1.0, 2.0, 3.0, 4.5


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, timeout=120)


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("burn-media")
    m = {
        "grey": d / "grey.mp4",
        "blue43": d / "blue43.mp4",
        "short": d / "short.mp4",
        "audio": d / "audio.m4a",
        "broken": d / "broken.mp4",
        "rotated": d / "rotated.mp4",
        "long_picture": d / "long-picture.mp4",
    }
    enc = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    _ffmpeg(
        "-f",
        "lavfi",
        "-i",
        f"color=c=0x{GREY:02x}{GREY:02x}{GREY:02x}:s=640x360:d=6:r=25",
        "-f",
        "lavfi",
        "-i",
        "sine=f=440:d=6",
        *enc,
        "-c:a",
        "aac",
        "-shortest",
        str(m["grey"]),
    )
    _ffmpeg("-f", "lavfi", "-i", "color=c=0x4060a0:s=640x480:d=4:r=25", *enc, str(m["blue43"]))
    _ffmpeg("-f", "lavfi", "-i", "testsrc2=s=640x360:d=2:r=25", *enc, str(m["short"]))
    _ffmpeg("-f", "lavfi", "-i", "sine=f=300:d=3", "-c:a", "aac", str(m["audio"]))
    m["broken"].write_text("This is not a video, only some text with an .mp4 name.\n" * 20)
    # a phone video held upright: 640x360 stored, shown 360x640 (display matrix, rotation 90)
    _ffmpeg("-i", str(m["short"]), "-c", "copy", "-metadata:s:v", "rotate=90", str(m["rotated"]))
    # six seconds of picture over two of sound (issue 56): the audio track's length is what a probe reads
    _ffmpeg(
        "-f", "lavfi", "-i", "testsrc2=s=160x90:d=6:r=10", "-f", "lavfi", "-i", "sine=d=2", *enc, str(m["long_picture"])
    )
    return m


class Burned:
    """Outputs made once per module, on first use."""

    def __init__(self, media: dict[str, Path], folder: Path):
        self.media, self.folder = media, folder
        self.cache: dict[str, Path] = {}
        self.progress: dict[str, list[float]] = {}

    def get(self, name: str, source: str = "grey", cues=CUES, **kw) -> Path:
        if name not in self.cache:
            fractions: list[float] = []
            out = burn(self.media[source], cues, self.folder / f"{name}.mp4", on_progress=fractions.append, **kw)
            self.cache[name], self.progress[name] = out, fractions
        return self.cache[name]


@pytest.fixture(scope="module")
def burned(media, tmp_path_factory) -> Burned:
    return Burned(media, tmp_path_factory.mktemp("burned"))


# --------------------------------------------------------------------------- helpers


def ffprobe(path: Path) -> dict:
    res = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return json.loads(res.stdout)


def streams(path: Path, kind: str) -> list[dict]:
    return [s for s in ffprobe(path)["streams"] if s["codec_type"] == kind]


def frame(path: Path, t: float) -> np.ndarray:
    """The decoded frame at ``t`` seconds as an (h, w, 3) uint8 RGB array."""
    v = streams(path, "video")[0]
    w, h = int(v["width"]), int(v["height"])
    res = subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-ss",
            str(t),
            "-i",
            str(path),
            "-frames:v",
            "1",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert len(res.stdout) == w * h * 3
    return np.frombuffer(res.stdout, np.uint8).reshape(h, w, 3)


def changed(a: np.ndarray, b: np.ndarray, threshold: int = 24) -> np.ndarray:
    """Mask of pixels that differ by more than ``threshold`` in some channel."""
    return (np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2)) > threshold


def luma(img: np.ndarray) -> np.ndarray:
    return img.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)


def text_rows(mask: np.ndarray) -> tuple[int, int]:
    """First and last row holding a changed pixel."""
    rows = np.flatnonzero(mask.sum(axis=1) >= 2)
    assert rows.size, "no changed pixels"
    return int(rows[0]), int(rows[-1])


def top_level_boxes(path: Path) -> list[str]:
    boxes, data = [], path.read_bytes()
    pos = 0
    while pos + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if size == 1:
            size = struct.unpack(">Q", data[pos + 8 : pos + 16])[0]
        elif size == 0:
            size = len(data) - pos
        assert size >= 8
        boxes.append(kind.decode("latin-1"))
        pos += size
    assert pos == len(data)
    return boxes


def assert_mp4(path: Path, width: int, height: int, duration: float, audio: bool) -> None:
    video = streams(path, "video")
    assert len(video) == 1
    assert (int(video[0]["width"]), int(video[0]["height"])) == (width, height)
    assert video[0]["codec_name"] == "h264"
    assert video[0]["pix_fmt"] == "yuv420p"
    sound = streams(path, "audio")
    if audio:
        assert [s["codec_name"] for s in sound] == ["aac"]
    else:
        assert sound == []
    assert float(ffprobe(path)["format"]["duration"]) == pytest.approx(duration, abs=0.1)
    boxes = top_level_boxes(path)
    assert "moov" in boxes and "mdat" in boxes
    assert boxes.index("moov") < boxes.index("mdat"), boxes  # faststart


# --------------------------------------------------------------------------- sizes, probing, fonts


def test_probe_video(media):
    assert probe_video(media["grey"]) == VideoInfo(640, 360, pytest.approx(6.0, abs=0.05), True)
    info = probe_video(media["blue43"])
    assert (info.width, info.height, info.has_audio) == (640, 480, False)
    assert info.duration == pytest.approx(4.0, abs=0.05)


def test_probe_video_rotated(media):
    info = probe_video(media["rotated"])
    assert (info.width, info.height) == (360, 640)


def test_probe_video_audio_only(media):
    with pytest.raises(BurnError) as e:
        probe_video(media["audio"])
    assert str(e.value) == "The video has no picture to draw subtitles on."


def test_probe_video_broken(media):
    with pytest.raises(BurnError) as e:
        probe_video(media["broken"])
    assert str(e.value).startswith("ffmpeg could not read this video: ")
    assert len(str(e.value)) > len("ffmpeg could not read this video: ") + 5


def test_picture_seconds_reads_the_packets_not_the_header(media, tmp_path):
    """Issue 56: a burn encodes every frame, so a burned job is charged for the picture's length as
    its packets give it, whatever the header claims (here a Matroska claiming one second)."""
    assert picture_seconds(media["long_picture"], max_seconds=60, timeout=60) == pytest.approx(5.9, abs=0.01)
    lying = tmp_path / "lying.mkv"
    _ffmpeg("-i", str(media["long_picture"]), "-c", "copy", str(lying))
    claim_matroska_duration(lying, 1000.0)
    assert probe_video(lying).duration == pytest.approx(1.0)
    assert picture_seconds(lying, max_seconds=60, timeout=60) == pytest.approx(5.9, abs=0.05)
    # read no further than asked: a lie of hours costs the limit's demux, not the hours'
    assert picture_seconds(lying, max_seconds=3, timeout=60) == pytest.approx(2.9, abs=0.05)


def test_picture_seconds_of_no_picture_or_no_video(media):
    with pytest.raises(BurnError) as e:
        picture_seconds(media["audio"], max_seconds=60, timeout=60)
    assert str(e.value) == "The video has no picture to draw subtitles on."
    with pytest.raises(BurnError) as e:
        picture_seconds(media["broken"], max_seconds=60, timeout=60)
    assert str(e.value).startswith("ffmpeg could not read this video: ")


# --------------------------------------------------------------------------- ASS


def test_write_ass(tmp_path):
    import pysubs2

    path = write_ass(
        CUES + [Cue(5.0, 5.0, ["empty duration"])],
        tmp_path / "a.ass",
        width=1280,
        height=720,
        font_size="large",
        language="ja",
    )
    subs = pysubs2.load(str(path))
    assert subs.info["PlayResX"] == "1280" and subs.info["PlayResY"] == "720"
    assert subs.info["WrapStyle"] == "2"  # our lines, never re-wrapped by libass
    style = subs.styles["Default"]
    assert style.fontname == "Noto Sans CJK JP"
    assert style.fontsize == pytest.approx(72.0)  # 0.10 * 720
    assert style.alignment == pysubs2.Alignment.BOTTOM_CENTER
    assert style.marginv == 36  # 5 % of 720
    assert style.borderstyle == 1 and style.shadow == 0
    assert style.outline == pytest.approx(72 * 0.07, abs=0.1)
    assert (style.primarycolor.r, style.primarycolor.g, style.primarycolor.b, style.primarycolor.a) == (
        255,
        255,
        255,
        0,
    )
    assert (style.outlinecolor.r, style.outlinecolor.g, style.outlinecolor.b, style.outlinecolor.a) == (0, 0, 0, 0)
    assert [(e.start, e.end) for e in subs.events] == [(500, 1500), (2500, 3500), (4000, 5000)]
    assert subs.events[0].text == "Hello subtitles, this is line one\\Nand here is a second line"
    raw = subs.events[2].text
    assert "{" not in raw.replace("\\{", "") and "}" not in raw.replace("\\}", "")
    assert "\\N" not in raw and "\\f" not in raw  # every transcript backslash is followed by a word joiner
    assert raw.count("\\\u2060") == 2

    boxed = pysubs2.load(str(write_ass(CUES, tmp_path / "b.ass", width=1920, height=1080, background=True)))
    style = boxed.styles["Default"]
    assert style.fontname == "DejaVu Sans"
    assert style.fontsize == pytest.approx(0.07 * 1080, abs=0.1)
    assert style.borderstyle == 4
    assert (style.backcolor.r, style.backcolor.g, style.backcolor.b) == (0, 0, 0)
    assert 0x4D <= style.backcolor.a <= 0x80  # about 40 % transparent
    assert style.outlinecolor.a == 0xFF  # no outline around the glyphs inside the box


# --------------------------------------------------------------------------- outputs


def test_default_output(burned):
    out = burned.get("default")
    assert_mp4(out, 1280, 720, 6.0, audio=True)
    assert not list(out.parent.glob("*.ass"))  # the temporary ASS file is gone


def test_hd_output(burned):
    assert_mp4(burned.get("hd", quality="hd"), 1920, 1080, 6.0, audio=True)


def test_uhd_output(burned):
    out = burned.get("uhd", source="short", cues=[Cue(0.2, 1.8, ["Ultra HD"])], quality="uhd")
    assert_mp4(out, 3840, 2160, 2.0, audio=False)
    lower = frame(out, 1.0)[int(2160 * 0.75) :]
    assert (lower.min(axis=2) > 235).sum() > 1000  # white text is drawn


def test_four_three_without_audio(burned):
    out = burned.get("blue43", source="blue43", quality="default")
    assert_mp4(out, 960, 720, 4.0, audio=False)
    assert changed(frame(out, T_ONE_LINE), frame(out, T_NONE)).sum() > 200


def test_max_seconds_ends_picture_and_sound_there(burned):
    """Issue 56: the burn stops at the length charged, however long the source's streams run."""
    out = burned.get("cut", max_seconds=2.0)
    assert_mp4(out, 1280, 720, 2.0, audio=True)
    assert [float(s["duration"]) for s in streams(out, "video") + streams(out, "audio")] == [2.0, 2.0]
    fractions = burned.progress["cut"]
    assert fractions[-1] == 1.0 and len(fractions) >= 2, "progress counts the 2 s made, not the 6 s there"


def test_progress(burned):
    burned.get("default")
    fractions = burned.progress["default"]
    assert len(fractions) >= 2
    assert fractions[-1] == 1.0
    assert all(0 < a < b for a, b in zip(fractions, fractions[1:]))


def test_text_only_in_lower_part(burned):
    out = burned.get("default")
    ref = frame(out, T_NONE)
    for t in (T_TWO_LINES, T_ONE_LINE):
        diff = changed(frame(out, t), ref)
        assert diff[int(720 * 0.7) :].sum() > 500, t  # text in the lower part
        assert diff[: int(720 * 0.6)].sum() == 0, t  # nothing above
    # the outline style leaves most of the lower band as it was, and draws white and black
    img = frame(out, T_TWO_LINES)
    band = changed(img, ref)[int(720 * 0.75) :]
    assert band.mean() < 0.2
    lower = img[int(720 * 0.75) :]
    assert (lower.min(axis=2) > 235).sum() > 500  # white glyphs
    assert (lower.max(axis=2) < 30).sum() > 500  # black outline


def test_background_box(burned):
    out = burned.get("box", background=True)
    outline = burned.get("default")
    y0 = int(720 * 0.75)
    ref = luma(frame(out, T_NONE)[y0:])
    boxed = luma(frame(out, T_TWO_LINES)[y0:])
    plain = luma(frame(outline, T_TWO_LINES)[y0:])
    assert ref.mean() == pytest.approx(GREY, abs=3)
    # the box darkens the band
    assert boxed.mean() < ref.mean() - 15
    # many dark-but-not-black pixels (grey seen through the box: about 0.6 * 192), few without a box
    box_dark = ((boxed > 50) & (boxed < 110)).sum()
    plain_dark = ((plain > 50) & (plain < 110)).sum()
    assert box_dark > 20_000
    assert box_dark > 10 * plain_dark
    # no black pixels: no outline, and one box per cue, so no darker stripe where two line boxes overlap
    assert (boxed < 50).sum() < 200
    # the box is one rectangle: its rows are contiguous
    rows = np.flatnonzero(((boxed > 50) & (boxed < 110)).sum(axis=1) > 100)
    assert rows.size > 60 and rows[-1] - rows[0] + 1 == rows.size


def test_xl_text_is_taller(burned):
    default = burned.get("default")
    xl = burned.get("xl", font_size="xl")
    heights = {}
    for name, out in (("default", default), ("xl", xl)):
        top, bottom = text_rows(changed(frame(out, T_ONE_LINE), frame(out, T_NONE)))
        heights[name] = bottom - top + 1
    assert heights["xl"] > heights["default"]
    assert 1.4 <= heights["xl"] / heights["default"] <= 2.2, heights
    expected = FONT_SCALE["xl"] / FONT_SCALE["default"]
    assert heights["xl"] / heights["default"] == pytest.approx(expected, rel=0.15)


def test_transcript_tags_are_printed_not_obeyed(burned):
    out = burned.get("default")
    ref = frame(out, T_NONE)
    top1, bottom1 = text_rows(changed(frame(out, T_ONE_LINE), ref))
    top2, bottom2 = text_rows(changed(frame(out, T_TAGS), ref))
    # "{\fs200}Hxg \N Hxg {x}" stays one line of the normal size ("{" and "}" may reach a little lower)
    assert abs((bottom2 - top2) - (bottom1 - top1)) <= 0.25 * (bottom1 - top1)
    # and it is wider than "Hxg" alone
    cols1 = np.flatnonzero(changed(frame(out, T_ONE_LINE), ref).any(axis=0))
    cols2 = np.flatnonzero(changed(frame(out, T_TAGS), ref).any(axis=0))
    assert cols2[-1] - cols2[0] > 3 * (cols1[-1] - cols1[0])


def test_cjk_cue_renders(burned):
    assert font_for("ja") in font_families()
    cues = [Cue(0.5, 1.5, ["日本語の字幕です"]), Cue(2.5, 3.5, ["こんにちは、世界"])]
    out = burned.get("ja", cues=cues, language="ja")
    ref = frame(out, T_NONE)
    for t in (T_TWO_LINES, T_ONE_LINE):
        diff = changed(frame(out, t), ref)
        assert diff[int(720 * 0.7) :].sum() > 1000
        assert diff[: int(720 * 0.6)].sum() == 0
        # glyphs, not tofu boxes: the font draws them; count distinct white columns
        assert diff[int(720 * 0.7) :].any(axis=0).sum() > 200


def test_hostile_paths_and_no_cues(media, tmp_path):
    folder = tmp_path / "it's a [folder], with: colons; and \\ slashes"
    out = burn(media["short"], [Cue(0.2, 1.8, ["Quoted path"])], folder / "out put.mp4")
    assert out.exists()
    lower = frame(out, 1.0)[int(720 * 0.75) :]
    assert (lower.min(axis=2) > 235).sum() > 300
    assert [p.name for p in folder.iterdir()] == ["out put.mp4"]
    # no cues at all: the picture is just scaled and re-encoded
    empty = burn(media["short"], [], tmp_path / "empty.mp4")
    assert_mp4(empty, 1280, 720, 2.0, audio=False)


def test_audio_only_raises(media, tmp_path):
    with pytest.raises(BurnError) as e:
        burn(media["audio"], CUES, tmp_path / "o.mp4")
    assert str(e.value) == "The video has no picture to draw subtitles on."
    assert not (tmp_path / "o.mp4").exists()


def test_broken_source_raises(media, tmp_path):
    with pytest.raises(BurnError) as e:
        burn(media["broken"], CUES, tmp_path / "o.mp4")
    message = str(e.value)
    assert message.startswith("ffmpeg could not read this video: ")
    assert "Invalid data" in message or "moov" in message
    assert list(tmp_path.iterdir()) == []


def test_timeout_kills_and_cleans_up(media, tmp_path):
    with pytest.raises(BurnError) as e:
        burn(media["grey"], CUES, tmp_path / "o.mp4", quality="hd", options=BurnOptions(timeout=0.3))
    assert str(e.value) == "Drawing subtitles took longer than 1 second and was stopped."
    assert list(tmp_path.iterdir()) == []


def test_ffmpeg_failure_reports_the_cause(media, tmp_path):
    # the subtitles file is missing: ffmpeg's last lines are generic ("Error while processing the
    # decoded data..."); the error names the cause instead
    cmd = burn_command(
        media["short"], tmp_path / "missing.ass", tmp_path / "o.mp4", width=1280, height=720, has_audio=False
    )
    with pytest.raises(BurnError) as e:
        encode._run_ffmpeg(cmd, 2.0, None, 60)
    assert str(e.value) == f"Drawing subtitles failed: Unable to open {tmp_path / 'missing.ass'}"
