"""ffmpeg and ffprobe read the files the guarded fetcher stored, and nothing those files point
at: a "video" that is really a playlist of URLs (HLS, a concat list) must not make them fetch
those URLs past the address guard (issue 16)."""

import pytest

from transcription.pipeline import audio


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
