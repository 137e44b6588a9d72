from django.urls import path

from . import editor_views, live_views, views

app_name = "website"

urlpatterns = [
    path("", views.home, name="home"),
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/new/", views.job_new, name="job-new"),
    path("jobs/status/", views.job_status, name="job-status"),
    path("jobs/<uuid:job_id>/", views.job_detail, name="job"),
    path("jobs/<uuid:job_id>/files/<str:name>", views.job_file, name="job-file"),
    path("jobs/<uuid:job_id>/speakers", views.job_speakers, name="job-speakers"),
    path("jobs/<uuid:job_id>/media", editor_views.job_media, name="job-media"),
    path("jobs/<uuid:job_id>/segments", editor_views.job_segments, name="job-segments"),
    path("live/", live_views.live, name="live"),
    path("live/key", live_views.live_key, name="live-key"),
    path("batches/<uuid:batch_id>/", views.batch_detail, name="batch"),
]
