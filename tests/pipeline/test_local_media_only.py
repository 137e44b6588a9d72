"""ffmpeg and ffprobe read the files the guarded fetcher stored, and nothing those files point
at: a "video" that is really a playlist of URLs (HLS, a concat list) must not make them fetch
those URLs past the address guard (issue 16), nor a file on this machine (issue 41)."""

import ast
import subprocess
from pathlib import Path

import pytest

import transcription
from tests.support import REFERENCING_FILES, canary_pipes, wait_until
from transcription.pipeline import burn
from transcription.pipeline.media import audio, ffmpeg_commands, media_probe


def _pointing_at(media_server, tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text.format(server=media_server.base_url))
    return path


PLAYLISTS = {
    "media.m3u8": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n{server}/hls/seg1.ts?inside\n#EXT-X-ENDLIST\n",
    "media.mp4": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n{server}/hls/seg2.ts?inside\n#EXT-X-ENDLIST\n",
    "media.ffconcat": "ffconcat version 1.0\nfile '{server}/hls/seg3.ts?inside'\n",
}


@pytest.mark.parametrize("name", PLAYLISTS)
def test_a_stored_file_that_lists_urls_is_not_followed(media_server, tmp_path, name):
    path = _pointing_at(media_server, tmp_path, name, PLAYLISTS[name])
    before = media_server.count("/hls/")
    with pytest.raises(audio.AudioError):
        audio.probe_audio(path, timeout=20)
    with pytest.raises(audio.AudioError):
        audio.to_wav(path, tmp_path / "out.wav", timeout=20)
    with pytest.raises(audio.AudioError):
        audio.cut_media(path, tmp_path / "cut.mp4", seconds=1, timeout=20)
    assert media_server.count("/hls/") == before, "ffmpeg fetched what the stored file pointed at"


# --- files on this machine (issue 41): a playlist or list naming a local file reads nothing

REFUSAL = {
    "hls": "The file is an HLS playlist (.m3u8), which names other files",
    "concat": None,  # no header, so no demuxer takes it for a list: only "not media"
    "ffconcat": "The file is a concat list (ffconcat), which names other files",
    "dash": "The file is a DASH manifest (.mpd), which names other files",
}


def test_the_canary_sees_a_reader(tmp_path):
    """The pipes these tests watch do see a reader (else the tests below could not fail)."""
    with canary_pipes(tmp_path / "canary") as opened:
        with (tmp_path / "canary.wav").open("rb") as handle:
            assert handle.read() == b""
        assert wait_until(opened.is_set, "the reader seen", timeout=5)


def _refused(error: Exception, kind: str) -> None:
    expected = REFUSAL[kind]
    if expected:
        assert str(error).startswith(expected), str(error)


@pytest.mark.parametrize("kind", REFERENCING_FILES)
def test_a_file_naming_a_local_file_reads_nothing(tmp_path, kind):
    path = tmp_path / "upload"
    path.write_text(REFERENCING_FILES[kind](tmp_path / "canary"))
    with canary_pipes(tmp_path / "canary") as opened:
        with pytest.raises(media_probe.NotMedia) as not_media:
            media_probe.probe_media(path, timeout=20)
        _refused(not_media.value, kind)
        for attempt in (
            lambda: audio.probe_audio(path, timeout=20),
            lambda: audio.to_wav(path, tmp_path / "out.wav", timeout=20),
            lambda: audio.cut_media(path, tmp_path / "cut.mp4", seconds=1, timeout=20),
        ):
            with pytest.raises(audio.AudioError) as failed:
                attempt()
            _refused(failed.value, kind)
        with pytest.raises(burn.BurnError) as failed:
            burn.probe_video(path, timeout=20)
        _refused(failed.value, kind)
        # the encoder's own command, past the probe that would have refused it first
        ass = tmp_path / "cues.ass"
        burn.write_ass([], ass, width=320, height=180)
        command = burn.burn_command(path, ass, tmp_path / "out.mp4", width=320, height=180, has_audio=True)
        encoded = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
        assert encoded.returncode != 0
        assert not opened.is_set(), "ffmpeg opened the local file the playlist named"


def test_every_command_on_media_begins_in_ffmpeg_commands():
    """No module builds its own ffmpeg or ffprobe command line: a list or tuple that begins with
    "ffmpeg"/"ffprobe" appears in ffmpeg_commands.py alone, and the service imports from there only
    the builders that whitelist their input."""
    root = Path(transcription.__file__).parent
    offenders = []
    for module in root.rglob("*.py"):
        if module.name == "ffmpeg_commands.py":
            continue
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
                first = node.elts[0]
                if isinstance(first, ast.Constant) and first.value in ("ffmpeg", "ffprobe"):
                    offenders.append(f"{module}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("ffmpeg_commands"):
                offenders += [f"{module}: {alias.name}" for alias in node.names if alias.name == "ffmpeg"]
    assert offenders == []


def test_no_format_that_follows_references_is_allowed():
    """The allow-list holds none of ffmpeg's demuxers that open other files or URLs."""
    allowed = set(ffmpeg_commands.MEDIA_FORMATS.split(","))
    following = {"hls", "dash", "concat", "sdp", "rtp", "rtsp", "imf", "webm_dash_manifest", "image2", "vobsub"}
    following |= {"image2pipe", "lavfi", "avisynth", "vapoursynth", "tee", "applehttp", "mpegtsraw"}
    assert allowed & following == set()
