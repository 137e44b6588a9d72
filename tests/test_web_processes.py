"""A web process (gunicorn's WSGI or an ASGI server, with the production settings) never loads the
speech stack: faster_whisper, ctranslate2 and av alone add about 78 MB to every web process, and
numpy comes with them. Checked in a fresh interpreter that loads the applications and the URLconf,
resolves every URL, and serves real requests: a job queued, polled, the OpenAPI document, the admin
and the API page.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from django.conf import settings

from harness.processes import ROOT, database_url
from tests.support import queued

SPEECH_STACK = ("faster_whisper", "ctranslate2", "av", "numpy", "onnxruntime")

WEB_PROCESS = textwrap.dedent("""
    import json, os, sys
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    from config.wsgi import application as wsgi_application
    from config.asgi import application as asgi_application
    from django.test import Client
    from django.urls import URLPattern, URLResolver, get_resolver

    def views(patterns):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from views(pattern.url_patterns)
            else:
                yield pattern.callback

    resolved = len(list(views(get_resolver().url_patterns)))
    token = sys.argv[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    statuses = {}
    posted = client.post("/v1/api/subtitles", data=json.dumps({"url": "https://example.com/v.mp4",
                         "target_languages": ["Spanish"], "language_code": "eng"}), content_type="application/json")
    statuses["post"] = posted.status_code
    job_id = posted.json()["id"]
    statuses["poll"] = client.get(f"/v1/api/transcription/{job_id}").status_code
    statuses["openapi"] = client.get("/v1/api/openapi.json").status_code
    statuses["admin"] = Client().get("/admin/login/").status_code
    statuses["api_page"] = Client().get("/account/login/").status_code
    print(json.dumps({"resolved": resolved, "statuses": statuses, "job": job_id,
                      "loaded": sorted(name for name in sys.modules if name.split(".")[0] in {stack})}))
""").replace("{stack}", repr(set(SPEECH_STACK)))


@pytest.mark.django_db(transaction=True)
def test_a_web_process_never_imports_the_speech_stack(token, broker):
    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL, "DEBUG": "false"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "-c", WEB_PROCESS, token], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["resolved"] >= 20, report
    assert report["statuses"] == {"post": 200, "poll": 200, "openapi": 200, "admin": 200, "api_page": 200}
    assert queued(broker) == [("media", "start_job", report["job"])], "the job was queued from the web process"
    assert report["loaded"] == [], f"a web process loaded {report['loaded']}"
