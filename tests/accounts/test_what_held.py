"""What the hostile-client probe of issue 32 found holding, kept covered: CSRF on every form (16),
another account's job and batch a 404 in every spelling of its id, no session fixation, `next=`
never leaving the site, private webhook addresses refused (signed-link tampering:
tests/transcription/test_artifacts.py)."""

import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client

from accounts.models import ApiToken, Signup
from accounts.services import account_create, token_issue
from billing.models import LedgerEntry
from tests.factories import JobFactory
from transcription.models import Batch, Job
from webhooks import services as webhook_services
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"

# Every form that POSTs, by its action as the template writes it, with a request that would
# change something if the CSRF check let it through.
FORMS = {
    "{% url 'accounts:signup' %}": ("/account/signup/", {"email": "x@example.com", "password": PASSWORD}),
    "{% url 'accounts:login' %}": ("/account/login/", {"username": "carol@example.com", "password": PASSWORD}),
    "{% url 'accounts:logout' %}": ("/account/logout/", {}),
    "{{ request.path }}": ("CONFIRM", {"password": PASSWORD}),  # the confirmation page
    "{% url 'accounts:token-create' %}": ("/account/api/token/", {}),
    "{% url 'accounts:token-replace' %}": ("/account/api/token/replace/", {"confirm": "yes"}),
    "{% url 'accounts:token-revoke' %}": ("/account/api/token/revoke/", {"confirm": "yes"}),
    "{% url 'webhooks:edit' %}": ("/account/api/webhook/", {"url": "https://hooks.example.com/a"}),
    "{% url 'webhooks:rotate' %}": ("/account/api/webhook/rotate/", {"confirm": "yes"}),
    "{% url 'webhooks:remove' %}": ("/account/api/webhook/remove/", {"confirm": "yes"}),
    "{% url 'website:job-new' %}": ("/jobs/new/", {"url": "https://example.com/v", "type": "transcript"}),
    "grant_form": ("GRANT", {"minutes": "5", "reason": "goodwill"}),  # the admin's grant page
    "{% url 'website:job-speakers' job.pk %}": ("SPEAKERS", {"speaker-1": "Mallory"}),  # the job page's names
    "{% url 'accounts:password-reset' %}": ("/account/password/reset/", {"email": "carol@example.com"}),
    "{% url 'accounts:password-change' %}": (
        "/account/password/change/",
        {"old_password": PASSWORD, "new_password1": "Another-horse-77", "new_password2": "Another-horse-77"},
    ),
    "new-password-form": ("RESET", {"new_password1": "Another-horse-77", "new_password2": "Another-horse-77"}),
}


def template_forms() -> list[str]:
    found = []
    for template in TEMPLATES.rglob("*.html"):
        for form in re.findall(r"<form[^>]*>", template.read_text()):
            if 'method="post"' in form:
                action = re.search(r'action="([^"]*)"', form)
                named = action or re.search(r'id="([^"]*)"', form)
                assert named, form
                found.append(named.group(1))
    return found


def test_the_list_below_is_every_form_that_posts():
    assert sorted(template_forms()) == sorted(FORMS), "a new form: add it to FORMS"
    assert len(FORMS) == 16


def state() -> tuple:
    return (
        Signup.objects.count(),
        list(ApiToken.objects.values_list("digest", flat=True)),
        list(Endpoint.objects.values_list("url", "secret")),
        Job.objects.count(),
        list(Job.objects.values_list("speaker_names", flat=True)),
        LedgerEntry.objects.count(),
        list(User.objects.order_by("pk").values_list("password", flat=True)),
    )


@pytest.mark.parametrize("action", sorted(FORMS))
def test_every_form_refuses_a_post_without_its_csrf_token(action, mailoutbox, settings, tasks_at_once):
    settings.ALLOW_PRIVATE_URLS = True
    holder = account_create("carol@example.com", password=PASSWORD)
    token_issue(holder)
    webhook_services.endpoint_set(holder, "https://hooks.example.com/old")
    staff = account_create("root@example.com", password=PASSWORD).user
    staff.is_staff = staff.is_superuser = True
    staff.save()
    Client().post("/account/signup/", {"email": "new@example.com", "password": PASSWORD})
    link = re.search(re.escape(settings.PUBLIC_BASE_URL) + r"(/account/confirm/\S+/)", mailoutbox[-1].body).group(1)

    path, data = FORMS[action]
    strict = Client(enforce_csrf_checks=True)
    if path == "CONFIRM":
        path = link
    elif path == "SPEAKERS":
        job = JobFactory(account=holder, state="done", txt="[00:00:00] Speaker 1: hello")
        path = f"/jobs/{job.pk}/speakers"
        strict.force_login(holder.user)
    elif path == "RESET":  # the reset mail's link, opened first (Django keeps its token in the session)
        Client().post("/account/password/reset/", {"email": "carol@example.com"})
        reset = re.search(r"https?://\S+?(/account/password/reset/\S+/)", mailoutbox[-1].body).group(1)
        path = strict.get(reset)["Location"]
    elif path == "GRANT":
        path = f"/admin/accounts/account/{holder.pk}/grant/"
        strict.force_login(staff)
    elif path not in ("/account/signup/", "/account/login/", "/account/password/reset/"):
        strict.force_login(holder.user)
    before = state()
    response = strict.post(path, data)
    assert response.status_code == 403, path
    assert state() == before
    if path == "/account/logout/":
        assert strict.get("/account/api/").status_code == 200, "still signed in"


SPELLINGS = {
    "canonical": str,
    "upper": lambda id: str(id).upper(),
    "no-dashes": lambda id: str(id).replace("-", ""),
    "braces": lambda id: "{" + str(id) + "}",
    "urn": lambda id: "urn:uuid:" + str(id),
}


@pytest.mark.parametrize("spell", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_another_accounts_job_and_batch_are_a_404_in_every_spelling(api, client, account, other_account, spell):
    theirs = JobFactory(account=other_account, state="done", txt="their words")
    batch = Batch.objects.create(account=other_account, url="https://example.com/list", title="theirs")
    for kind, theirs_id in (("transcription", theirs.id), ("batch", batch.id)):
        unknown = api.get(f"/v1/api/{kind}/{uuid.uuid4()}")  # what an id nobody holds answers
        response = api.get(f"/v1/api/{kind}/{spell(theirs_id)}")
        assert response.status_code == 404, kind
        assert response.json() == unknown.json() and b"their words" not in response.content
    client.force_login(account.user)
    for path in (
        f"/jobs/{spell(theirs.id)}/",
        f"/jobs/{spell(theirs.id)}/files/transcript.txt",
        f"/batches/{spell(batch.id)}/",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert b"their words" not in response.content


@pytest.mark.parametrize("door", ["/account/login/", "/admin/login/"])
def test_signing_in_never_keeps_a_planted_session(door):
    account = account_create("carol@example.com", password=PASSWORD)
    account.user.is_staff = True
    account.user.save()
    planted = SessionStore()
    planted["planted"] = True
    planted.create()  # the attacker's session, its id set in the victim's browser
    victim = Client()
    victim.cookies["sessionid"] = planted.session_key
    assert victim.post(door, {"username": "carol@example.com", "password": PASSWORD}).status_code == 302
    assert victim.cookies["sessionid"].value != planted.session_key
    attacker = Client()
    attacker.cookies["sessionid"] = planted.session_key
    assert attacker.get("/account/api/").status_code == 302, "the planted id is not signed in"


def test_confirming_a_sign_up_never_keeps_a_planted_session(mailoutbox):
    Client().post("/account/signup/", {"email": "dave@example.com", "password": PASSWORD})
    link = re.search(re.escape(settings.PUBLIC_BASE_URL) + r"(/account/confirm/\S+/)", mailoutbox[-1].body).group(1)
    planted = SessionStore()
    planted.create()
    victim = Client()
    victim.cookies["sessionid"] = planted.session_key
    assert victim.post(link, {"password": PASSWORD}).status_code == 302
    assert victim.cookies["sessionid"].value != planted.session_key


OFF_SITE = [
    "https://evil.example/",
    "//evil.example/",
    "/\\evil.example/",
    "\\\\evil.example/",
    "https:evil.example",
    "http://testserver.evil.example/",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("target", OFF_SITE)
def test_next_never_leaves_the_site(client, target):
    account_create("carol@example.com", password=PASSWORD)
    signed_in = client.post(
        f"/account/login/?next={target}", {"username": "carol@example.com", "password": PASSWORD, "next": target}
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == "/account/api/"
    again = client.get("/account/login/", {"next": target})  # already signed in: sent on at once
    assert again.status_code == 302 and again["Location"] == "/account/api/"
    out = client.post("/account/logout/", {"next": target})
    assert out.status_code == 302 and out["Location"] == "/account/login/"


def test_next_within_the_site_is_followed(client):
    account_create("carol@example.com", password=PASSWORD)
    signed_in = client.post("/account/login/?next=/jobs/", {"username": "carol@example.com", "password": PASSWORD})
    assert signed_in["Location"] == "/jobs/"


PRIVATE = [
    "127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "017700000001",
    "localhost", "0.0.0.0", "0", "10.0.0.1", "10.255.255.254", "172.16.0.1", "172.31.255.255", "192.168.0.1",
    "192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "198.18.0.1", "224.0.0.1", "255.255.255.255",
    "240.0.0.1", "192.0.0.1", "192.0.2.1", "[::1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[fe80::1]",
    "[fc00::1]", "[fd00::1]", "[64:ff9b::7f00:1]", "[::127.0.0.1]", "[2001:db8::1]", "[ff02::1]",
]  # fmt: skip


@pytest.mark.parametrize("host", PRIVATE)
def test_a_private_webhook_address_is_refused(host, settings):
    settings.ALLOW_PRIVATE_URLS = False
    for url in (f"http://{host}/hook", f"https://{host}:8443/hook"):
        with pytest.raises(webhook_services.WebhookUrlError, match="points to a"):
            webhook_services.endpoint_check_url(url)
