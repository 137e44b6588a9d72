"""Uploads under bin/web (issue 41): a per-account storage quota, answered 413 before any byte is
written, on the plain POST, the tus creation and the OpenAI-compatible door; and the tus
`Location` header follows the one proxy rule (accounts.client): X-Forwarded-Host and -Proto are
read only from one of TRUSTED_PROXIES, and the host named must be one of ALLOWED_HOSTS."""

import http.client
from pathlib import Path
from urllib.parse import urlsplit

import openai
import pytest
import requests

from billing.models import Plan
from harness.processes import running_web
from transcription.models import Upload
from transcription.storage import files

pytestmark = pytest.mark.django_db(transaction=True)

WAV = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
GB = 1024**3
ALLOWED = "127.0.0.1,localhost,testserver,files.example.com"


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker, tmp_path_factory):
    # UPLOAD_MAX_BYTES as shipped (2 GB): a free account's quota is one largest upload
    with running_web(
        tmp_path_factory.mktemp("web") / "web.log",
        TRUST_PROXY_HEADERS="true",
        TRUSTED_PROXIES="127.0.0.1/32",
        ALLOWED_HOSTS=ALLOWED,
    ) as base:
        yield base


def auth(token) -> dict:
    return {"Authorization": f"Bearer {token}"}


def tus_create(web, token, length, **headers):
    return requests.post(
        f"{web}/v1/api/uploads",
        headers={**auth(token), "Tus-Resumable": "1.0.0", "Upload-Length": str(length), **headers},
        timeout=10,
    )


def test_three_2_gb_tus_creations_from_a_free_account_are_not_all_accepted(web, token, account):
    answers = [tus_create(web, token, 2 * GB) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [201, 413, 413]
    refusal = answers[1].json()["detail"]
    assert "storage" in refusal and "2.0 GB" in refusal, refusal
    assert Upload.objects.filter(account=account).count() == 1
    [upload] = Upload.objects.filter(account=account)
    assert not files.incoming_path(upload.id).exists() or files.incoming_path(upload.id).stat().st_size == 0

    # deleting the first makes room again
    location = answers[0].headers["Location"]
    assert requests.delete(location, headers={**auth(token), "Tus-Resumable": "1.0.0"}, timeout=10).status_code == 204
    assert tus_create(web, token, 2 * GB).status_code == 201


def test_a_plans_quota_bounds_the_plain_post_and_the_openai_door(web, token, account):
    plan = Plan.objects.create(name="Tiny", monthly_minutes=10, storage_bytes=WAV.stat().st_size + 1000)
    account.plan, account.renews_on = plan, "2099-01-01"
    account.save(update_fields=["plan", "renews_on"])
    data = WAV.read_bytes()

    first = requests.post(f"{web}/v1/api/uploads?filename=a.wav", headers=auth(token), data=data, timeout=30)
    assert first.status_code == 201, first.text
    second = requests.post(f"{web}/v1/api/uploads?filename=b.wav", headers=auth(token), data=data, timeout=30)
    assert second.status_code == 413 and "storage" in second.json()["detail"]

    # chunked (no Content-Length): refused as soon as the room is known to be gone
    chunked = requests.post(
        f"{web}/v1/api/uploads?filename=c.wav", headers=auth(token), data=iter([data[:1000], data[1000:]]), timeout=30
    )
    assert chunked.status_code == 413
    assert Upload.objects.filter(account=account).count() == 1

    client = openai.OpenAI(base_url=f"{web}/v1", api_key=token, max_retries=0)
    with pytest.raises(openai.APIStatusError) as refused:
        client.audio.transcriptions.create(model="whisper-1", file=WAV.open("rb"))
    assert refused.value.status_code == 413
    assert "storage" in refused.value.body["message"]
    assert Upload.objects.filter(account=account).count() == 1


def location_from(web, token, source, headers) -> str:
    parts = urlsplit(web)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10, source_address=(source, 0))
    connection.request(
        "POST", "/v1/api/uploads", headers={**auth(token), "Tus-Resumable": "1.0.0", "Upload-Length": "10", **headers}
    )
    answer = connection.getresponse()
    body = answer.read()
    if answer.status == 400:  # a host not in ALLOWED_HOSTS: Django's own check in the door's prelude
        return body.decode()
    assert answer.status == 201, body
    location = answer.getheader("Location") or ""
    connection.request("DELETE", str(urlsplit(location).path), headers={**auth(token), "Tus-Resumable": "1.0.0"})
    connection.getresponse().read()
    connection.close()
    return location


def test_the_location_header_follows_the_proxy_rule(web, token):
    port = urlsplit(web).port
    forwarded = {"X-Forwarded-Host": "files.example.com", "X-Forwarded-Proto": "https"}
    # from our proxy (127.0.0.1): the public name it forwards
    assert location_from(web, token, "127.0.0.1", forwarded).startswith("https://files.example.com/v1/api/uploads/")
    # from any other peer, the same headers are the client's own: ignored
    other = location_from(web, token, "127.0.0.2", {**forwarded, "Host": f"127.0.0.1:{port}"})
    assert other.startswith(f"http://127.0.0.1:{port}/v1/api/uploads/"), other
    # a forwarded or sent host that is not one of ALLOWED_HOSTS is never echoed
    for evil in ({"X-Forwarded-Host": "evil.example.net"}, {"Host": "evil.example.net"}):
        for source in ("127.0.0.1", "127.0.0.2"):
            answer = location_from(web, token, source, evil)
            assert "evil" not in answer or "Invalid Host header" in answer, answer
