"""The poll fast lane under test: transcription.api.doors.poll_front's PollFront over Django's WSGI
application, driven as uvicorn drives it, in an event loop."""

import asyncio

from django.core.wsgi import get_wsgi_application

from transcription.api.doors.poll_front import PollFront


class Front:
    """PollFront over Django's WSGI application; whatever it passes on is recorded, not served."""

    def __init__(self):
        self.passed_on = []
        self.app = PollFront(get_wsgi_application(), self.fallback)

    async def fallback(self, scope, receive, send):
        self.passed_on.append(scope["path"])
        await send({"type": "http.response.start", "status": 599, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def _get(self, path, headers, query):
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        messages = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            messages.append(message)

        await self.app(scope, receive, send)
        headers = {name.decode(): value.decode() for name, value in messages[0]["headers"]}
        return messages[0]["status"], headers, b"".join(m.get("body", b"") for m in messages[1:])

    def get(self, path, token, query="", **headers):
        """One GET through the front, in an event loop as uvicorn runs it: (status, headers, body)."""
        headers = {"Host": "testserver", "Authorization": f"Bearer {token}", **headers}
        return asyncio.run(self._get(path, headers, query))

    def request(self, path, query="", headers=None):
        """A GET with exactly these headers (and Host: testserver): (status, headers, body)."""
        return asyncio.run(self._get(path, {"Host": "testserver", **(headers or {})}, query))
