"""Listing playlists and channels with yt-dlp's flat extraction, from an RSS feed on 127.0.0.1."""

import pytest

from tests.support import feed
from transcription.pipeline.fetch.playlist import PlaylistError, channel_tab, channel_tab_url, list_playlist


@pytest.fixture
def long_feed(media_server):
    items = [(f"Episode {i}", media_server.url(f"/files/speech.mp4?ep={i}"), 60 + i) for i in range(27)]
    items[3] = ("Gone", media_server.url("/status/404"), 61)
    items[4] = ("Forbidden", media_server.url("/status/403"), 62)
    items[5] = ("Live now", media_server.url("/live/index.m3u8"), None)
    media_server.routes["/feeds/long.xml"] = lambda req: req.send_bytes(feed(items), "application/rss+xml")
    return media_server.url("/feeds/long.xml"), items


def test_it_lists_the_first_25_with_durations_and_makes_no_media_requests(media_server, long_feed):
    url, items = long_feed
    media_server.clear_log()
    listing = list_playlist(url, allow_private=True, max_videos=25)
    assert listing.title == "Test podcast" and listing.total == 27
    assert len(listing.videos) == 25
    assert [v.title for v in listing.videos] == [name for name, _, _ in items[:25]]
    assert listing.videos[0].duration == 60 and listing.videos[24].duration == 84
    assert listing.videos[0].id == "Episode 0"
    assert listing.videos[3].url == media_server.url("/status/404")
    assert listing.is_channel is False and listing.tab == "videos"
    assert media_server.count("/feeds/") == 1
    assert media_server.count("/files/") == media_server.count("/status/") == media_server.count("/live/") == 0


def test_a_single_video_is_not_a_playlist(media_server):
    with pytest.raises(PlaylistError, match="single video"):
        list_playlist(media_server.url("/files/speech.mp4"), allow_private=True, max_videos=25)


def test_an_unreachable_or_private_listing_is_refused(media_server):
    with pytest.raises(PlaylistError, match="404"):
        list_playlist(media_server.url("/status/404"), allow_private=True, max_videos=25)
    with pytest.raises(PlaylistError, match="private network"):
        list_playlist(media_server.url("/feeds/long.xml"), allow_private=False, max_videos=25)
    with pytest.raises(PlaylistError, match="http and https"):
        list_playlist("ftp://example.com/list", allow_private=False, max_videos=25)


@pytest.mark.parametrize(
    "url,expected",
    [
        ("https://www.youtube.com/@somechannel", (True, "videos")),
        ("https://www.youtube.com/@somechannel/", (True, "videos")),
        ("https://www.youtube.com/@somechannel/videos", (True, "videos")),
        ("https://www.youtube.com/@somechannel/streams", (True, "streams")),
        ("https://www.youtube.com/@somechannel/shorts", (True, "shorts")),
        ("https://www.youtube.com/channel/UC123/shorts", (True, "shorts")),
        ("https://www.youtube.com/c/Legacy/streams", (True, "streams")),
        ("https://www.youtube.com/user/olduser", (True, "videos")),
        ("https://www.youtube.com/@somechannel/featured", (True, "videos")),
        ("https://www.youtube.com/playlist?list=PL123", (False, "videos")),
        ("https://example.com/feed.xml", (False, "videos")),
    ],
)
def test_channel_tabs_are_read_from_the_url(url, expected):
    assert channel_tab(url) == expected


def test_a_channel_url_is_listed_at_its_tab():
    assert channel_tab_url("https://www.youtube.com/@chan") == "https://www.youtube.com/@chan/videos"
    assert channel_tab_url("https://www.youtube.com/@chan/featured") == "https://www.youtube.com/@chan/videos"
    assert channel_tab_url("https://www.youtube.com/@chan/shorts") == "https://www.youtube.com/@chan/shorts"
    assert channel_tab_url("https://example.com/feed.xml") == "https://example.com/feed.xml"
