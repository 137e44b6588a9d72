"""A new user's way back in (issue 41), in a real browser: headless Chromium (Debian's), driven by
Playwright, against pytest-django's live server. "Forgot your password?" on the sign-in page, the
mail's link, a new password, signing in with it; the link used twice, and expired; "Change password"
on the API page, and a second browser's session ended by it. Screenshots under
tests/artifacts/screenshots/ (tests/browser.py)."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser import DESKTOP, PHONE, Shots

PASSWORD = "correct-horse-battery-42"
NEW_PASSWORD = "stapled-lantern-orbit-77"
NEWER_PASSWORD = "granite-violin-meadow-31"

browser_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def mails_from_here(settings, live_server, tasks_at_once):
    """The reset mail sent where it is queued (the hooks worker's task), its link on the live server."""
    settings.PUBLIC_BASE_URL = live_server.url


def mailed_reset_link(email: str) -> str:
    """The reset link mailed to `email` (Django's outbox: the live server runs in this process)."""
    from django.core import mail

    message = [m for m in mail.outbox if m.to == [email]][-1]
    link = re.search(r"https?://\S+/account/password/reset/\S+/", str(message.body))
    assert link, message.body
    return link.group(0)


def sign_in(page, base: str, email: str, password: str) -> None:
    page.goto(f"{base}/account/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def ask_for_a_link(page, base: str, email: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/account/login/")
    page.get_by_role("link", name="Forgot your password?").click()
    expect(page.get_by_role("heading", name="Reset your password")).to_be_visible()
    page.get_by_label("Email").fill(email)
    page.get_by_role("button", name="Mail me a reset link").click()
    expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()


@browser_db
def test_reset_by_mail_sign_in_with_the_new_password_and_the_link_works_once(live_server, new_page):
    from django.core import mail
    from playwright.sync_api import expect

    from accounts.services import account_create

    account_create("forgetful@example.com", password=PASSWORD)
    base = live_server.url
    shot = Shots("password_reset")
    elsewhere = new_page(**DESKTOP)  # signed in before the reset: ended by it
    sign_in(elsewhere, base, "forgetful@example.com", PASSWORD)
    expect(elsewhere).to_have_url(f"{base}/account/api/")

    page = new_page(**PHONE)
    ask_for_a_link(page, base, "nobody-here@example.com")
    unknown_answer = page.locator("#password-reset-sent").inner_text()
    ask_for_a_link(page, base, "forgetful@example.com")
    shot(page, "sent")
    assert page.locator("#password-reset-sent").inner_text() == unknown_answer, "the same answer either way"
    assert [m.to for m in mail.outbox] == [["forgetful@example.com"]]

    link = mailed_reset_link("forgetful@example.com")
    page.goto(link)
    expect(page.get_by_role("heading", name="Choose a new password")).to_be_visible()
    shot(page, "choose")
    page.get_by_label("New password", exact=True).fill("forgetful@example.com")
    page.get_by_label("New password confirmation").fill("forgetful@example.com")
    page.get_by_role("button", name="Set new password").click()
    expect(page.get_by_role("alert")).to_contain_text("too similar")
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password confirmation").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set new password").click()
    expect(page.get_by_role("heading", name="Your password is changed")).to_be_visible()
    shot(page, "changed")

    page.get_by_role("link", name="Sign in").last.click()
    page.get_by_label("Email").fill("forgetful@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("enter a correct")  # the old one no longer works
    page.get_by_label("Password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base}/account/api/")
    shot(page, "signed_in")

    elsewhere.goto(f"{base}/account/api/")
    expect(elsewhere).to_have_url(re.compile(r"/account/login/\?next="))  # its session ended with the reset

    again = new_page(**DESKTOP)
    again.goto(link)
    expect(again.get_by_role("heading", name="This link does not work")).to_be_visible()
    shot(again, "used_twice")


@browser_db
def test_an_expired_reset_link_fails(live_server, new_page, settings):
    from playwright.sync_api import expect

    from accounts.services import account_create

    settings.PASSWORD_RESET_TIMEOUT = 1
    account_create("slow-reader@example.com", password=PASSWORD)
    page = new_page(**DESKTOP)
    ask_for_a_link(page, live_server.url, "slow-reader@example.com")
    link = mailed_reset_link("slow-reader@example.com")
    time.sleep(2.5)  # Django's token counts whole seconds: expired once more than 1 s have passed
    page.goto(link)
    expect(page.get_by_role("heading", name="This link does not work")).to_be_visible()
    expect(page.locator("#password-reset-invalid")).to_contain_text("expired")
    Shots("password_reset_expired")(page, "expired")


@browser_db
def test_change_password_keeps_this_browser_and_ends_another_browsers_session(live_server, new_page):
    from playwright.sync_api import expect

    from accounts.services import account_create

    account_create("changer@example.com", password=PASSWORD)
    base = live_server.url
    shot = Shots("password_change")
    laptop, phone = new_page(**DESKTOP), new_page(**PHONE)
    for browser_page in (laptop, phone):
        sign_in(browser_page, base, "changer@example.com", PASSWORD)
        expect(browser_page).to_have_url(f"{base}/account/api/")

    laptop.get_by_role("link", name="Change password").click()
    expect(laptop.get_by_role("heading", name="Change your password")).to_be_visible()
    shot(laptop, "form")
    laptop.get_by_label("Old password").fill("not-my-password-12")
    laptop.get_by_label("New password", exact=True).fill(NEWER_PASSWORD)
    laptop.get_by_label("New password confirmation").fill(NEWER_PASSWORD)
    laptop.get_by_role("button", name="Change password").click()
    expect(laptop.get_by_role("alert")).to_contain_text("old password was entered incorrectly")
    laptop.get_by_label("Old password").fill(PASSWORD)
    laptop.get_by_label("New password", exact=True).fill(NEWER_PASSWORD)
    laptop.get_by_label("New password confirmation").fill(NEWER_PASSWORD)
    laptop.get_by_role("button", name="Change password").click()
    expect(laptop).to_have_url(f"{base}/account/api/")
    expect(laptop.locator(".messages")).to_contain_text("Password changed")
    shot(laptop, "changed")
    laptop.reload()
    expect(laptop.get_by_role("heading", name="Your API access")).to_be_visible()  # still signed in

    phone.goto(f"{base}/account/api/")
    expect(phone).to_have_url(re.compile(r"/account/login/\?next="))
    shot(phone, "other_browser_signed_out")
    phone.get_by_label("Email").fill("changer@example.com")
    phone.get_by_label("Password").fill(NEWER_PASSWORD)
    phone.get_by_role("button", name="Sign in").click()
    expect(phone).to_have_url(f"{base}/account/api/")
