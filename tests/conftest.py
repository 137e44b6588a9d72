import pytest

from tests.media_server import MediaServer, build_media


@pytest.fixture(scope="session")
def media_server(tmp_path_factory):
    """A MediaServer on 127.0.0.1 serving test media made once per session (see tests/media_server.py)."""
    folder = tmp_path_factory.mktemp("media")
    build_media(folder)
    with MediaServer(folder) as server:
        yield server
