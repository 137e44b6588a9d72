from django.urls import path

from . import views

app_name = "monitoring"

urlpatterns = [
    path("health", views.health, name="health"),
    path("metrics", views.metrics, name="metrics"),
]
