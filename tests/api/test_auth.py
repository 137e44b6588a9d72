import pytest

from accounts.services import token_issue, token_revoke

ENDPOINTS = [
    ("post", "/v1/api/transcribe"),
    ("post", "/v1/api/subtitles"),
    ("post", "/v1/api/burn-subtitles"),
    ("post", "/v1/api/transcribe-playlist"),
    ("get", "/v1/api/transcription/00000000-0000-0000-0000-000000000000"),
    ("get", "/v1/api/batch/00000000-0000-0000-0000-000000000000"),
    ("get", "/v1/api/playlist?url=http://example.com/list"),
]


def _call(client, method, path, **headers):
    if method == "post":
        return client.post(path, data={"url": "https://example.com/v.mp4"}, content_type="application/json", **headers)
    return client.get(path, **headers)


def _assert_401(response):
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    body = response.json()
    assert set(body) == {"detail"} and isinstance(body["detail"], str) and body["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("method,path", ENDPOINTS)
def test_it_answers_401_without_a_token(client, method, path):
    _assert_401(_call(client, method, path))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Token abc",
        "Basic dXNlcjpwYXNz",
        "Bearer vts_tooshort",
        "Bearer not-a-token-at-all-xxxxxxxxxxxx",
        "Bearer vts_" + "x" * 43,
        "Bearer a b",
        "bearer\u00e9 x",
    ],
)
def test_it_answers_401_for_a_malformed_or_unknown_token(client, header):
    _assert_401(_call(client, "get", ENDPOINTS[4][1], HTTP_AUTHORIZATION=header))


def test_a_revoked_token_stops_working_at_once(client, account, token):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert _call(client, "get", ENDPOINTS[4][1], **auth).status_code == 404
    token_revoke(account)
    _assert_401(_call(client, "get", ENDPOINTS[4][1], **auth))


def test_a_replaced_token_stops_working_and_the_new_one_works(client, account, token):
    new = token_issue(account)
    _assert_401(_call(client, "get", ENDPOINTS[4][1], HTTP_AUTHORIZATION=f"Bearer {token}"))
    assert _call(client, "get", ENDPOINTS[4][1], HTTP_AUTHORIZATION=f"Bearer {new}").status_code == 404


def test_it_stores_only_a_hash_and_a_short_prefix(account, token):
    stored = account.api_token
    assert token not in (stored.digest, stored.prefix)
    assert token.startswith(stored.prefix) and len(stored.prefix) < len(token) // 3


@pytest.mark.django_db
def test_authentication_is_checked_before_validation(client):
    response = client.post("/v1/api/transcribe", data="{not json", content_type="application/json")
    _assert_401(response)


def test_a_token_revoked_while_a_request_reads_it_is_not_cached_for_later(client, account, token, monkeypatch):
    """A request that read the token from the database just before its revocation committed must
    not put it in the cache after the revocation deleted it: the next request is refused."""
    from accounts import authentication

    real_encode = authentication.encode_cached_token

    def revoked_meanwhile(*args):
        token_revoke(account)  # lands after this request's read of the token, before its cache write
        return real_encode(*args)

    monkeypatch.setattr(authentication, "encode_cached_token", revoked_meanwhile)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert _call(client, "get", ENDPOINTS[4][1], **auth).status_code == 404  # read before the revocation
    monkeypatch.setattr(authentication, "encode_cached_token", real_encode)
    _assert_401(_call(client, "get", ENDPOINTS[4][1], **auth))
