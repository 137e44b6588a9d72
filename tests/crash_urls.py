"""The service's URLs and one that fails as a bug would (tests/test_error_reporting.py)."""

from django.urls import path

from config.urls import handler404, handler500  # noqa: F401 (Django reads them here)
from config.urls import urlpatterns as service_urls

CRASH_MESSAGE = "a bug the operators must hear about"


def crash(request):
    raise RuntimeError(CRASH_MESSAGE)


urlpatterns = [path("crash-for-test", crash), *service_urls]
