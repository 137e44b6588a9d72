"""fetch.py against real yt-dlp, real ffprobe and the local media server (no mocks)."""

from __future__ import annotations

import ipaddress
import socket
import threading
import urllib.parse
import uuid

import pytest

from harness.media_files import media_duration
from tests.support import ends_within
from transcription.pipeline import fetch
from transcription.pipeline.fetch import FetchError, guard
from transcription.pipeline.media import audio

LOOPBACK = ["127.0.0.1/32"]  # "trust the test server" for the redirect tests


def tag() -> str:
    """A unique query string, so a test can count its own requests."""
    return f"t={uuid.uuid4().hex[:12]}"


# --------------------------------------------------------------------------- check_url


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/video.mp4",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/plain,hello",
        "//example.com/video.mp4",
        "example.com/video.mp4",
    ],
)
def test_check_url_accepts_only_http_and_https(url):
    with pytest.raises(FetchError, match="^Only http and https addresses are accepted.$"):
        fetch.check_url(url, allow_private=False)
    with pytest.raises(FetchError, match="^Only http and https addresses are accepted.$"):
        fetch.check_url(url, allow_private=True)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "100.64.0.1",
        "255.255.255.255",
        "[::1]",
        "[::]",
        "[fe80::1]",
        "[fc00::1]",
        "[ff02::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:10.0.0.1]",
    ],
)
def test_check_url_refuses_private_addresses(host):
    url = f"http://{host}:8080/video.mp4"
    with pytest.raises(FetchError, match="^The address points to a private network address, which is not allowed.$"):
        fetch.check_url(url, allow_private=False)
    fetch.check_url(url, allow_private=True)  # allowed when asked for


@pytest.mark.parametrize(
    "url", ["http://93.184.215.14/v.mp4", "https://[2606:4700::6810:84e5]/v", "HTTP://8.8.8.8:8080/x"]
)
def test_check_url_accepts_public_addresses(url):
    fetch.check_url(url, allow_private=False)  # a refusal raises FetchError
    _, host, _ = guard.AddressPolicy.split(url)
    # the address itself is what the policy lets through, with no network allowed beside it
    assert guard.AddressPolicy(allow_private=False).ip_allowed(ipaddress.ip_address(host))


def test_check_url_refuses_a_name_that_resolves_to_loopback():
    with pytest.raises(FetchError, match="private network address"):
        fetch.check_url("http://localhost/video.mp4", allow_private=False)
    with pytest.raises(FetchError, match="private network address"):
        fetch.check_url("http://localhost/video.mp4", allow_private=False, allowed_networks=["127.0.0.2/32"])
    # every address localhost resolves to (127.0.0.1, maybe ::1) must be covered
    fetch.check_url("http://localhost/video.mp4", allow_private=False, allowed_networks=["127.0.0.0/8", "::1/128"])
    fetch.check_url("http://127.0.0.1/video.mp4", allow_private=False, allowed_networks=LOOPBACK)


def test_check_url_rejects_garbage():
    with pytest.raises(FetchError, match="^The address is not valid.$"):
        fetch.check_url("http://127.0.0.1:99999999/x", allow_private=True)
    with pytest.raises(FetchError, match="^The address is not valid.$"):
        fetch.check_url("http:///nohost", allow_private=True)


def test_check_url_unknown_host():
    with pytest.raises(FetchError, match="^The address could not be reached: the host name .* could not be resolved.$"):
        fetch.check_url("http://no-such-host.invalid/v.mp4", allow_private=False)


# --------------------------------------------------------------------------- private addresses, end to end


def test_private_address_refused_before_any_request(media_server, tmp_path):
    t = tag()
    for url in (
        media_server.url(f"/files/speech.mp4?{t}"),
        f"http://localhost:{media_server.port}/files/speech.mp4?{t}",
    ):
        with pytest.raises(FetchError, match="private network address"):
            fetch.probe(url, fetch.FetchLimits(allow_private=False))
        with pytest.raises(FetchError, match="private network address"):
            fetch.download(url, tmp_path, fetch.FetchLimits(allow_private=False))
    assert media_server.count(f"/files/speech.mp4?{t}") == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target_host", ["127.0.0.2", "[::1]", "10.0.0.1", "169.254.169.254"])
def test_redirect_to_private_address_refused(media_server, tmp_path, target_host):
    """The first hop is allowed (127.0.0.1 stands for a public host here); the
    redirect target is not, and is never contacted."""
    t = tag()
    target = f"http://{target_host}:{media_server.port}/files/speech.mp4?{t}"
    url = media_server.url("/redirect?" + urllib.parse.urlencode({"to": target, "t": t}))
    with (
        ends_within(5 + 20, "a probe and a download refused at the redirect"),
        pytest.raises(FetchError, match="^The address points to a private network address, which is not allowed.$"),
    ):
        fetch.probe(url, fetch.FetchLimits(allow_private=False, probe_timeout=5), allowed_networks=LOOPBACK)
    with pytest.raises(FetchError, match="^The address points to a private network address, which is not allowed.$"):
        fetch.download(
            url, tmp_path, fetch.FetchLimits(allow_private=False, download_timeout=20), allowed_networks=LOOPBACK
        )
    assert media_server.count("/redirect?") >= 2
    assert media_server.count(f"/files/speech.mp4?{t}") == 0
    assert list(tmp_path.iterdir()) == []


def test_redirect_to_other_schemes_refused(media_server):
    for target in ("ftp://127.0.0.1/x.mp4", "file:///etc/passwd"):
        url = media_server.url("/redirect?" + urllib.parse.urlencode({"to": target}))
        with pytest.raises(FetchError, match="^Only http and https addresses are accepted.$"):
            fetch.probe(url, fetch.FetchLimits(allow_private=False, probe_timeout=5), allowed_networks=LOOPBACK)


def test_redirect_to_allowed_address_is_followed(media_server):
    t = tag()
    target = media_server.url(f"/files/speech.mp4?{t}")
    url = media_server.url("/redirect?" + urllib.parse.urlencode({"to": target}))
    info = fetch.probe(url, fetch.FetchLimits(allow_private=False), allowed_networks=LOOPBACK)
    assert info.duration == pytest.approx(media_duration(media_server.folder / "speech.mp4"), abs=0.1)
    assert media_server.count(f"/files/speech.mp4?{t}") >= 1


def test_connection_level_check(media_server):
    """The socket factory checks the addresses it actually connects to (so a DNS
    answer that changes between the URL check and the connection is caught)."""
    session = guard.Session(guard.AddressPolicy(False, LOOPBACK))
    sock = session.connect(("127.0.0.1", media_server.port), timeout=5)
    sock.close()
    with pytest.raises(guard.Blocked):
        session.connect(("127.0.0.2", media_server.port), timeout=5)
    assert "private network address" in str(session.failure)
    narrow = guard.Session(guard.AddressPolicy(False, ["127.0.0.2/32"]))
    with pytest.raises(guard.Blocked):
        narrow.connect(("localhost", media_server.port), timeout=5)  # checked after resolution
    open_session = guard.Session(guard.AddressPolicy(True))
    open_session.connect(("localhost", media_server.port), timeout=5).close()


def test_an_answer_that_is_not_an_ip_address_is_refused():
    """A stream lookup answers IP addresses only; anything else the policy cannot judge, so it refuses it."""
    not_an_ip = (socket.AF_UNIX, socket.SOCK_STREAM, 0, "", (0, b"/run/socket"))
    with pytest.raises(FetchError, match="private network address"):
        guard.AddressPolicy(False).check_addrinfo("example.com", [not_an_ip])


def test_connect_sets_a_timeout_only_when_given_one(media_server):
    """Like socket.create_connection: http.client's default (no timeout given) leaves the socket's alone."""
    session = guard.Session(guard.AddressPolicy(True))
    with session.connect(("127.0.0.1", media_server.port)) as sock:
        assert sock.gettimeout() == socket.getdefaulttimeout()
    with session.connect(("127.0.0.1", media_server.port), timeout=None) as sock:
        assert sock.gettimeout() is None
    with session.connect(("127.0.0.1", media_server.port), timeout=2.5) as sock:
        assert sock.gettimeout() == 2.5


# --------------------------------------------------------------------------- probe


def test_probe_direct_mp4(media_server):
    info = fetch.probe(media_server.url("/files/speech.mp4"), fetch.FetchLimits(allow_private=True))
    assert info.id == "speech"
    assert info.title == "speech"
    assert info.extractor == "Generic"
    assert info.is_live is False
    # yt-dlp's generic extractor does not know the length; ffprobe reads it from the server.
    assert info.duration == pytest.approx(media_duration(media_server.folder / "speech.mp4"), abs=0.1)
    assert info.webpage_url == media_server.url("/files/speech.mp4")


def test_probe_page_with_video_tag(media_server):
    info = fetch.probe(
        media_server.url("/page/video.html"), fetch.FetchLimits(allow_private=False), allowed_networks=LOOPBACK
    )
    assert info.title.startswith("A test video")
    assert info.duration == pytest.approx(media_duration(media_server.folder / "speech.mp4"), abs=0.1)


@pytest.mark.parametrize(
    "status, message",
    [
        (404, "The page was not found (HTTP 404)."),
        (410, "The page has been removed (HTTP 410)."),
        (403, "Access to the page was refused (HTTP 403)."),
        (500, "The site answered with an error (HTTP 500)."),
    ],
)
def test_probe_http_errors(media_server, status, message):
    with pytest.raises(FetchError) as e:
        fetch.probe(media_server.url(f"/status/{status}"), fetch.FetchLimits(allow_private=True))
    assert str(e.value) == message


def test_probe_page_without_media(media_server):
    with pytest.raises(FetchError) as e:
        fetch.probe(media_server.url("/page/nomedia.html"), fetch.FetchLimits(allow_private=True))
    assert str(e.value) == "No video or audio was found at this address."


def test_probe_refuses_live_hls_before_its_timeout(media_server, tmp_path):
    with ends_within(10, "the probe of a live stream"), pytest.raises(FetchError) as e:
        fetch.probe(media_server.url("/live/index.m3u8"), fetch.FetchLimits(allow_private=True, probe_timeout=10))
    assert str(e.value) == "Live broadcasts cannot be transcribed; try again when the broadcast has ended."
    with ends_within(10, "the download of a live stream"):
        with pytest.raises(FetchError, match="^Live broadcasts cannot be transcribed"):
            fetch.download(
                media_server.url("/live/index.m3u8"),
                tmp_path,
                fetch.FetchLimits(allow_private=True, download_timeout=10),
            )
    assert list(tmp_path.iterdir()) == []


def test_probe_refuses_over_12_hours(media_server, tmp_path):
    url = media_server.url("/long/index.m3u8")  # 4800 x 10 s, with #EXT-X-ENDLIST
    twelve_hours = 12 * 3600  # MAX_VIDEO_SECONDS' default, which the worker passes
    with pytest.raises(FetchError) as e:
        fetch.probe(url, fetch.FetchLimits(allow_private=True, max_duration=twelve_hours))
    assert str(e.value) == "The video is 13 h 20 min long; the limit is 12 hours."
    assert fetch.probe(url, fetch.FetchLimits(allow_private=True, max_duration=None)).duration == 48000
    with pytest.raises(FetchError, match="limit is 12 hours"):
        fetch.download(url, tmp_path, fetch.FetchLimits(allow_private=True, max_duration=twelve_hours))
    with pytest.raises(FetchError) as e:
        fetch.probe(url, fetch.FetchLimits(allow_private=True, max_duration=5400))
    assert str(e.value) == "The video is 13 h 20 min long; the limit is 90 minutes."


def test_probe_stalled_server_does_not_hang(media_server):
    with ends_within(3, "the probe of a stalled server"):
        info = fetch.probe(media_server.url("/stall"), fetch.FetchLimits(allow_private=True, probe_timeout=3))
    assert info.duration is None  # nothing could be read; the caller checks after download


# --------------------------------------------------------------------------- download


def test_download_mp4(media_server, tmp_path):
    path = fetch.download(
        media_server.url("/files/speech.mp4"), tmp_path / "job", fetch.FetchLimits(allow_private=True)
    )
    assert path.parent == tmp_path / "job"
    assert path.read_bytes() == (media_server.folder / "speech.mp4").read_bytes()
    assert audio.probe_audio(path) == pytest.approx(media_duration(media_server.folder / "speech.wav"), abs=0.05)


def test_download_from_page_through_guard(media_server, tmp_path):
    path = fetch.download(
        media_server.url("/page/video.html"),
        tmp_path,
        fetch.FetchLimits(allow_private=False),
        allowed_networks=LOOPBACK,
    )
    assert path.stat().st_size == (media_server.folder / "speech.mp4").stat().st_size


def test_download_hls_vod(media_server, tmp_path):
    t = tag()
    before = media_server.count("/hls/")
    path = fetch.download(
        media_server.url(f"/long/index.m3u8?segments=3&{t}"),
        tmp_path,
        fetch.FetchLimits(allow_private=False),
        allowed_networks=LOOPBACK,
    )
    assert media_server.count("/hls/") - before == 3
    # the three segments are the same file, so their timestamps repeat: compare bytes
    assert path.stat().st_size == 3 * (media_server.folder / "segment.ts").stat().st_size
    assert audio.probe_audio(path) > 0


def test_download_hls_with_private_segments_refused(media_server, tmp_path):
    """Fragment requests go through the same guard: a playlist on an allowed host
    whose segments live on a forbidden one downloads nothing."""
    t = tag()

    def playlist(req):
        lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:0"]
        for n in range(2):
            lines += ["#EXTINF:2.0,", f"http://127.0.0.2:{media_server.port}/hls/seg{n}.ts?{t}"]
        lines.append("#EXT-X-ENDLIST")
        req.send_bytes("\n".join(lines).encode(), "application/vnd.apple.mpegurl")

    media_server.routes["/test/private-segments.m3u8"] = playlist
    with pytest.raises(FetchError, match="^The address points to a private network address, which is not allowed.$"):
        fetch.download(
            media_server.url("/test/private-segments.m3u8"),
            tmp_path,
            fetch.FetchLimits(allow_private=False, download_timeout=30),
            allowed_networks=LOOPBACK,
        )
    assert media_server.count("/test/private-segments.m3u8") >= 1
    assert media_server.count(f"/hls/seg0.ts?{t}") == 0
    assert list(tmp_path.iterdir()) == []


def test_download_stalled_server(media_server, tmp_path):
    with ends_within(3, "a stalled download (the stall timeout)"), pytest.raises(FetchError) as e:
        fetch.download(
            media_server.url("/stall"),
            tmp_path,
            fetch.FetchLimits(allow_private=True, stall_timeout=3, download_timeout=60),
        )
    assert str(e.value) == "The download stalled: no data arrived for 3 seconds."
    assert list(tmp_path.iterdir()) == []


def test_download_endless_stream_size_bound(media_server, tmp_path):
    with pytest.raises(FetchError) as e:
        fetch.download(
            media_server.url("/endless"), tmp_path, fetch.FetchLimits(allow_private=True, max_bytes=5 * 1024**2)
        )
    assert str(e.value) == "The file is larger than the limit of 5 MB."  # not the wall-clock limit (3 h)
    assert list(tmp_path.iterdir()) == []


def test_download_endless_stream_wall_clock(media_server, tmp_path):
    with ends_within(4, "a download past its wall-clock limit"), pytest.raises(FetchError) as e:
        # slow enough never to reach the size bound, fast enough never to stall
        fetch.download(
            media_server.url("/endless?delay=0.3"),
            tmp_path,
            fetch.FetchLimits(allow_private=True, download_timeout=4, stall_timeout=3),
        )
    assert str(e.value) == "The download took longer than 4 seconds and was stopped."
    assert list(tmp_path.iterdir()) == []


def test_download_size_bound_from_content_length(media_server, tmp_path):
    size = (media_server.folder / "speech.mp4").stat().st_size
    with pytest.raises(FetchError) as e:
        fetch.download(
            media_server.url("/files/speech.mp4"), tmp_path, fetch.FetchLimits(allow_private=True, max_bytes=size // 2)
        )
    assert str(e.value).startswith("The file is larger than the limit of ")
    assert list(tmp_path.iterdir()) == []


def test_download_http_error(media_server, tmp_path):
    with pytest.raises(FetchError) as e:
        fetch.download(media_server.url("/status/404"), tmp_path, fetch.FetchLimits(allow_private=True))
    assert str(e.value) == "The page was not found (HTTP 404)."


def test_download_refused_connection(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(FetchError) as e:
        fetch.probe(f"http://127.0.0.1:{port}/v.mp4", fetch.FetchLimits(allow_private=True, probe_timeout=5))
    assert str(e.value) == "The address could not be reached: the connection was refused."


# --------------------------------------------------------------------------- DNS rebinding and ffprobe


class _Trap:
    """A listener standing for a service inside the network: it counts who connects."""

    def __init__(self, host: str, port: int):
        self.connections = 0
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


@pytest.fixture
def rebinding(media_server, monkeypatch):
    """`localhost` as a rebinding attacker serves it: this process's resolver (the address guard's)
    answers 127.0.0.2, which the test lets through as if it were public and where the media is
    served; any other resolver (ffprobe's own, in another process) answers the loopback address,
    where a trap stands on the same port. `flip_after` makes this process's answer change too."""
    from harness.media_server import MediaServer

    public = MediaServer(media_server.folder, host="127.0.0.2").start()
    traps = [_Trap("127.0.0.1", public.port)]
    try:
        traps.append(_Trap("::1", public.port))
    except OSError:
        pass  # no IPv6 loopback here
    real_getaddrinfo = socket.getaddrinfo
    state = {"answers": 0, "flip_after": None}

    def getaddrinfo(host, port, *args, **kwargs):
        if host != "localhost":
            return real_getaddrinfo(host, port, *args, **kwargs)
        state["answers"] += 1
        flipped = state["flip_after"] is not None and state["answers"] > state["flip_after"]
        address = "127.0.0.1" if flipped else "127.0.0.2"
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield public, traps, state
    for trap in traps:
        trap.close()
    public.stop()


def test_ffprobe_reads_through_the_guard_and_never_resolves_a_name_itself(rebinding):
    public, traps, _ = rebinding
    t = tag()
    url = f"http://localhost:{public.port}/files/speech.mp4?{t}"
    info = fetch.probe(url, fetch.FetchLimits(allow_private=False, probe_timeout=5), allowed_networks=["127.0.0.2/32"])
    assert sum(trap.connections for trap in traps) == 0, "something connected where the name rebinds"
    # The length came from ffprobe (yt-dlp does not know it), over our own guarded connections.
    assert info.duration == pytest.approx(media_duration(public.folder / "speech.mp4"), abs=0.1)
    assert public.count(f"/files/speech.mp4?{t}") >= 2


def test_a_name_that_rebinds_mid_probe_never_reaches_the_inside(rebinding):
    public, traps, state = rebinding
    state["flip_after"] = 1  # the page is fetched from the public address; every later lookup says loopback
    url = f"http://localhost:{public.port}/files/speech.mp4?{tag()}"
    try:
        info = fetch.probe(
            url, fetch.FetchLimits(allow_private=False, probe_timeout=5), allowed_networks=["127.0.0.2/32"]
        )
    except FetchError as error:
        assert "private network address" in str(error)
    else:
        assert info.duration is None
    assert sum(trap.connections for trap in traps) == 0
