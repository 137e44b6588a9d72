"""The website's pages through Django's test client: the landing page, the jobs pages, the
downloads, the status endpoint the progress poller reads, and the 404s."""

import re
import uuid

import pytest

from accounts.services import account_create
from billing import pricing
from billing.services import ledger_charge
from tests.factories import JobFactory
from transcription.writes import services

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"
TXT = "[00:00:00] Speaker 1: Hello and welcome.\n\n[00:00:07] Speaker 2: Thank you for having me."
SRT = "1\n00:00:00,000 --> 00:00:02,000\nHello and welcome.\n"
VTT = "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nHello and welcome.\n"


@pytest.fixture
def holder(client):
    account = account_create("holder@example.com", password=PASSWORD)
    client.force_login(account.user)
    return account


def html(response) -> str:
    return response.content.decode()


def test_the_landing_page_says_what_it_does_and_where_to_go(client):
    response = client.get("/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    page = html(response)
    assert "subtitles burned in" in page
    for link in ("/account/signup/", "/account/login/", "/account/api/", "/v1/api/docs", "/v1/api/openapi.json"):
        assert f'href="{link}"' in page, link
    assert '"url": "http://testserver/mcp"' in page and "Bearer &lt;token&gt;" in page
    assert "/admin/" not in page, "the admin is for staff"


def test_the_prices_come_from_billing_pricing(client, monkeypatch):
    prices = html(client.get("/")).split('id="prices"')[1].split("</table>")[0]
    assert re.search(r"1080p</td>\s*<td[^>]*>4× the video's length</td>\s*<td[^>]*>\+5×", prices)
    monkeypatch.setitem(pricing.BURN_MULTIPLIER, "hd", 7)
    prices = html(client.get("/")).split('id="prices"')[1].split("</table>")[0]
    assert re.search(r"1080p</td>\s*<td[^>]*>7× the video's length</td>\s*<td[^>]*>\+8×", prices)


def test_staff_see_the_admin_and_the_admins_view_site_link_comes_here(support_client):
    assert 'id="admin-link"' in html(support_client.get("/"))
    assert 'href="/"' in html(support_client.get("/admin/")), "the admin's View site"


def test_the_jobs_list_shows_the_accounts_jobs_grouped_by_batch(client, holder):
    single = JobFactory(account=holder, title="Keynote", state="done", progress=100, duration=125)
    ledger_charge(single)
    batch = services.batch_create(
        holder,
        url="https://example.com/list",
        title="Talks",
        total=2,
        skipped=0,
        video_urls=["https://example.com/a.mp4", "https://example.com/b.mp4"],
        type="subtitles",
    )
    JobFactory(title="Someone else's")
    page = html(client.get("/jobs/"))
    assert "Keynote" in page and "Someone else" not in page
    assert "2:05" in page and "2.1 minutes" in page, "duration and the minutes it was charged"
    group = page.split(f'data-batch-id="{batch.pk}"')[1].split("</tbody>")[0]
    assert "Talks" in group and group.index("a.mp4") < group.index("b.mp4")
    assert group.count("data-job-id=") == 2
    assert 'data-poll="/jobs/status/"' in page, "running jobs are followed"
    assert f'href="/jobs/{single.pk}/"' in page


def test_a_job_page_shows_the_transcript_downloads_and_videos(client, holder):
    job = JobFactory(
        account=holder,
        type="burned",
        state="done",
        progress=100,
        txt=TXT,
        srt=SRT,
        webvtt=VTT,
        burned_video="burned/x/video.mp4",
        target_languages=["es", "ja"],
    )
    spanish, japanese = job.translations.order_by("position")
    spanish.state, spanish.srt, spanish.webvtt, spanish.burned_video = "done", SRT, VTT, "burned/x/video.es.mp4"
    spanish.save()
    japanese.state, japanese.error = "failed", "Translation from English to Japanese is not available on this server."
    japanese.save()
    page = html(client.get(f"/jobs/{job.pk}/"))
    assert '<span class="time">00:00:07</span> <span class="speaker" data-speaker="2">Speaker 2</span>' in page
    for name in ("transcript.txt", "subtitles.srt", "subtitles.vtt", "subtitles.es.srt", "subtitles.es.vtt"):
        assert f'href="/jobs/{job.pk}/files/{name}"' in page, name
    assert japanese.error in page
    assert page.count("<video controls") == 2 and 'src="/v1/files/' in page
    assert "data-poll" not in page, "a finished job is not followed"


def test_downloads_are_the_jobs_texts_as_files(client, holder):
    job = JobFactory(
        account=holder,
        title="My talk: part 1",
        state="done",
        txt=TXT,
        srt=SRT,
        webvtt=VTT,
        type="subtitles",
        target_languages=["es"],
    )
    job.translations.update(state="done", srt=SRT.replace("Hello", "Hola"), webvtt=VTT)
    response = client.get(f"/jobs/{job.pk}/files/subtitles.srt")
    assert response.status_code == 200 and response.content.decode() == SRT
    assert response["Content-Disposition"] == 'attachment; filename="my-talk-part-1.srt"'
    spanish = client.get(f"/jobs/{job.pk}/files/subtitles.es.srt")
    assert "Hola" in spanish.content.decode() and 'filename="my-talk-part-1.es.srt"' in spanish["Content-Disposition"]
    assert client.get(f"/jobs/{job.pk}/files/transcript.txt").content.decode() == TXT
    assert client.get(f"/jobs/{job.pk}/files/subtitles.fr.srt").status_code == 404
    assert client.get(f"/jobs/{job.pk}/files/passwd").status_code == 404


def test_another_accounts_job_is_a_page_that_says_not_found(client, holder):
    other = JobFactory(txt=TXT, state="done")
    for path in (f"/jobs/{other.pk}/", f"/jobs/{other.pk}/files/transcript.txt", f"/jobs/{uuid.uuid4()}/"):
        response = client.get(path)
        assert response.status_code == 404 and "Not found" in html(response), path
    assert client.get("/v1/api/nothing-here").json() == {"detail": "Not found."}, "the API keeps its JSON 404"


def test_the_jobs_pages_need_a_sign_in(client):
    job = JobFactory()
    for path in ("/jobs/", "/jobs/new/", f"/jobs/{job.pk}/", "/jobs/status/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/account/login/?next="), path


def test_the_status_endpoint_answers_the_accounts_jobs_and_counts_as_a_poll(client, holder):
    running = JobFactory(account=holder, state="processing", progress=41, duration=61)
    other = JobFactory(state="processing")
    response = client.get(f"/jobs/status/?id={running.pk}&id={other.pk}&id=nonsense")
    assert response.json() == {
        "jobs": [
            {
                "id": str(running.pk),
                "state": "processing",
                "progress": 41,
                "final": False,
                "duration": "1:01",
                "charged": None,
            }
        ]
    }
    from transcription.api.front import ratelimit

    assert ratelimit.hit(holder.pk, ratelimit.POLLS).remaining == ratelimit.limit_for(ratelimit.POLLS) - 2


def test_pages_carry_no_inline_script_or_style_attribute(client, holder):
    job = JobFactory(account=holder, state="processing")
    for path in ("/", "/jobs/", "/jobs/new/", f"/jobs/{job.pk}/", "/v1/api/docs"):
        page = html(client.get(path))
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), path
        assert not re.search(r"\sstyle=|\son[a-z]+=", page), path
