"""The API page and the support admin in a real browser: headless Chromium (Debian's), driven by
Playwright, against pytest-django's live server.

Every page a test visits is saved to tests/artifacts/screenshots/<test>_<step>.png for a person
to look at (tests/browser.py has the browser and the screenshots).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.browser import DESKTOP, PHONE, Shots

PASSWORD = "correct-horse-battery-42"
STAFF_PASSWORD = "support-desk-pass-7731"

# Both tests write through the live server and read back outside it, so they need committed
# transactions; serialized_rollback puts back what the migrations wrote (the support group)
# for the tests that run after these.
browser_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def confirmation_link(email: str) -> str:
    """The link sign-up mailed (Django's outbox: the live server runs in this process)."""
    from django.core import mail

    message = [m for m in mail.outbox if m.to == [email]][-1]
    link = re.search(r"https?://\S+", str(message.body))
    assert link, message.body
    return link.group(0)


def api_get(base_url: str, token: str) -> tuple[int, dict]:
    """A real HTTP request to the API, outside the browser."""
    request = urllib.request.Request(
        f"{base_url}/v1/api/transcription/{uuid.uuid4()}", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@browser_db
def test_sign_up_create_a_token_use_it_and_revoke_it(live_server, new_page, settings):
    from playwright.sync_api import expect

    settings.PUBLIC_BASE_URL = live_server.url  # where the mailed link points

    shot = Shots("holder")
    page = new_page(**PHONE)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)

    page.goto(f"{live_server.url}/account/signup/")
    shot(page, "signup")
    page.get_by_label("Email").fill("new.holder@example.com")
    page.get_by_label("Password").fill("new.holder@example.com")
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("alert")).to_contain_text("too similar to the")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()

    expect(page.get_by_role("heading", name="Confirm your email address")).to_be_visible()
    expect(page.locator("#signup-sent")).to_contain_text("new.holder@example.com")
    shot(page, "signup_sent")
    page.goto(confirmation_link("new.holder@example.com"))
    expect(page.get_by_role("heading", name="Confirm your sign-up")).to_be_visible()
    shot(page, "signup_confirm")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm and sign in").click()

    expect(page).to_have_url(f"{live_server.url}/account/api/")
    expect(page.locator("#balance")).to_have_text("10 minutes")
    expect(page.locator("#no-token")).to_be_visible()
    expect(page.get_by_text("Sign-up allowance")).to_be_visible()
    shot(page, "api_page_after_signup")

    page.get_by_role("button", name="Create token").click()
    field = page.get_by_label("Your new API token")
    token = field.input_value()
    assert re.fullmatch(r"vts_[A-Za-z0-9_-]{40,}", token)
    expect(page.locator("#token-message")).to_have_attribute("aria-live", "polite")
    shot(page, "token_created")

    page.get_by_role("button", name="Copy token").click()
    expect(page.locator("#copy-status")).to_have_text(re.compile("Copied|selected"))
    if "Copied" in page.locator("#copy-status").inner_text():
        assert page.evaluate("navigator.clipboard.readText()") == token

    status, body = api_get(live_server.url, token)
    assert status == 404 and set(body) == {"detail"}, "the token authenticates: the job is simply unknown"

    page.goto(f"{live_server.url}/account/api/")
    expect(page.locator("#token-prefix")).to_have_text(token[:12] + "…")
    assert token not in page.content(), "a token is shown once"
    expect(page.locator("dl.facts")).not_to_contain_text("never")  # last used: just now
    shot(page, "api_page_token_used")

    page.get_by_role("link", name="Revoke token…").click()
    expect(page.get_by_role("heading", name="Revoke your API token?")).to_be_visible()
    shot(page, "revoke_confirm")
    page.get_by_role("button", name="Yes, revoke the token").click()
    expect(page).to_have_url(f"{live_server.url}/account/api/")
    expect(page.locator(".messages")).to_contain_text("revoked")
    expect(page.get_by_role("button", name="Create token")).to_be_visible()
    shot(page, "revoked")

    status, body = api_get(live_server.url, token)
    assert status == 401 and body["detail"]

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/account/login/$"))
    shot(page, "signed_out")

    # Someone guessing the password from this address is locked out, the right password included.
    settings.AXES_FAILURE_LIMIT = 3
    for attempt in range(3):
        page.get_by_label("Email").fill("new.holder@example.com")
        page.get_by_label("Password").fill(f"guess-{attempt}-horse")
        page.get_by_role("button", name="Sign in").click()
    page.goto(f"{live_server.url}/account/login/")
    page.get_by_label("Email").fill("new.holder@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#locked-out")).to_contain_text("Too many failed sign-ins")
    shot(page, "locked_out")


@browser_db
def test_support_grants_minutes_and_the_holder_sees_them(live_server, new_page):
    from playwright.sync_api import expect

    from accounts.services import account_create
    from audit.models import AuditEvent
    from tests.staff import make_support_user
    from transcription import states
    from transcription.models import Job
    from transcription.writes import services

    holder = account_create("holder@example.com", password=PASSWORD)
    staff = make_support_user(password=STAFF_PASSWORD)
    job = services.job_create(
        holder, url="https://example.com/talk.mp4", type="subtitles", target_languages=["Spanish"]
    )
    start = datetime.now(UTC) - timedelta(minutes=5)
    Job.objects.filter(pk=job.pk).update(
        timeline=[
            [states.WAITING, start.isoformat()],
            [states.PREPARING, (start + timedelta(seconds=4)).isoformat()],
            [states.DOWNLOADING, (start + timedelta(seconds=9)).isoformat()],
        ],
        state=states.DOWNLOADING,
    )
    services.job_fail(job.id, "The video could not be downloaded: HTTP 403.")

    shot = Shots("support")
    admin = new_page(**DESKTOP)
    admin.goto(f"{live_server.url}/admin/")
    expect(admin).to_have_url(re.compile(r"/admin/login/"))
    shot(admin, "admin_login")
    admin.get_by_label("Username").fill(staff.username)
    admin.get_by_label("Password").fill(STAFF_PASSWORD)
    admin.get_by_role("button", name="Log in").click()
    expect(admin.get_by_role("heading", name="Accounts, minutes and jobs")).to_be_visible()
    shot(admin, "admin_index")

    admin.goto(f"{live_server.url}/admin/accounts/account/?q=holder")
    expect(admin.locator("#result_list")).to_contain_text("10 minutes")
    shot(admin, "accounts")
    admin.locator("#result_list").get_by_role("link", name="holder@example.com").click()
    shot(admin, "account")

    admin.get_by_role("link", name="Grant minutes").click()
    expect(admin.locator("#current-balance")).to_have_text("10 minutes")
    admin.get_by_label("Minutes to grant").fill("25")
    admin.get_by_label("Reason").fill("Compensation for the outage")
    shot(admin, "grant_form")
    admin.get_by_role("button", name="Grant minutes").click()
    expect(admin.locator(".messagelist")).to_contain_text("Granted 25 minutes to holder@example.com")
    expect(admin.locator("#ledger-group")).to_contain_text("Compensation for the outage")
    shot(admin, "granted")

    admin.goto(f"{live_server.url}/admin/transcription/job/{job.pk}/change/")
    expect(admin.locator("table.stage-times")).to_contain_text("downloading")
    expect(admin.locator("body")).to_contain_text("The video could not be downloaded: HTTP 403.")
    shot(admin, "failed_job")

    event = AuditEvent.objects.get(action="minutes_granted")
    assert event.actor_id == staff.pk and event.account_id == holder.pk

    phone = new_page(**PHONE)
    phone.goto(f"{live_server.url}/account/api/")
    expect(phone).to_have_url(re.compile(r"/account/login/\?next="))
    phone.get_by_label("Email").fill("holder@example.com")
    phone.get_by_label("Password").fill(PASSWORD)
    shot(phone, "holder_login")
    phone.get_by_role("button", name="Sign in").click()
    expect(phone.locator("#balance")).to_have_text("35 minutes")
    expect(phone.locator("#usage")).to_contain_text("Compensation for the outage")
    expect(phone.locator("#usage")).to_contain_text("+25 minutes")
    expect(phone.locator("#jobs")).to_contain_text("failed")
    shot(phone, "holder_balance")
