"""`manage.py live_worker` (bin/live): a live worker (transcription.stages.live) on REDIS_URL, serving
LIVE_STREAMS_PER_WORKER streams at once until SIGTERM or SIGINT, when its streams are told it stops.
`--alive` answers instead whether a live worker of this host beats (the container's health)."""

import signal
import socket
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from transcription.events import live_streams
from transcription.stages import live


class Command(BaseCommand):
    help = "Serve live streams (/v1/realtime) from Redis: the live worker role."

    def add_arguments(self, parser):
        parser.add_argument("--alive", action="store_true", help="exit 0 when a live worker of this host beats")

    def handle(self, *args, **options):
        if not settings.REDIS_URL:
            raise CommandError("A live worker needs REDIS_URL; without it the web process serves streams itself.")
        if options["alive"]:
            if not live_streams.beating_on(settings.REDIS_URL, socket.gethostname()):
                raise CommandError(f"No live worker of {socket.gethostname()} beats.")
            return
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        link = live.redis_worker(settings.REDIS_URL)
        threads = live.start(link, settings.LIVE_STREAMS_PER_WORKER, stop)
        self.stdout.write(f"live worker {link.name} ready: {settings.LIVE_STREAMS_PER_WORKER} streams", ending="\n")
        self.stdout.flush()
        stop.wait()
        for thread in threads:
            thread.join(timeout=5)
