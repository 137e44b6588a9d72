"""Issue 56: the page of a job made from an upload showed `upload:<uuid>` as its title until a worker
started it (and for good when it failed first): it shows the uploaded file's name, from the moment
the job is queued, and says where the recording came from instead of linking to `upload:`."""

import json
import re

import pytest
from django.test import Client

from tests.factories import UploadFactory

pytestmark = pytest.mark.django_db


def test_an_uploads_job_page_is_titled_with_the_files_name(api, account, broker):
    upload = UploadFactory(account=account, filename="Board meeting 2026-03.mp4", has_video=True)
    queued = api.post("/v1/api/transcribe", json.dumps({"upload_id": str(upload.pk)}), content_type="application/json")
    assert queued.status_code == 200, queued.content
    job_id = queued.json()["id"]

    page = Client()
    page.force_login(account.user)
    html = page.get(f"/jobs/{job_id}/").content.decode()
    assert re.search(r'<h1 class="job-title">Board meeting 2026-03.mp4</h1>', html), html
    assert "<title>Board meeting 2026-03.mp4" in html
    assert 'href="upload:' not in html and "Uploaded file" in html
    listing = page.get("/jobs/").content.decode()
    assert "Board meeting 2026-03.mp4" in listing and "upload:" not in listing
