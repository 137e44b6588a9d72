from django.urls import path

from . import views

app_name = "webhooks"

urlpatterns = [
    path("", views.endpoint_edit, name="edit"),
    path("rotate/", views.endpoint_rotate, name="rotate"),
    path("remove/", views.endpoint_delete, name="remove"),
]
