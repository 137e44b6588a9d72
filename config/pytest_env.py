"""A pytest plugin (pyproject's addopts: `-p config.pytest_env`): the suite's environment, set
before pytest-django reads the settings. It lives here, not in tests/, because -p plugins are
imported before tests/ is on the path. Subprocesses the tests start (workers, gunicorn, manage.py)
inherit all of it.

- The suite's own SECRET_KEY (the settings refuse to load without one). bin/test sets one too; this
  covers `pytest` run by hand.
- Under pytest-xdist (bin/test runs the suite on one process per core), each of its processes gets a
  Redis database and a DATA_DIR of its own: its Celery workers take only its own queued tasks, its
  rate limits and lines are its own, and its files (media, scratch, the embedded broker) never meet
  the other's, whose test database hands out the same job ids. The speech model's folder stays shared
  (read only once assembled, under a lock: pipeline/recognition/whisper_model.py).
"""

import os
import re
import secrets
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "test-suite-" + secrets.token_urlsafe(48))

_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... (set before plugins load)
if _xdist_worker:
    _index = int(_xdist_worker.removeprefix("gw"))
    _redis = os.environ.get("REDIS_URL", "")
    # redis://host:port/15 -> /15 for gw0, /14 for gw1...: the suite's database and the ones below it
    _match = re.fullmatch(r"(.*/)(\d+)", _redis)
    if _match:
        os.environ["REDIS_URL"] = f"{_match[1]}{(int(_match[2]) - _index) % 16}"
    _data = Path(os.environ.get("DATA_DIR", Path(__file__).resolve().parent.parent / "var"))
    os.environ.setdefault("MODEL_CACHE_DIR", str(_data / "models"))
    os.environ["DATA_DIR"] = str(_data / "xdist" / _xdist_worker)
