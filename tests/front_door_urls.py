"""The front door alone, for tests that compare the poll fast lane with it: the v1 poll route to
the DRF view with no fast lane in front (config.urls puts transcription.api.front.polls.poll_view there)."""

from django.urls import path

from transcription.api.doors.views import JobViewSet

urlpatterns = [
    path("v1/api/transcription/<str:id>", JobViewSet.as_view({"get": "retrieve"}), name="transcription"),
]
