"""Polls answered in the event loop, before Django's thread pool (the production server only).

Under bin/web (uvicorn workers serving config.asgi) every Django request crosses from the event
loop to a thread of a2wsgi's pool, and its answer comes back in three more hand-overs: together
they cost more CPU than a whole cached poll (bench/polls). A poll that the script of
transcription.api.front.polls can answer (most polls) runs that script here instead, with an asyncio
Redis client, and then goes through Django inline, in the loop's own thread, with the script's
answer in its environ (polls.ANSWER_ENVIRON_KEY). The middleware and the view run as for any
request (the host check, the security headers, the same response object), and poll_view answers
from what the script said, touching neither PostgreSQL nor Redis again: the loop is held for
Django's CPU (a fraction of a millisecond), never for I/O. Every other request, and every poll
the script declines (nothing counted then), goes to the thread pool as before.

A poll the script counted but Django did not hand to the view (a Host this service does not
serve, say) has its count taken back, so that a poll is counted exactly when poll_view answers it.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import redis
import redis.asyncio
from a2wsgi.wsgi import build_environ
from django.conf import settings
from django.urls import reverse

from config import shared_cache
from transcription.api.front import polls, ratelimit


class PollFront:
    """ASGI: polls the script answers go through `wsgi_application` inline; the rest to `fallback`."""

    def __init__(self, wsgi_application, fallback):
        self.wsgi_application = wsgi_application
        self.fallback = fallback
        self.prefix = reverse("transcription", kwargs={"id": "-"})[:-1]  # "/v1/api/transcription/"
        self._loop = None
        self._client = None
        self._script = None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].startswith(self.prefix):
            answered = await self._answer(scope)
            if answered is not None:
                status, headers, body = answered
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.fallback(scope, receive, send)

    async def _answer(self, scope) -> tuple[int, list, bytes] | None:
        # A poll has no body, so an empty one stands in for a2wsgi's reader. a2wsgi types the environ
        # as a closed TypedDict; WSGI's is an open dict (HTTP_* headers, ANSWER_ENVIRON_KEY), used as one.
        environ: dict[str, Any] = build_environ(scope, io.BytesIO())  # type: ignore[arg-type,assignment]
        id = environ["PATH_INFO"][len(self.prefix) :]
        if not id or "/" in id or environ.get("CONTENT_LENGTH", "0") != "0" or "HTTP_TRANSFER_ENCODING" in environ:
            return None  # not a poll's URL, or a body to read: the thread pool
        poll = polls.poll_for(
            environ["REQUEST_METHOD"],
            environ.get("HTTP_ACCEPT", ""),
            environ["QUERY_STRING"],
            environ.get("HTTP_AUTHORIZATION", ""),
            id,
        )
        if poll is None:
            return None
        try:
            reply = await self.script()(keys=poll.keys, args=poll.args)
        except (redis.RedisError, OSError) as error:  # Redis gone: the thread pool's path copes
            shared_cache.mark_down(error)
            return None
        answer = polls.answer_from(poll, reply)
        if answer is None:
            return None
        environ[polls.ANSWER_ENVIRON_KEY] = answer
        answered = self._django(environ)
        if polls.ANSWER_ENVIRON_KEY in environ:  # poll_view did not take it: not answered, not counted
            await self._uncount(answer)
        return answered

    def _django(self, environ: dict[str, Any]) -> tuple[int, list, bytes]:
        """Django's WSGI application called here, as a WSGI server would: status, headers, body."""
        started: list[Any] = []
        chunks: list[bytes] = []

        def start_response(status, headers, exc_info=None):
            started[:] = [status, headers]
            return chunks.append

        iterable = self.wsgi_application(environ, start_response)
        try:
            chunks.extend(iterable)
        finally:
            if hasattr(iterable, "close"):
                iterable.close()  # Django's request_finished
        status, headers = started
        return (
            int(status.split(" ", 1)[0]),
            [(name.lower().encode("latin1"), value.encode("latin1")) for name, value in headers],
            b"".join(chunks),
        )

    async def _uncount(self, answer: polls.PollAnswer) -> None:
        key = ratelimit.account_key(answer.cached.account_id, ratelimit.POLLS)
        try:
            await self._client.zrem(key, answer.member)
        except redis.RedisError as error:
            shared_cache.mark_down(error)

    def script(self):
        """The script on an asyncio client of this event loop (one per worker process)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._client = shared_cache.connect_async(settings.REDIS_URL)
            self._script = self._client.register_script(polls.POLL_SCRIPT)
            self._loop = loop
        return self._script
