"""Settings, all read from the environment (the table: docs/operating.md, "Settings").

With no DATABASE_URL / REDIS_URL the service runs on an embedded default: SQLite, a
filesystem Celery broker and database-backed rate-limit counters, so `make run` needs no
servers. Production and the test suite set both URLs to PostgreSQL and Redis.
"""

import email.utils
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)
# No default: a key in the code is a published key (anyone could sign file links with it).
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY.strip():
    raise ImproperlyConfigured(
        "SECRET_KEY is not set. Set it in the environment to a long random string, the same on every "
        "machine of the service (for example: python3 -c 'import secrets; print(secrets.token_urlsafe(64))'). "
        "`make run` makes one for you and keeps it in var/secret-key."
    )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# Behind a TLS-terminating proxy: believe its X-Forwarded-Proto/-Host (https:// links), and count a
# request from one of TRUSTED_PROXIES by the X-Forwarded-For address it appended (accounts.client).
TRUST_PROXY_HEADERS = env.bool("TRUST_PROXY_HEADERS", default=False)
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=["127.0.0.1/32", "::1/128"])
if TRUST_PROXY_HEADERS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    USE_X_FORWARDED_HOST = True
# Production over HTTPS (docs/operating.md, "Settings", "Production security"): all off by default, because
# `make run` serves plain HTTP on 127.0.0.1; `manage.py check --deploy` is clean with them on.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
# Load balancers probe /health over plain HTTP on the private side: a 301 would fail the probe.
SECURE_REDIRECT_EXEMPT = [r"^health$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Messages live in the session (its row on the server), never in a cookie: the admin's token and
# signing-secret actions show the new secret in a message after their redirect, and Django's
# default storage would send it to the browser in a cookie that is signed, not encrypted
# (tests/accounts/test_secrets_not_in_cookies.py).
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

# Where the service writes: the embedded database and broker, media files, model cache.
DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "var")))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our own static files: the docs work offline
    "django_celery_results",
    "axes",  # failed sign-ins per client address (django-axes)
    "audit",
    "accounts",
    "billing",
    "transcription",
    "webhooks",
    "website",
    "monitoring",
]

MIDDLEWARE = [
    # Every request gets its id first (X-Request-ID), so every log line and a 500's body can name it.
    "config.error_reporting.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # A body over DATA_UPLOAD_MAX_MEMORY_SIZE is a JSON 413 before anything reads it.
    "config.middleware.RequestBodyLimitMiddleware",
    # Same-origin scripts and styles only, on every page (the pages have no inline script or style).
    "config.middleware.ContentSecurityPolicyMiddleware",
    # Serves the admin's and the API page's static files from gunicorn: no separate web server needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: answers a locked-out client's sign-in with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # config/templates links to the checkout's templates/, and is a folder of the installed wheel
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'db.sqlite3'}"),
}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # SQLite: wait for the writer lock instead of failing at once (web and worker share the file).
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    # the sign-up form passes the email as the user's username and email
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "accounts.passwords.VarietyValidator"},  # not 8 spaces, not "aaaaaaaa"
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses sign-ins from a locked-out address first
    "django.contrib.auth.backends.ModelBackend",
]
# Sign-in attempts (the account pages and the admin): after LOGIN_FAILURE_LIMIT failures from one
# client address, that address is refused (429) for LOGIN_LOCKOUT_MINUTES. Counted in the database.
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = env.float("LOGIN_LOCKOUT_MINUTES", default=15.0) / 60  # hours
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_CLIENT_IP_CALLABLE = "accounts.client.counted_client_address"  # an IPv6 client by its /64
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# What support staff (not superusers) may grant: at most this many minutes in one grant, and in
# all their grants of any 24 hours (billing.services.grant_staff_minutes); more needs a superuser.
SUPPORT_GRANT_MAX_MINUTES = env.int("SUPPORT_GRANT_MAX_MINUTES", default=10_000)
SUPPORT_GRANT_DAILY_MINUTES = env.int("SUPPORT_GRANT_DAILY_MINUTES", default=30_000)
# Sign-ups (each one a confirmation mail) from one client address per hour (accounts.views.signup).
SIGNUPS_PER_HOUR = env.int("SIGNUPS_PER_HOUR", default=5)
# Confirmation mails to one recipient per hour, whoever asks: a sign-up form cannot flood a mailbox.
CONFIRMATION_MAILS_PER_HOUR = env.int("CONFIRMATION_MAILS_PER_HOUR", default=3)
# A sign-up's confirmation link lasts this long, and works once.
EMAIL_CONFIRMATION_SECONDS = env.int("EMAIL_CONFIRMATION_SECONDS", default=3 * 24 * 3600)
# Password resets by mail (accounts.password_services): requests from one client address per hour, and
# mails to one recipient per hour (counted whether or not the address has a login, so the answer
# says nothing about it). A reset link works once and for PASSWORD_RESET_SECONDS (Django's
# PASSWORD_RESET_TIMEOUT): an hour, not Django's 3 days, since a link left in a mailbox is a key.
PASSWORD_RESETS_PER_HOUR = env.int("PASSWORD_RESETS_PER_HOUR", default=5)
PASSWORD_RESET_MAILS_PER_HOUR = env.int("PASSWORD_RESET_MAILS_PER_HOUR", default=3)
PASSWORD_RESET_TIMEOUT = env.int("PASSWORD_RESET_SECONDS", default=3600)

# Mail (sign-up confirmation links): SMTP when EMAIL_HOST is set; otherwise each message is
# written as a file under DATA_DIR/mail (what `make run` uses: no mail server needed).
EMAIL_HOST = env.str("EMAIL_HOST", default="")
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_PORT = env.int("EMAIL_PORT", default=587)
    EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
    EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
    EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=True)
else:
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = DATA_DIR / "mail"
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Video Transcription <noreply@localhost>")
LOGIN_URL = "/account/login/"
LOGIN_REDIRECT_URL = "/account/api/"
LOGOUT_REDIRECT_URL = "/account/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# filled by collectstatic (bin/run; the image's build, into its own read-only folder); WhiteNoise serves it
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(DATA_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(DATA_DIR / "media")))
MEDIA_URL = "media/"
# Where audio handed between workers, source videos and burned videos live: the filesystem under
# MEDIA_ROOT by default; any S3-compatible store when S3_BUCKET is set (pip install ".[s3]").
# Result files are always handed out through /v1/files/<signed name>, never by a public bucket URL.
S3_BUCKET = env.str("S3_BUCKET", default="")
if S3_BUCKET:
    STORAGES = {
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": S3_BUCKET,
                "endpoint_url": env.str("S3_ENDPOINT_URL", default=None),
                "region_name": env.str("S3_REGION", default=None),
                "access_key": env.str("S3_ACCESS_KEY_ID", default=None),
                "secret_key": env.str("S3_SECRET_ACCESS_KEY", default=None),
                "default_acl": "private",
                "file_overwrite": True,
            },
        },
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }

# Public base address used to build absolute links (burned videos) outside a request.
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000")

# Threads per web process that run Django's (synchronous) views and the MCP tools' database work
# (config/asgi.py); each holds at most one database connection.
WEB_THREADS = env.int("WEB_THREADS", default=8)

# --- Redis: broker and rate-limit counters -------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    _broker_dir = DATA_DIR / "broker"
    for _folder in ("queue", "processed", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # the exchange tables, which kombu otherwise writes to control/ in the current directory
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # A task acknowledged late is redelivered when its worker dies; the visibility timeout
    # must be longer than the longest stage, or Redis redelivers a task that is still running.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=4 * 3600)}
# The outcome of each stage's task (state, worker, a traceback if it crashed) is kept in the
# database for support staff: the job's admin page lists its tasks (django-celery-results; the
# job tasks opt in, beat's housekeeping tasks do not). Rows expire after a day (celery's default,
# cleaned by beat).
CELERY_RESULT_BACKEND = "django-db"
# Messages and results as JSON, and nothing else taken: the broker is a Redis other machines reach,
# and a pickled message would run whatever code its bytes name in the worker that decodes it.
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_ACCEPT_CONTENT = ["json"]
CELERY_EVENT_SERIALIZER = "json"
CELERY_RESULT_EXTENDED = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = "media"
# media: download and ffmpeg; asr: speech recognition (put GPU workers here); burn: encoding;
# hooks: webhook deliveries (short network waits, kept apart from long media work) and the sweeper,
# which on `media` waited behind every queued download before it could re-queue a dead worker's job.
CELERY_TASK_ROUTES = {
    "transcription.tasks.start_job": {"queue": "media"},
    "transcription.tasks.transcribe_job": {"queue": "asr"},
    "transcription.tasks.burn_job": {"queue": "burn"},
    "transcription.tasks.retranslate_job": {"queue": "asr"},
    "transcription.tasks.recognise_chunk": {"queue": "asr"},
    "transcription.tasks.sweep_stalled_jobs": {"queue": "hooks"},
    "transcription.tasks.*": {"queue": "media"},
    "webhooks.tasks.*": {"queue": "hooks"},
    # password-reset mails: an SMTP exchange, kept out of the web's answer (its timing told who has a login)
    "accounts.tasks.*": {"queue": "hooks"},
}

# --- Requests -----------------------------------------------------------------------------------
# The largest request body read; a larger one is a JSON 413 (config.middleware). Django's default.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("MAX_REQUEST_BODY_BYTES", default=2_621_440)

# --- A transcript's corrections (transcription.api.front.editing; docs/decisions/api.md, issue 56) ------
# A document is bounded by its recording: at most this many words and characters a second of the
# job's duration (a fast speaker says 3 to 4 words a second), and never fewer than the floor, so a
# short clip can still be written out. An edit past it is a 422 naming the bound.
TRANSCRIPT_WORDS_PER_SECOND = env.float("TRANSCRIPT_WORDS_PER_SECOND", default=6.0)
TRANSCRIPT_CHARS_PER_SECOND = env.float("TRANSCRIPT_CHARS_PER_SECOND", default=40.0)
TRANSCRIPT_MIN_WORDS = env.int("TRANSCRIPT_MIN_WORDS", default=600)
TRANSCRIPT_MIN_CHARS = env.int("TRANSCRIPT_MIN_CHARS", default=4000)
# One save (PATCH …/segments, the MCP tool edit_transcript, the website's editor): its edits and
# their size as JSON, so that one request's work stays bounded (bench/edits/bounds.py)
EDITS_PER_SAVE = env.int("EDITS_PER_SAVE", default=1000)
EDITS_MAX_BYTES = env.int("EDITS_MAX_BYTES", default=262_144)
# The website's editor lists a word as doubtful under this probability of the speech model
# (calibrated in bench/asr/confidence.py: the share of real errors caught at the share marked)
EDITOR_DOUBT_BELOW = env.float("EDITOR_DOUBT_BELOW", default=0.55)

# --- Rate limits (per account, in any 60 seconds: transcription.api.front.ratelimit) ---------------------
RATE_LIMIT_JOBS_PER_MINUTE = env.int("RATE_LIMIT_JOBS_PER_MINUTE", default=60)
RATE_LIMIT_POLLS_PER_MINUTE = env.int("RATE_LIMIT_POLLS_PER_MINUTE", default=300)
# API requests without a valid token, per client address.
RATE_LIMIT_ANONYMOUS_PER_MINUTE = env.int("RATE_LIMIT_ANONYMOUS_PER_MINUTE", default=30)

# --- Jobs and the pipeline -------------------------------------------------------------------
ALLOW_PRIVATE_URLS = env.bool("ALLOW_PRIVATE_URLS", default=False)
FREE_MINUTES = env.int("FREE_MINUTES", default=10)
MAX_VIDEO_SECONDS = env.int("MAX_VIDEO_SECONDS", default=12 * 3600)
FETCH_TIMEOUT_SECONDS = env.int("FETCH_TIMEOUT_SECONDS", default=30)
# Sites that throttle or block server addresses: yt-dlp's cookies (a Netscape cookies.txt, read by
# every web and media worker; each run works on a private copy) and the operator's own proxy
# (http:// or https://; the address guard still checks every URL requested through it).
YTDLP_COOKIES_FILE = env.str("YTDLP_COOKIES_FILE", default="")
YTDLP_PROXY = env.str("YTDLP_PROXY", default="")
if YTDLP_PROXY and not YTDLP_PROXY.lower().startswith(("http://", "https://")):
    raise ImproperlyConfigured("YTDLP_PROXY must be an http:// or https:// proxy address.")
if YTDLP_COOKIES_FILE and not Path(YTDLP_COOKIES_FILE).is_file():
    raise ImproperlyConfigured(f"YTDLP_COOKIES_FILE names no file: {YTDLP_COOKIES_FILE}")
# What every yt-dlp call (probe, download, listing) is given.
YTDLP_OPTIONS = {"proxy": YTDLP_PROXY or None, "cookies_file": YTDLP_COOKIES_FILE or None}
WHISPER_MODEL = env.str("WHISPER_MODEL", default="base")
RECOGNITION_CHUNK_SECONDS = env.float("RECOGNITION_CHUNK_SECONDS", default=600.0)
# How many jobs one asr worker recognises at once on its one loaded model: its threads share the
# weights, and on a GPU each runs on a CUDA stream of its own (CTranslate2's inter_threads). Run that
# worker with `--pool threads --concurrency` the same number (compose.gpu.yaml does); 1 on a CPU,
# where one job already takes every core (docs/decisions/workers-and-operations.md).
ASR_JOBS_AT_ONCE = env.int("ASR_JOBS_AT_ONCE", default=1)
if ASR_JOBS_AT_ONCE < 1:
    raise ImproperlyConfigured("ASR_JOBS_AT_ONCE must be 1 or more.")
# A job whose audio is longer than this is recognised in chunks spread over every free asr worker
# (issue 44; transcription/stages/spreading.py); 0: never (one worker recognises every job alone).
SPREAD_ABOVE_SECONDS = env.float("SPREAD_ABOVE_SECONDS", default=1200.0)
# Such a job's chunks are shorter than one worker's (at most this, cut at the quietest moment): the
# worker that coordinates also diarizes the whole file, and with short chunks it simply takes fewer,
# so the workers finish together (bench/asr/spread.py: 600 s chunks split 4 + 3 on two workers).
SPREAD_CHUNK_SECONDS = env.float("SPREAD_CHUNK_SECONDS", default=180.0)
if SPREAD_CHUNK_SECONDS <= 0:
    raise ImproperlyConfigured("SPREAD_CHUNK_SECONDS must be more than 0.")
# Diarization: another copy of Resemblyzer's pretrained.pt (default: the one in the installed
# package), and the encoder's threads (0: the CPU count, at most 16).
SPEAKER_ENCODER_WEIGHTS = env.str("SPEAKER_ENCODER_WEIGHTS", default="")
# Where `transcription-models fetch` put the speaker models' weights (None: the Python
# environment's own share/video-transcription/speaker-weights); handed down to
# pipeline.speakers.encoding.weight_files by transcription.apps, and on to the diarization child.
_speaker_weights_dir = env.str("SPEAKER_WEIGHTS_DIR", default="").strip()
SPEAKER_WEIGHTS_DIR = Path(_speaker_weights_dir) if _speaker_weights_dir else None
SPEAKER_THREADS = env.int("SPEAKER_THREADS", default=0)
MODEL_CACHE_DIR = Path(env.str("MODEL_CACHE_DIR", default=str(DATA_DIR / "models")))
WORK_DIR = Path(env.str("WORK_DIR", default=str(DATA_DIR / "work")))

# --- API -------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["transcription.api.doors.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "transcription.api.doors.schema.ContractAutoSchema",
    "EXCEPTION_HANDLER": "transcription.api.wire.error_bodies.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Video Transcription Service API",
    # The description (prices, errors, polling) is written by transcription.api.doors.schema.finish_document.
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": False,
    # The contract's names for its enumerations, so a generated client gets the types it names.
    "ENUM_NAME_OVERRIDES": {
        "State": "transcription.models.JobState",
        "TranslationState": "transcription.models.TranslationState",
        "TranscriptionType": "transcription.models.JobType",
        "Quality": "transcription.models.Quality",
        "FontSize": "transcription.models.FontSize",
        "SubtitleFormat": "transcription.models.SubtitleFormat",
        "VoiceState": "transcription.models.VoiceState",
        "SegmentEditOp": "transcription.pipeline.transcripts.transcript_edits.OPS",
        "AudioEvent": "transcription.pipeline.types.AUDIO_EVENTS",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "transcription.api.doors.schema.finish_document",
    ],
    "SCHEMA_PATH_PREFIX": "/v1/api",
    # Swagger UI from drf-spectacular-sidecar's static files: the docs page needs no internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "persistAuthorization": True, "validatorUrl": None},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.error_reporting.RequestIdFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s [request %(request_id)s] %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["request_id"], "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# --- Unhandled errors (config.error_reporting) -------------------------------------------------
# Mailed to ADMINS ("Ops <ops@example.org>, dev@example.org") by Django's mail_admins handler, and
# sent to a Sentry-compatible receiver when SENTRY_DSN is set; logged with the request's id always.
ADMINS = [
    (name.strip() or address, address)
    for name, address in (email.utils.parseaddr(item) for item in env.list("ADMINS", default=[]) if item.strip())
    if address
]
SERVER_EMAIL = env.str("SERVER_EMAIL", default=DEFAULT_FROM_EMAIL)
SENTRY_DSN = env.str("SENTRY_DSN", default="")
if SENTRY_DSN:
    from config.error_reporting import start_sentry

    start_sentry(SENTRY_DSN, env.str("SENTRY_ENVIRONMENT", default="production"))

# --- Artifacts (burned videos) ---------------------------------------------------------------
ARTIFACT_LINK_SECONDS = env.int("ARTIFACT_LINK_SECONDS", default=7 * 24 * 3600)
ARTIFACT_RETENTION_DAYS = env.int("ARTIFACT_RETENTION_DAYS", default=30)

# --- Uploads (transcription.api.doors.uploads) and the OpenAI-compatible door (transcription.api.doors.openai_compat) ---
# The largest file one upload may carry (a JSON 413 above it), by any route: plain POST, tus or
# the OpenAI-compatible endpoints.
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=2 * 1024**3)
# An upload (or an unfinished tus upload) is kept this long after its last use, never while a job reads it.
UPLOAD_RETENTION_HOURS = env.int("UPLOAD_RETENTION_HOURS", default=24)
# Where an upload's bytes arrive before it is whole: under MEDIA_ROOT, so it is renamed into storage, not copied.
UPLOAD_INCOMING_DIR = Path(env.str("UPLOAD_INCOMING_DIR", default=str(MEDIA_ROOT / "incoming")))
# How long POST /v1/audio/transcriptions waits for its job before an error naming the job to poll.
OPENAI_WAIT_TIMEOUT_SECONDS = env.float("OPENAI_WAIT_TIMEOUT_SECONDS", default=600.0)

# --- Live streams: /v1/realtime (docs/decisions/live.md; docs/operating.md says what each means) ----
LIVE_STREAMS_PER_ACCOUNT = env.int("LIVE_STREAMS_PER_ACCOUNT", default=2)  # when its plan says nothing
LIVE_STREAMS_PER_WORKER = env.int("LIVE_STREAMS_PER_WORKER", default=2)  # one bin/live's, on its one model
if LIVE_STREAMS_PER_WORKER < 1:
    raise ImproperlyConfigured("LIVE_STREAMS_PER_WORKER must be 1 or more.")
LIVE_IDLE_TIMEOUT_SECONDS = env.float("LIVE_IDLE_TIMEOUT_SECONDS", default=60.0)  # no message: closed
LIVE_MAX_STREAM_SECONDS = env.int("LIVE_MAX_STREAM_SECONDS", default=4 * 3600)  # of audio in one stream
# audio a client may send ahead of recognition: past it the door stops reading the socket
LIVE_BUFFER_SECONDS = env.float("LIVE_BUFFER_SECONDS", default=30.0)

# --- Sweeper: jobs that stopped moving (a worker died) -----------------------------------------
STALLED_AFTER_SECONDS = env.int("STALLED_AFTER_SECONDS", default=15 * 60)
STALLED_MAX_ATTEMPTS = env.int("STALLED_MAX_ATTEMPTS", default=2)
# A worker running a stage renews its claim on the job this often; the claim lapses after four
# missed beats, so a dead worker's job is free again within two minutes.
WORKER_HEARTBEAT_SECONDS = env.float("WORKER_HEARTBEAT_SECONDS", default=30.0)
# Stopping a worker (SIGTERM through bin/worker): running stages may finish within the grace (Celery's
# soft shutdown); then they are interrupted, release their claims and queue their jobs again. A pool
# process still there UNWIND seconds later is killed: a worker is gone within grace + unwind.
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT = env.float("WORKER_SHUTDOWN_GRACE_SECONDS", default=10.0)
WORKER_SHUTDOWN_UNWIND_SECONDS = env.float("WORKER_SHUTDOWN_UNWIND_SECONDS", default=20.0)

CELERY_BEAT_SCHEDULE = {
    "sweep-stalled-jobs": {
        "task": "transcription.tasks.sweep_stalled_jobs",
        "schedule": env.float("SWEEP_INTERVAL_SECONDS", default=60.0),
    },
    "renew-plans": {"task": "billing.tasks.renew_plans", "schedule": 3600.0},
    "delete-expired-artifacts": {"task": "transcription.tasks.delete_expired_artifacts", "schedule": 3600.0},
    "send-due-webhooks": {"task": "webhooks.tasks.send_due_messages", "schedule": 30.0},
}
DOWNLOAD_TIMEOUT_SECONDS = env.int("DOWNLOAD_TIMEOUT_SECONDS", default=30 * 60)
DOWNLOAD_MAX_BYTES = env.int("DOWNLOAD_MAX_BYTES", default=8 * 1024**3)
DOWNLOAD_STALL_SECONDS = env.int("DOWNLOAD_STALL_SECONDS", default=60)
FFMPEG_TIMEOUT_SECONDS = env.int("FFMPEG_TIMEOUT_SECONDS", default=60 * 60)
BURN_TIMEOUT_SECONDS = env.int("BURN_TIMEOUT_SECONDS", default=6 * 60 * 60)

# --- Translation ---------------------------------------------------------------------------------
# CTranslate2 translation models (converted OPUS-MT or NLLB folders), the production path for
# quality and coverage: "en-de=/models/opus-mt-en-de,*=/models/nllb-200-distilled-600M".
# A pair key serves that pair; "*" is a multilingual NLLB folder serving any pair. Pairs no
# model serves fall back to Apertium (Debian packages), then to Whisper's speech -> English.
TRANSLATION_MODELS = env.dict("TRANSLATION_MODELS", default={})
TRANSLATION_TIMEOUT_SECONDS = env.int("TRANSLATION_TIMEOUT_SECONDS", default=10 * 60)
# `manage.py translation_models install en-de` fetches CTranslate2 packages from this index (the
# Argos Translate one by default) and unpacks them here; installed pairs are served with no other
# setting (a TRANSLATION_MODELS entry for the same pair wins).
TRANSLATION_PACKAGE_INDEX = env.str(
    "TRANSLATION_PACKAGE_INDEX", default="https://raw.githubusercontent.com/argosopentech/argospm-index/main/index.json"
)
TRANSLATION_PACKAGES_DIR = Path(env.str("TRANSLATION_PACKAGES_DIR", default=str(MODEL_CACHE_DIR / "translation")))
# The contract's cap on videos per batch and per preview: a constant, not an environment variable.
PLAYLIST_MAX_VIDEOS = 25
# A playlist is listed inside the web request (the preview and the batch POST answer with its
# videos): at most this long in all, and at most this many listings at once per web process.
PLAYLIST_LISTING_TIMEOUT_SECONDS = env.float("PLAYLIST_LISTING_TIMEOUT_SECONDS", default=20.0)
PLAYLIST_LISTINGS_PER_PROCESS = env.int("PLAYLIST_LISTINGS_PER_PROCESS", default=2)

# --- Webhooks ------------------------------------------------------------------------------------
# Seconds before each retry of an event the receiver did not take (Standard Webhooks' schedule).
WEBHOOK_RETRY_SECONDS = env.list("WEBHOOK_RETRY_SECONDS", cast=float, default=[5, 300, 1800, 7200, 18000, 36000, 86400])
# Limit of one delivery attempt, connecting and reading the answer included.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=15.0)

# --- Monitoring (/health for load balancers, /metrics for Prometheus) -------------------------------
# /metrics answers a request bearing this token or from one of these networks; /health needs neither.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=["127.0.0.1/32", "::1/128"])
