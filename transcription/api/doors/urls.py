from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from transcription.api.doors.views import BatchViewSet, JobViewSet, PlaylistViewSet, SegmentsViewSet, VoiceViewSet
from transcription.api.front.polls import poll_view

urlpatterns = [
    path("transcribe", JobViewSet.as_view({"post": "transcribe"}), name="transcribe"),
    path("subtitles", JobViewSet.as_view({"post": "subtitles"}), name="subtitles"),
    path("burn-subtitles", JobViewSet.as_view({"post": "burn_subtitles"}), name="burn-subtitles"),
    path("transcribe-playlist", BatchViewSet.as_view({"post": "create"}), name="transcribe-playlist"),
    # <str:id>, not <uuid:id>: a malformed id is a 422 on ["path", "id"], after auth and rate limit.
    # Polls answered from the cache in one Redis round trip; the rest by the DRF view (api.front.polls).
    path("transcription/<str:id>", poll_view(JobViewSet.as_view({"get": "retrieve"})), name="transcription"),
    path("transcription/<str:id>/speakers", JobViewSet.as_view({"post": "rename_speakers"}), name="speakers"),
    path("transcription/<str:id>/burn", JobViewSet.as_view({"post": "burn_again"}), name="burn"),
    path(
        "transcription/<str:id>/segments",
        SegmentsViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="segments",
    ),
    path("voices", VoiceViewSet.as_view({"get": "list", "post": "create"}), name="voices"),
    path("voices/<str:id>", VoiceViewSet.as_view({"delete": "destroy"}), name="voice"),
    path("batch/<str:id>", BatchViewSet.as_view({"get": "retrieve"}), name="batch"),
    path("playlist", PlaylistViewSet.as_view({"get": "preview"}), name="playlist"),
    path(
        "openapi.json", SpectacularJSONAPIView.as_view(authentication_classes=[], permission_classes=[]), name="openapi"
    ),
    path(
        "docs",
        # The split view serves its start-up script as a file: no inline script (a strict CSP allows it).
        SpectacularSwaggerSplitView.as_view(
            url_name="openapi",
            template_name="docs/swagger_ui.html",
            title="Video Transcription Service API",
            authentication_classes=[],
            permission_classes=[],
        ),
        name="docs",
    ),
]
