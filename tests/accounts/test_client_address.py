"""One client-address rule under the production server (bin/web: gunicorn and uvicorn), driven
with rotating X-Forwarded-For headers as an attacker behind a same-host proxy would send them.

With TRUST_PROXY_HEADERS off the address is the TCP peer whatever the headers say: the sign-in
lockout, the sign-up limit, the API's limit on bad tokens and /metrics' networks all see one
client. With it on, only the address our proxy appended counts; what the client wrote before it
is never read."""

from __future__ import annotations

import http.cookiejar
import itertools
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.processes import running_web

PASSWORD = "correct-horse-battery-42"
web_db = pytest.mark.django_db(transaction=True)
_numbers = itertools.count(1)


def spoofed() -> str:
    """A new address each call, as a client rotating its X-Forwarded-For writes them."""
    number = next(_numbers)
    return f"203.0.{number // 250}.{number % 250 + 1}"


class Visitor:
    """A browser's worth of HTTP: cookies kept, CSRF token read from each form page."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect()
        )

    def send(self, method: str, path: str, *, form: dict | None = None, headers: dict | None = None):
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.base + path, data=data, headers=headers or {}, method=method)
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def post_form(self, path: str, fields: dict, headers: dict | None = None):
        """GET the form's page (for its CSRF token), then POST it, both with `headers`."""
        status, page = self.send("GET", path, headers=headers)
        assert status == 200, page[-2000:]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, page[-2000:]
        csrf = token.group(1)
        return self.send("POST", path, form={"csrfmiddlewaretoken": csrf, **fields}, headers=headers)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a 302 is an answer to look at


def sign_in(base: str, email: str, password: str, forwarded_for: str) -> int:
    headers = {"X-Forwarded-For": forwarded_for}
    return Visitor(base).post_form("/account/login/", {"username": email, "password": password}, headers)[0]


LIMITS = {
    "LOGIN_FAILURE_LIMIT": "3",
    "SIGNUPS_PER_HOUR": "2",
    "RATE_LIMIT_ANONYMOUS_PER_MINUTE": "3",
    "METRICS_ALLOWED_NETWORKS": "203.0.113.0/24",
    "METRICS_TOKEN": "",
}


@pytest.fixture(scope="module")
def web_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("web")


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker, web_folder):
    with django_db_blocker.unblock(), running_web(web_folder / "web.log", DATA_DIR=str(web_folder), **LIMITS) as base:
        yield base


@pytest.fixture(scope="module")
def proxied_web(django_db_setup, django_db_blocker, tmp_path_factory):
    folder = tmp_path_factory.mktemp("proxied")
    with (
        django_db_blocker.unblock(),
        running_web(
            folder / "web.log",
            DATA_DIR=str(folder),
            TRUST_PROXY_HEADERS="true",
            TRUSTED_PROXIES="127.0.0.1/32",
            **{**LIMITS, "METRICS_ALLOWED_NETWORKS": "127.0.0.1/32"},
        ) as base,
    ):
        yield base


@web_db
def test_a_rotating_forwarded_for_does_not_escape_the_sign_in_lockout(web):
    from accounts.services import account_create

    account_create("carol@example.com", password=PASSWORD)
    failures = [sign_in(web, "carol@example.com", "guess-1234-wrong", spoofed()) for _ in range(3)]
    assert failures == [200, 200, 429], "the third failure locks the peer out"
    assert sign_in(web, "carol@example.com", PASSWORD, spoofed()) == 429, "even with the right password"


@web_db
def test_a_rotating_forwarded_for_does_not_escape_the_sign_up_limit(web):
    from accounts.models import Account

    def sign_up(number):
        visitor = Visitor(web)
        fields = {"email": f"user{number}@example.com", "password": PASSWORD}
        return visitor.post_form("/account/signup/", fields, {"X-Forwarded-For": spoofed()})[0]

    assert [sign_up(number) for number in range(3)] == [200, 200, 429]
    assert not Account.objects.filter(user__email="user2@example.com").exists()


@web_db
def test_twelve_sign_ups_at_once_for_one_address_send_at_most_the_limit(web, web_folder):
    """The probe's 12 POSTs in 2 s, all at once here: the counts are taken under a lock."""
    from accounts.models import Signup

    def mails() -> int:
        return len(list((web_folder / "mail").glob("*"))) if (web_folder / "mail").exists() else 0

    visitors = [Visitor(web) for _ in range(12)]
    pages = [visitor.send("GET", "/account/signup/") for visitor in visitors]
    tokens = [re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1) for _, page in pages]
    before = mails()

    def sign_up(number):
        fields = {"csrfmiddlewaretoken": tokens[number], "email": "target@example.com", "password": PASSWORD}
        return visitors[number].send("POST", "/account/signup/", form=fields)[0]

    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = sorted(pool.map(sign_up, range(12)))
    assert answers == [200, 200] + [429] * 10, "SIGNUPS_PER_HOUR=2 from this one peer"
    assert mails() - before == 2 and Signup.objects.count() == 2


@web_db
def test_a_rotating_forwarded_for_does_not_escape_the_bad_token_limit(web):
    path = f"/v1/api/transcription/{uuid.uuid4()}"

    def bad_token():
        headers = {"Authorization": "Bearer not-a-token", "X-Forwarded-For": spoofed()}
        return Visitor(web).send("GET", path, headers=headers)[0]

    assert [bad_token() for _ in range(4)] == [401, 401, 401, 429]


@web_db
def test_metrics_ignore_a_forwarded_address_in_the_allowed_networks(web):
    status, _ = Visitor(web).send("GET", "/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    assert status == 403, "the peer is 127.0.0.1, outside METRICS_ALLOWED_NETWORKS here"


@web_db
def test_behind_a_trusted_proxy_only_the_address_it_appended_counts(proxied_web):
    from accounts.services import account_create

    account_create("carol@example.com", password=PASSWORD)
    # The client writes a new address each time; our proxy appends the one it saw: 198.51.100.7.
    failures = [
        sign_in(proxied_web, "carol@example.com", "guess-1234-wrong", f"{spoofed()}, 198.51.100.7") for _ in range(3)
    ]
    assert failures == [200, 200, 429]
    assert sign_in(proxied_web, "carol@example.com", PASSWORD, f"{spoofed()}, 198.51.100.7") == 429
    assert sign_in(proxied_web, "carol@example.com", PASSWORD, "198.51.100.8") == 302, "another client"

    metrics = Visitor(proxied_web).send("GET", "/metrics", headers={"X-Forwarded-For": "127.0.0.1, 203.0.113.9"})
    assert metrics[0] == 403, "the client as our proxy saw it is 203.0.113.9"
    assert Visitor(proxied_web).send("GET", "/metrics")[0] == 200, "a scrape from loopback itself, no proxy"
