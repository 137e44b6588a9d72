"""An error nobody handled is reported for real: logged with the request's id, mailed to ADMINS,
sent to a Sentry-compatible receiver (one this test starts on 127.0.0.1), and the 500's body says
so only when it is so."""

from __future__ import annotations

import gzip
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core import mail
from django.test import Client, override_settings

from tests.crash_urls import CRASH_MESSAGE


@pytest.fixture
def crash_client():
    with override_settings(ROOT_URLCONF="tests.crash_urls"):
        yield Client(raise_request_exception=False)


class _Receiver(BaseHTTPRequestHandler):
    envelopes: list[bytes] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).envelopes.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def sentry_receiver():
    """A Sentry-compatible receiver on 127.0.0.1 and the SDK pointed at it (closed afterwards)."""
    import sentry_sdk

    from config.error_reporting import start_sentry

    _Receiver.envelopes = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    dsn = f"http://publickey@127.0.0.1:{server.server_port}/1"
    start_sentry(dsn, "test")
    try:
        with override_settings(SENTRY_DSN=dsn):
            yield _Receiver.envelopes
    finally:
        sentry_sdk.get_client().close(timeout=2)
        sentry_sdk.init()  # no DSN: the SDK sends nothing for the rest of the run
        server.shutdown()


def test_an_unhandled_error_is_sent_to_the_dsn_with_the_request_id(db, crash_client, sentry_receiver):
    import sentry_sdk

    response = crash_client.get("/crash-for-test", HTTP_X_REQUEST_ID="req-4711")
    sentry_sdk.flush(timeout=5)
    assert response.status_code == 500
    assert response.json() == {"detail": "Internal error (request id req-4711); the operators have been told."}
    assert response["X-Request-ID"] == "req-4711"
    sent = b"\n".join(sentry_receiver)
    assert CRASH_MESSAGE.encode() in sent, sent[:500]
    events = [json.loads(line) for line in sent.splitlines() if line.startswith(b"{") and b'"exception"' in line]
    assert events and events[0]["exception"]["values"][-1]["type"] == "RuntimeError"


@override_settings(ADMINS=[("Ops", "ops@example.org")])
def test_an_unhandled_error_is_mailed_to_the_admins(db, crash_client):
    response = crash_client.get("/crash-for-test")
    assert response.status_code == 500
    request_id = response["X-Request-ID"]
    assert request_id and request_id in response.json()["detail"]
    assert "operators have been told" in response.json()["detail"]
    [message] = [m for m in mail.outbox if m.to == ["ops@example.org"]]
    assert CRASH_MESSAGE in message.body


@override_settings(ADMINS=[], SENTRY_DSN="")
def test_without_reporting_the_500_does_not_promise_anyone_was_told(db, crash_client, caplog):
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = crash_client.get("/crash-for-test", HTTP_X_REQUEST_ID="not a plain id!")
    detail = response.json()["detail"]
    assert "told" not in detail.replace("quote it to the operators", "")
    request_id = response["X-Request-ID"]
    assert request_id != "not a plain id!" and request_id in detail
    # the log line of the error names the same request id
    [record] = [r for r in caplog.records if r.name == "django.request" and r.levelno >= logging.ERROR]
    assert request_id_of_record(record) == request_id
    assert not mail.outbox


def request_id_of_record(record) -> str:
    from config.error_reporting import RequestIdFilter

    RequestIdFilter().filter(record)
    return record.request_id
