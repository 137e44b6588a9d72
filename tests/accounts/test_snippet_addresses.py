"""The pages' snippets name the address the service was reached at (issue 41): a server on another
port than 8000, or behind a host name, gets snippets that work as copied. Django's test client,
with the Host a browser sends."""

import html

import pytest

from accounts.services import account_create

pytestmark = pytest.mark.django_db


def test_the_api_page_and_the_home_page_show_the_address_they_were_reached_at(client):
    account = account_create("snippets@example.com", password="correct-horse-battery-42")
    client.force_login(account.user)
    api_page = html.unescape(client.get("/account/api/", HTTP_HOST="127.0.0.1:8123").content.decode())
    assert "curl -s http://127.0.0.1:8123/v1/audio/transcriptions" in api_page
    home = html.unescape(client.get("/", HTTP_HOST="localhost:9911").content.decode())
    assert '"url": "http://localhost:9911/mcp"' in home
    assert ":8000" not in api_page + home
