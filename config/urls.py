from django.contrib import admin
from django.urls import include, path

from transcription.views import artifact

admin.site.site_header = "Video transcription — support"
admin.site.site_title = "Video transcription support"
admin.site.index_title = "Accounts, minutes and jobs"

urlpatterns = [
    path("v1/api/", include("transcription.api.doors.urls")),
    path("v1/files/<str:token>", artifact, name="artifact"),
    path("account/", include("accounts.urls")),
    path("account/api/webhook/", include("webhooks.urls")),
    path("admin/", admin.site.urls),
    path("", include("monitoring.urls")),
    path("", include("website.urls")),
]

handler404 = "website.views.not_found"
handler500 = "transcription.api.wire.error_bodies.json_server_error"
