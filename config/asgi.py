"""The production web application (bin/web: gunicorn with uvicorn workers): /mcp goes to the MCP
server (transcription.api.doors.mcp_server, the official SDK's Streamable HTTP app), /v1/api/uploads to
the uploads' app (transcription.api.doors.uploads: bodies read in the event loop), /v1/audio/* and
/v1/models to OpenAI's speech API (transcription.api.doors.openai_compat), the WebSocket of
/v1/realtime to OpenAI's Realtime transcription protocol (transcription.api.doors.realtime), everything else to
Django's WSGI application in a thread pool (a2wsgi), which kept the poll path as fast as gunicorn's
sync workers did (docs/decisions.md, "One server for /v1 and /mcp"). The lifespan events go to the
SDK's app, which starts its session manager there.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from transcription.api.doors import openai_compat, realtime, uploads  # noqa: E402
from transcription.api.doors.asgi_door import ChunkedBodies  # noqa: E402
from transcription.api.doors.mcp_server import MCP_PATH, asgi_app  # noqa: E402
from transcription.api.doors.poll_front import PollFront  # noqa: E402

django_wsgi_application = get_wsgi_application()
# Polls the Redis script answers go through Django in the event loop; the rest to the thread pool.
# A chunked body is read whole first (bounded), so Django's WSGI side sees it with its length.
# django-stubs types WSGIHandler's answer as an HttpResponseBase (iterable at run time) and its environ
# as a dict, a2wsgi its WSGI application's as Iterable[bytes] and a TypedDict: the same objects.
threads = WSGIMiddleware(django_wsgi_application, workers=settings.WEB_THREADS)  # type: ignore[arg-type]
django_application = ChunkedBodies(PollFront(django_wsgi_application, threads))
mcp_sdk_application, mcp_application = asgi_app()


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await mcp_sdk_application(scope, receive, send)
    if scope["type"] == "websocket":
        if scope["path"].rstrip("/") == realtime.PATH:
            return await realtime.application(scope, receive, send)
        return await send({"type": "websocket.close", "code": 1008})
    if scope["type"] == "http" and scope["path"].rstrip("/") == MCP_PATH:
        return await mcp_application(scope, receive, send)
    if scope["type"] == "http" and (scope["path"] + "/").startswith(uploads.UPLOADS_PATH + "/"):
        return await uploads.application(scope, receive, send)
    if scope["type"] == "http" and scope["path"].startswith(openai_compat.PATHS):
        return await openai_compat.application(scope, receive, send)
    return await django_application(scope, receive, send)
