"""Settings for the polling benchmark: the production settings plus one bench-only URL.

Everything else (middleware, DRF, database, Redis, rate limits) is exactly config.settings, read
from the same environment; bench/polls/run.py sets DATABASE_URL, REDIS_URL and a high
RATE_LIMIT_POLLS_PER_MINUTE before it starts gunicorn with this module.
"""

from config.settings import *  # noqa: F401,F403

ROOT_URLCONF = "bench.polls.urls"
