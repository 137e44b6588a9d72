"""The website: the landing page, and the account holder's jobs (list, one job, a batch, the form
that queues one). Views parse and answer. The website is a door of the front door
(transcription.api.front.front_door): the signed-in person's Caller, the job form performed as the API's
operation of the same name (counted in the same limits, checked by the same serializers, queued by
the same services), the progress poller counted as a poll; so a job queued here is the job the API
would have queued, and refusals are shown on the form in the website's own shape.

Every page works under a Content-Security-Policy of same-origin scripts and styles only: no
inline script or style; the progress poller is website/static/website/jobs.js.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import exceptions

from accounts.models import Account
from billing import pricing
from billing.selectors import account_balance, charged_seconds
from transcription.api.front import front_door, operations, ratelimit
from transcription.api.wire.error_bodies import Busy, RequestValidationError, json_not_found
from transcription.models import Batch, Job, JobType, Quality, Translation
from transcription.pipeline.burn import QUALITY_HEIGHT
from transcription.pipeline.recognition.languages import language_label
from transcription.pipeline.transcripts.speaker_names import name_txt, name_webvtt
from transcription.scheduling.dispatch import QueueUnavailable
from transcription.states import FINAL_STATES
from transcription.storage.artifacts import signed_path

from . import access
from .access import job_or_404, owned_or_404
from .editor_views import editor_context
from .forms import JobForm
from .templatetags.website_tags import duration_hms

JOBS_PER_PAGE = 25
QUALITY_LABEL = {quality: "4K" if height == 2160 else f"{height}p" for quality, height in QUALITY_HEIGHT.items()}
FONT_SIZE_LABEL = {"default": "standard-size", "large": "large", "xl": "extra-large"}
# The txt layout of DESIGN.md section 2: "[HH:MM:SS] Speaker N: text", one paragraph each.
PARAGRAPH = re.compile(r"^\[(\d\d:\d\d:\d\d)\] Speaker (\d+): (.*)$", re.S)
FILE_TYPES = {"txt": "text/plain; charset=utf-8", "srt": "application/x-subrip; charset=utf-8", "vtt": "text/vtt"}


def _account(request) -> Account | None:
    if not request.user.is_authenticated:
        return None
    return Account.objects.filter(user=request.user).first()


def price_rows() -> list[dict]:
    """What one minute of video costs, per product, from billing.pricing (the one copy of prices)."""
    rows = [
        {
            "product": "Transcript (text with timestamps and speakers)",
            "cost": pricing.base_multiplier(JobType.TRANSCRIPT),
            "per_translation": None,
        },
        {
            "product": "Subtitles (SRT and WebVTT)",
            "cost": pricing.base_multiplier(JobType.SUBTITLES),
            "per_translation": pricing.translation_multiplier(JobType.SUBTITLES),
        },
    ]
    for quality in Quality:
        rows.append(
            {
                "product": f"Video with burned-in subtitles, {QUALITY_LABEL[quality]}",
                "cost": pricing.base_multiplier(JobType.BURNED, quality),
                "per_translation": pricing.translation_multiplier(JobType.BURNED, quality),
            }
        )
    return rows


def home(request):
    base = request.build_absolute_uri("/").rstrip("/")
    return render(
        request,
        "website/home.html",
        {
            "prices": price_rows(),
            "free_minutes": settings.FREE_MINUTES,
            "base_url": base,
            "account": _account(request),
            "limits": {
                "jobs": settings.RATE_LIMIT_JOBS_PER_MINUTE,
                "polls": settings.RATE_LIMIT_POLLS_PER_MINUTE,
                "videos": settings.PLAYLIST_MAX_VIDEOS,
                "hours": settings.MAX_VIDEO_SECONDS // 3600,
            },
        },
    )


def _with_charges(jobs: list[Job]) -> list[Job]:
    charged = charged_seconds([job.pk for job in jobs])
    for job in jobs:
        seconds = charged.get(job.pk)
        # shown by the template beside the job; not a field of the model
        job.charged = None if seconds is None else pricing.format_minutes(seconds)  # type: ignore[attr-defined]
    return jobs


def _groups(jobs: list[Job]) -> list[tuple[Batch | None, list[Job]]]:
    """Jobs in the order listed, a batch's jobs together under their batch (in queue order)."""
    groups: list[tuple[Batch | None, list[Job]]] = []
    for batch_id, grouped in itertools.groupby(jobs, key=lambda job: job.batch_id):
        members = list(grouped)
        if batch_id is None:
            groups.extend((None, [job]) for job in members)
        else:
            groups.append((members[0].batch, sorted(members, key=lambda job: job.position)))
    return groups


_LISTED = ("id", "batch", "position", "type", "state", "progress", "title", "url", "duration", "error", "created_at")


@never_cache
@login_required
def job_list(request):
    account = _account(request)
    if account is None:
        return render(request, "website/no_account.html", status=404)
    # a voice sample's job is shown as its voice, not as a transcript
    jobs = (
        Job.objects.filter(account=account, is_voice_sample=False)
        .select_related("batch")
        .only(*_LISTED, "batch__title", "batch__url")
    )
    page = Paginator(jobs.order_by("-created_at", "-position"), JOBS_PER_PAGE).get_page(request.GET.get("page"))
    listed = _with_charges(list(page.object_list))
    return render(
        request,
        "website/jobs.html",
        {
            "page": page,
            "groups": _groups(listed),
            "running": [str(job.pk) for job in listed if job.state not in FINAL_STATES],
            "balance": pricing.format_minutes(max(account_balance(account.pk), 0)),
            "upload_max_bytes": settings.UPLOAD_MAX_BYTES,
            "upload_max_size": upload_size(settings.UPLOAD_MAX_BYTES),
        },
    )


@never_cache
@login_required
def batch_detail(request, batch_id):
    batch = owned_or_404(request, Batch, batch_id, "batch")
    jobs = _with_charges(list(batch.jobs.order_by("position").only(*_LISTED)))
    return render(
        request,
        "website/batch.html",
        {"batch": batch, "jobs": jobs, "running": [str(job.pk) for job in jobs if job.state not in FINAL_STATES]},
    )


def transcript_paragraphs(txt: str | None, names: dict | None = None) -> list[dict]:
    """The txt result as paragraphs of time, speaker (its number, and its name or "Speaker N") and
    text, for the page to lay out."""
    paragraphs = []
    for block in (txt or "").split("\n\n"):
        block = block.strip()
        if not block:
            continue
        match = PARAGRAPH.match(block)
        if match:
            number = match.group(2)
            paragraphs.append(
                {
                    "time": match.group(1),
                    "number": number,
                    "speaker": (names or {}).get(number, f"Speaker {number}"),
                    "text": match.group(3),
                }
            )
        else:
            paragraphs.append({"time": None, "number": None, "speaker": None, "text": block})
    return paragraphs


def _speakers(paragraphs: list[dict], names: dict) -> list[dict]:
    """Each speaker of the transcript once, in order: number, default label and given name."""
    numbers = sorted({int(p["number"]) for p in paragraphs if p["number"]})
    return [{"number": n, "label": f"Speaker {n}", "name": names.get(str(n), "")} for n in numbers]


@never_cache
@login_required
def job_detail(request, job_id):
    job = job_or_404(request, job_id)
    names = job.speaker_names or {}
    paragraphs = transcript_paragraphs(job.txt, names)
    _with_charges([job])
    translations = list(job.translations.order_by("position"))
    videos = []
    if job.burned_video:
        videos.append({"label": "Original language", "url": signed_path(job.burned_video), "id": "video"})
    for translation in translations:
        if translation.burned_video:
            videos.append(
                {
                    "label": translation.language,
                    "url": signed_path(translation.burned_video),
                    "id": f"video-{translation.language_code}",
                }
            )
    return render(
        request,
        "website/job.html",
        {
            "job": job,
            "title": job.title or (job.upload.filename if job.upload_id else job.url),
            "uploaded": job.url.startswith("upload:"),
            "final": job.state in FINAL_STATES,
            "translations": translations,
            "paragraphs": paragraphs,
            "speakers": _speakers(paragraphs, names),
            "videos": videos,
            "quality_label": QUALITY_LABEL.get(job.quality, job.quality),
            "font_size_label": FONT_SIZE_LABEL.get(job.font_size, job.font_size),
            "language": language_label(job.language_code or job.detected_language or ""),
            "editor": editor_context(job),
        },
    )


def _download_name(job: Job, suffix: str) -> str:
    stem = slugify(job.title)[:80] or f"job-{job.pk}"
    return f"{stem}{suffix}"


@never_cache
@login_required
@require_GET
def job_file(request, job_id, name: str):
    """transcript.txt, subtitles.srt, subtitles.vtt, and subtitles.<language code>.srt/.vtt for
    each translation; a 404 for what the job does not have (yet)."""
    job = job_or_404(request, job_id)
    stem, _, extension = name.rpartition(".")
    if extension not in FILE_TYPES:
        raise Http404("No such file.")
    text, suffix = None, f".{extension}"
    names = job.speaker_names or {}
    if stem == "transcript" and extension == "txt":
        text = name_txt(job.txt, names)
    elif stem == "subtitles" and extension in ("srt", "vtt"):
        text = job.srt if extension == "srt" else name_webvtt(job.webvtt, names)
    elif stem.startswith("subtitles.") and extension in ("srt", "vtt"):
        code = stem.removeprefix("subtitles.")
        translation = Translation.objects.filter(job=job, language_code=code).first()
        if translation is not None:
            text = translation.srt if extension == "srt" else name_webvtt(translation.webvtt, names)
            suffix = f".{code}.{extension}"
    if not text:
        raise Http404("This job has no such file (yet).")
    response = HttpResponse(text, content_type=FILE_TYPES[extension])
    response["Content-Disposition"] = f'attachment; filename="{_download_name(job, suffix)}"'
    return response


@never_cache
@login_required
@require_POST
def job_speakers(request, job_id):
    """The job page's speaker names (website/static/website/speakers.js sends them and updates the
    page in place; without script the form posts here and comes back to the page), performed
    through the front door as POST /v1/api/transcription/{id}/speakers is: a job request, free of
    minutes. An empty field gives the speaker back its number. Refusals answer the API's body."""
    caller = access.caller(request)
    if caller is None:
        raise Http404("This login has no account.")
    prefix = "speaker-"
    names = {
        key.removeprefix(prefix): value.strip() or None for key, value in request.POST.items() if key.startswith(prefix)
    }
    try:
        front_door.perform(caller, operations.rename_speakers, {"id": str(job_id), "names": names}, request)
    except exceptions.NotFound:
        raise Http404("No job with that id on this account.") from None
    except exceptions.APIException as error:
        answer = front_door.error_answer(error)
        if answer is None:
            raise
        return JsonResponse(answer.body, status=answer.status, headers=answer.headers)
    if "application/json" in request.headers.get("Accept", ""):
        job = Job.objects.only("speaker_names").get(pk=job_id)
        return JsonResponse({"names": job.speaker_names})
    return redirect(reverse("website:job", args=[job_id]) + "#speakers")


@never_cache
@login_required
@require_GET
def job_status(request):
    """State and progress of the account's jobs named by ?id=, for the pages' progress poller.
    Counts as one poll of the account's rate limit, whatever the number of ids."""
    caller = access.caller(request)
    if caller is None:
        raise Http404("This login has no account.")
    try:
        front_door.admit(caller, ratelimit.POLLS)
    except front_door.RateLimited as error:
        answer = front_door.error_answer(error)
        return JsonResponse(answer.body, status=answer.status, headers=answer.headers)
    ids = []
    for value in request.GET.getlist("id")[:JOBS_PER_PAGE]:
        try:
            ids.append(uuid.UUID(value))
        except ValueError:  # a malformed id names no job of this account
            continue
    jobs = _with_charges(
        list(Job.objects.filter(account_id=caller.account_id, pk__in=ids).only("id", "state", "progress", "duration"))
    )
    return JsonResponse(
        {
            "jobs": [
                {
                    "id": str(job.pk),
                    "state": job.state,
                    "progress": job.progress,
                    "final": job.state in FINAL_STATES,
                    "duration": duration_hms(job.duration) or None,
                    "charged": job.charged,
                }
                for job in jobs
            ]
        }
    )


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def job_new(request):
    account = _account(request)
    if account is None:
        return render(request, "website/no_account.html", status=404)
    form = JobForm(request.POST or None, initial={"url": request.GET.get("url", "")})
    status = 200
    if request.method == "POST" and form.is_valid():
        name, body = form.api_request()
        try:
            queued = front_door.perform(access.caller(request), name, body)
        except front_door.RateLimited as error:
            form.add_error(
                None,
                f"Too many job requests this minute (the limit is {error.state.limit} a minute, shared with the API); "
                f"try again in {error.state.retry_after} seconds.",
            )
            status = 429
        except RequestValidationError as error:
            form.add_api_errors(error.errors)
            status = 422
        except exceptions.NotFound as error:  # an upload of another account, or one the sweep deleted
            form.add_error(None, f"{error.detail} Choose the file again.")
            status = 404
        except (Busy, QueueUnavailable) as error:  # the queue or the playlist lister, for a moment
            form.add_error(None, str(error.detail if isinstance(error, Busy) else error))
            status = 503
        else:
            if "batch_id" in queued:
                return redirect(reverse("website:batch", args=[queued["batch_id"]]))
            return redirect(reverse("website:job", args=[queued["id"]]))
    elif request.method == "POST":
        status = 422
    return render(
        request,
        "website/job_new.html",
        {
            "form": form,
            "balance": pricing.format_minutes(max(account_balance(account.pk), 0)),
            "upload_max_bytes": settings.UPLOAD_MAX_BYTES,
            "upload_max_size": upload_size(settings.UPLOAD_MAX_BYTES),
            "prices": price_rows(),
            "multipliers_json": json.dumps(
                {
                    "burned": {q: pricing.base_multiplier(JobType.BURNED, q) for q in Quality},
                    "burned_translation": {q: pricing.translation_multiplier(JobType.BURNED, q) for q in Quality},
                    "subtitles": pricing.base_multiplier(JobType.SUBTITLES),
                    "subtitles_translation": pricing.translation_multiplier(JobType.SUBTITLES),
                    "transcript": pricing.base_multiplier(JobType.TRANSCRIPT),
                }
            ),
        },
        status=status,
    )


def upload_size(size: int) -> str:
    """2 GB, 500 MB: the cap as the form says it."""
    return f"{size / 1024**3:g} GB" if size >= 1024**3 else f"{size / 1024**2:g} MB"


def not_found(request, exception=None):
    """The 404 of every address: the API's JSON body under /v1/, a page for people elsewhere."""
    if request.path.startswith("/v1/"):
        return json_not_found(request, exception)
    return render(request, "website/404.html", status=404)
