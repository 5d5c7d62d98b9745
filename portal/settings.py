"""Settings for GPU Portal.

Everything has an embedded default so that a fresh clone runs with no configuration: SQLite in
``var/``, django-q2's ORM broker, and the local Docker engine as slave ``local``. Production
overrides come from ``PORTAL_*`` environment variables (see docs/configuration.md).
"""

import os
import socket
from pathlib import Path

from core import installation
from portal.envconfig import (
    database_from_url,
    env_bool,
    env_bytes_by_prefix,
    env_count,
    env_int,
    env_list,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))

# --- Production by default -------------------------------------------------------------------
# The var directory holds the database, keys, logs: private to the portal's user (0700), and
# created here so that every manage.py command works on a fresh clone.
installation.private_dir(VAR_DIR)
# Debug pages show settings and code: only when asked for.
DEBUG = env_bool("PORTAL_DEBUG", False)
# Without PORTAL_SECRET_KEY, a key made once per installation and kept in var/ (mode 0600).
SECRET_KEY = os.environ.get("PORTAL_SECRET_KEY") or installation.kept_value(
    VAR_DIR / "secret_key", installation.new_secret_key
)
# Loopback and this machine's own names (gpulab-cli pointed at the host name must work).
ALLOWED_HOSTS = env_list(
    "PORTAL_ALLOWED_HOSTS",
    list(
        dict.fromkeys(
            ["127.0.0.1", "localhost", "[::1]", "testserver"]
            + [name.lower() for name in (socket.gethostname(), socket.getfqdn()) if name]
        )
    ),
)
CSRF_TRUSTED_ORIGINS = env_list("PORTAL_CSRF_TRUSTED_ORIGINS", [])
# Behind the TLS front end (deploy/nginx/ sets X-Forwarded-Proto): cookies only over HTTPS.
# Off by default because `make run` serves plain HTTP on loopback.
if env_bool("PORTAL_HTTPS", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("PORTAL_HSTS_SECONDS", 0)

INSTALLED_APPS = [
    # Before django_q: portal's `qcluster` command (a stop deadline, unreadable schedules set
    # aside) replaces django-q2's; Django takes a command from the first app that has it.
    "portal",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI / Redoc files served locally for /api/docs/ (no CDN).
    "drf_spectacular_sidecar",
    "django_q",
    "crispy_forms",
    "crispy_bootstrap5",
    "core",
    "accounts",
    "clusters",
    "reservations",
    "quotas",
    "jobs",
    "gangs",
    "tapis",
    "ssh",
    "interactive",
    "reports",
    "notifications",
]

MIDDLEWARE = [
    # First: under /api/ every error is JSON, even a bad Host header or a debug page.
    "core.api_errors.ApiJsonErrorsMiddleware",
    # Under /api/tapis/, the refusals of the guards below in Tapis' envelope (tapis/middleware.py).
    "tapis.middleware.TapisErrorEnvelopeMiddleware",
    # Under OpenPAI's routes (/api/v1/jobs, /api/v2/jobs), the same in OpenPAI's {code, message}.
    "gangs.middleware.OpenPaiErrorMiddleware",
    # A body above its path's limit gets 413 before anything reads it (core/body_limits.py).
    "core.body_limits.BodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files from the web process itself (compressed, cached forever when hashed).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads a cookie, a parameter or the body into a query: NUL bytes and
    # unpaired surrogates get a 400 naming the parameter instead of a database error (500).
    "core.text_guard.TextGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After the user is known: every time of the request in the user's zone (the admin too).
    "accounts.timezones.UserTimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

# --- Database under load (docs/configuration.md "Database connections") ---------------------
DATABASES = {
    "default": database_from_url(
        os.environ.get("PORTAL_DATABASE_URL", ""),
        sqlite_path=VAR_DIR / "portal.sqlite3",
        sqlite_busy_timeout_s=env_int("PORTAL_SQLITE_BUSY_TIMEOUT_S", 20),
        pool_min=env_int("PORTAL_DB_POOL_MIN", 0),
        pool_max=env_int("PORTAL_DB_POOL_MAX", 4),
        pool_timeout_s=env_int("PORTAL_DB_POOL_TIMEOUT_S", 10),
    )
}
# A busy database (SQLite lock wait or PostgreSQL pool wait ran out) answers 503 with this
# Retry-After (seconds), never 500: core/dbbusy.py (DRF's handler covers the API).
PORTAL_DB_BUSY_RETRY_AFTER_S = env_int("PORTAL_DB_BUSY_RETRY_AFTER_S", 2)
MIDDLEWARE.append("core.dbbusy.DatabaseBusyMiddleware")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# ModelBackend with a user's permissions read in one query (accounts/backends.py); then the
# lab's LDAP directory and OpenID Connect provider, each inert until configured below.
AUTHENTICATION_BACKENDS = [
    "accounts.backends.PortalModelBackend",
    "accounts.directory.ldap_backend.PortalLDAPBackend",
    "accounts.directory.oidc_backend.PortalOIDCBackend",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# 24-hour ISO-style dates everywhere, the admin included (portal/formats/en/formats.py).
FORMAT_MODULE_PATH = ["portal.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
installation.private_dir(STATIC_ROOT)  # WhiteNoise warns about a missing one before collectstatic
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # WhiteNoise's compressed, hashed files after collectstatic (run_portal runs it); without a
    # collected manifest (tests, runserver) pages link the plain names: see portal/staticfiles.py.
    "staticfiles": {"BACKEND": "portal.staticfiles.StaticFilesStorage"},
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

CRISPY_ALLOWED_TEMPLATE_PACKS = "bootstrap5"
CRISPY_TEMPLATE_PACK = "bootstrap5"

# Request bodies above this are refused with 413 (JSON under /api/) before they are read.
PORTAL_MAX_BODY_BYTES = env_int("PORTAL_MAX_BODY_BYTES", 1024 * 1024)
# "/prefix=bytes,...": another limit for the paths below a prefix (the longest prefix wins),
# e.g. "/api/portal/jobs/array=4194304" (core/body_limits.py).
PORTAL_MAX_BODY_BYTES_BY_PATH = env_bytes_by_prefix("PORTAL_MAX_BODY_BYTES_BY_PATH")
# Django's own check: the largest of them (core.body_limits holds each path to its own).
DATA_UPLOAD_MAX_MEMORY_SIZE = max([PORTAL_MAX_BODY_BYTES, *PORTAL_MAX_BODY_BYTES_BY_PATH.values()])

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # Authorization: Token <key>, looked up by its SHA-256 (accounts/tokens.py).
        "accounts.tokens.ApiTokenAuthentication",
        # gpulab-cli's login certificate, handed over by the TLS front end. Last on purpose:
        # see accounts/certs/authentication.py.
        "accounts.certs.authentication.ClientCertificateAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Refusals, error bodies and descriptions of every operation (core/api/openapi.py).
    "DEFAULT_SCHEMA_CLASS": "core.api.openapi.PortalAutoSchema",
    "DEFAULT_PAGINATION_CLASS": None,
    "EXCEPTION_HANDLER": "core.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Portal API",
    "DESCRIPTION": "GPULab v4.0-compatible job API plus portal endpoints.",
    "VERSION": "4.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Serve Swagger UI and Redoc from drf-spectacular-sidecar's static files: the portal loads
    # nothing from the internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Swagger UI would otherwise ask validator.swagger.io to check the schema.
    # No deep links: Swagger UI puts them inside the operation's button (axe: nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False, "validatorUrl": None},
    # 3.1: the login certificate is a mutualTLS security scheme, which 3.0 cannot name.
    "OAS_VERSION": "3.1.0",
    # OpenPAI's job and task states and execution types: one enum each for every field using it.
    "ENUM_NAME_OVERRIDES": {
        "OpenPaiStateEnum": "gangs.openpai_jobs.PAI_STATES",
        "OpenPaiExecutionTypeEnum": "gangs.api.openpai_serializers.EXECUTION_TYPES",
        # A delivery's method, in the portal's deliveries and in Tapis' delivery targets.
        "DeliveryMethodEnum": ["WEBHOOK", "EMAIL"],
    },
}

# django-q2: the ORM broker needs nothing but the database. Set PORTAL_REDIS_URL to use Redis.
# timeout/retry: django-q2 re-delivers a task that a (dead) cluster took but never acknowledged
# after `retry` seconds, and `retry` must exceed `timeout` or a slow task runs twice. Recovery does
# not wait for that (reconcile re-drives lost launches, stops and halts within
# PORTAL_RECOVERY_GRACE_S, see docs/runtime.md): the queue's retry is the last net, for e-mails.
# 60 s covers every short task (a finish, a tick of 10,000 jobs, a stop's 10 s grace); the long
# ones get their own time limit when fired (core.tasks.TASK_TIMEOUTS: a launch may pull a big
# image) and are claimed per job, so a re-delivery while they still run does nothing.
Q_CLUSTER = {
    "name": "gpuportal",
    "workers": env_int("PORTAL_Q_WORKERS", 4),
    "timeout": 60,
    "retry": 90,
    "max_attempts": 3,
    "orm": "default",
    # Seconds between broker polls when idle: every task hop (tick, launch) waits up to this.
    "poll": float(os.environ.get("PORTAL_Q_POLL_S", "0.05")),
    "catch_up": False,
    "ack_failures": True,
    "save_limit": 1000,
}
if os.environ.get("PORTAL_REDIS_URL"):
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = os.environ["PORTAL_REDIS_URL"]
    # On Redis the queue is named after PORTAL_INSTANCE (as set in the environment, the same on
    # every node; not the per-installation file): portals sharing one Redis keep apart.
    Q_CLUSTER["name"] = os.environ.get("PORTAL_INSTANCE") or "gpuportal"

# "queue": hand tasks to django-q2 (production); "inline": run them right after commit in the
# calling process (single-process demos and integration tests); "record": only remember them
# (unit tests assert what would have been enqueued).
PORTAL_TASK_MODE = os.environ.get("PORTAL_TASK_MODE", "queue")
# The class that runs slaves' containers (clusters.runtime.protocol.Engine), built by
# clusters.services.engine_for. Not read from the environment: a portal runs on Docker engines;
# only the fast tests put another class here (their scripted fake, under tests/support/).
PORTAL_ENGINE_CLASS = "clusters.runtime.engine.DockerEngine"

# --- GPULab identity -----------------------------------------------------------------------
PORTAL_URN_AUTHORITY = os.environ.get("PORTAL_URN_AUTHORITY", "gpuportal.local")
PORTAL_DEPLOYMENT_ENVIRONMENT = os.environ.get("PORTAL_DEPLOYMENT_ENVIRONMENT", "production")
PORTAL_VERSION = "0.1.0"
# The gpulab-cli warns when it is older than this.
PORTAL_LATEST_CLIENT_VERSION = "3.11.12"

# --- Job defaults (GPULab's) ----------------------------------------------------------------
PORTAL_DEFAULT_MIN_DURATION = os.environ.get("PORTAL_DEFAULT_MIN_DURATION", "1 week")
PORTAL_DEFAULT_MAX_DURATION = os.environ.get("PORTAL_DEFAULT_MAX_DURATION", "2 weeks")
# Most jobs one array submission (POST /api/portal/jobs/array, manage.py submit_jobs) may carry.
PORTAL_ARRAY_MAX_JOBS = env_int("PORTAL_ARRAY_MAX_JOBS", 1000)
# Bounds on what one job request may carry, checked at submit before anything is expanded or
# written (jobs/spec/checks.py; docs/configuration.md "Request bounds").
PORTAL_MAX_PORTS_PER_JOB = env_count("PORTAL_MAX_PORTS_PER_JOB", 64)
PORTAL_MAX_PORTS_PER_GANG = env_count("PORTAL_MAX_PORTS_PER_GANG", 1024)
PORTAL_MAX_GANG_TASKS = env_count("PORTAL_MAX_GANG_TASKS", 256)
PORTAL_MAX_COMMAND_CHARS = env_count("PORTAL_MAX_COMMAND_CHARS", 32768)
PORTAL_MAX_COMMAND_WORDS = env_count("PORTAL_MAX_COMMAND_WORDS", 4096)
PORTAL_MAX_EMAIL_RECIPIENTS = env_count("PORTAL_MAX_EMAIL_RECIPIENTS", 20)

# --- Scheduler -------------------------------------------------------------------------------
PORTAL_USAGE_HALF_LIFE_S = env_int("PORTAL_USAGE_HALF_LIFE_S", 7 * 86400)
PORTAL_USAGE_WEIGHTS = {"gpu": 1.0, "cpu": 0.05, "mem_gb": 0.01}
# Placement score plugins (jobs/scheduler/placement.py) and their weights, added up in this order.
PORTAL_SCHEDULER_SCORER_WEIGHTS = {
    "packing": 1.0,
    "private_preference": 2.0,
    "reservation_affinity": 2.0,
}
PORTAL_PRIVATE_GUEST_MAX_MIN_DURATION_S = env_int("PORTAL_PRIVATE_GUEST_MAX_MIN_DURATION_S", 3600)
PORTAL_USER_MAX_RUNNING_JOBS = env_int("PORTAL_USER_MAX_RUNNING_JOBS", 0) or None
PORTAL_USER_MAX_GPUS = env_int("PORTAL_USER_MAX_GPUS", 0) or None
# Quotas (docs/quotas.md): the limits of a project or a user without a row of its own, as JSON:
# {"project": {"gpu_hours_hard": 1000}, "user": {"gpus_hard": 4}}; `manage.py check` checks it.
PORTAL_QUOTA_DEFAULTS = __import__("json").loads(os.environ.get("PORTAL_QUOTA_DEFAULTS") or "{}")
PORTAL_TICK_INTERVAL_S = env_int("PORTAL_TICK_INTERVAL_S", 60)
# A queued job's start estimate (and advice) is recomputed when older than this (jobs/estimates.py).
PORTAL_ESTIMATE_TTL_S = env_int("PORTAL_ESTIMATE_TTL_S", 60)
# A tick lease whose holder has not renewed it for this long (the holder beats every fifth of
# it) belongs to a killed worker and is taken over.
PORTAL_TICK_LEASE_S = env_int("PORTAL_TICK_LEASE_S", 15)
# Seconds a process (the q cluster, run_portal) may take to stop gracefully after SIGTERM;
# then its children still running are killed (portal/stopping.py). Below the units' 20 s.
PORTAL_STOP_DEADLINE_S = env_int("PORTAL_STOP_DEADLINE_S", 12)

# --- Runtime --------------------------------------------------------------------------------
PORTAL_HALT_GRACE_S = env_int("PORTAL_HALT_GRACE_S", 15)
PORTAL_STOP_GRACE_S = env_int("PORTAL_STOP_GRACE_S", 10)
PORTAL_SLAVE_LOST_GRACE_S = env_int("PORTAL_SLAVE_LOST_GRACE_S", 600)
# Runtime work (launch, stop, halt) that nobody has claimed, or whose worker stopped beating
# (every fifth of this), for this long is re-driven by reconcile.
PORTAL_RECOVERY_GRACE_S = env_int("PORTAL_RECOVERY_GRACE_S", 15)
# How long one launch task may run (an image pull included) before django-q2 stops it.
PORTAL_LAUNCH_TIMEOUT_S = env_int("PORTAL_LAUNCH_TIMEOUT_S", 1800)
# An interactive job that had running jobs halted for it fails when it has not started this
# long after the first halt: the halt grace period plus time to stop, free and re-tick.
PORTAL_INTERACTIVE_HALT_WAIT_S = env_int("PORTAL_INTERACTIVE_HALT_WAIT_S", PORTAL_HALT_GRACE_S + 45)
PORTAL_LOCAL_DOCKER_URL = os.environ.get("PORTAL_LOCAL_DOCKER_URL", "unix:///var/run/docker.sock")
PORTAL_LOG_ARCHIVE_DIR = Path(os.environ.get("PORTAL_LOG_ARCHIVE_DIR", VAR_DIR / "logs"))
# Each job's archived outputs (jobs/execution/outputs.py), private to the portal's user.
PORTAL_JOB_ARCHIVE_DIR = Path(os.environ.get("PORTAL_JOB_ARCHIVE_DIR", VAR_DIR / "archive"))
# Resource samples of running jobs (jobs/execution/metrics.py): how often, how many kept per job, and
# the idle-GPU review (GPUs below the threshold for the whole window are flagged, never stopped).
PORTAL_METRICS_INTERVAL_S = env_int("PORTAL_METRICS_INTERVAL_S", 15)
PORTAL_METRICS_KEEP = env_int("PORTAL_METRICS_KEEP", 2000)
PORTAL_GPU_IDLE_PERCENT = env_int("PORTAL_GPU_IDLE_PERCENT", 5)
PORTAL_GPU_IDLE_WINDOW_S = env_int("PORTAL_GPU_IDLE_WINDOW_S", 1800)
# A job's output folder as copied into the archive when it ends (jobs/execution/outputs.py): at most this
# many bytes and entries (the copy stops there, with a warning on the job); downloads (one
# file or a zip) above PORTAL_OUTPUT_DOWNLOAD_MAX_BYTES are refused; outputs are removed this
# many days after the job ended (0: kept).
PORTAL_OUTPUT_MAX_BYTES = env_int("PORTAL_OUTPUT_MAX_BYTES", 1024**3)
PORTAL_OUTPUT_MAX_FILES = env_int("PORTAL_OUTPUT_MAX_FILES", 10000)
PORTAL_OUTPUT_DOWNLOAD_MAX_BYTES = env_int("PORTAL_OUTPUT_DOWNLOAD_MAX_BYTES", 1024**3)
PORTAL_OUTPUT_RETENTION_DAYS = env_int("PORTAL_OUTPUT_RETENTION_DAYS", 30)
# Hosts job webhooks (request.notifications) may call: "host", "host:port", "*.domain" or "*"
# (any public host). A private, loopback or link-local address (literal, or what a name
# resolves to at delivery) only when listed by itself. Empty: no webhooks.
PORTAL_WEBHOOK_ALLOWED_HOSTS = env_list("PORTAL_WEBHOOK_ALLOWED_HOSTS", [])
# Seconds to wait before each retry of a failed webhook delivery (one entry per retry).
PORTAL_WEBHOOK_RETRY_DELAYS_S = [
    int(x) for x in env_list("PORTAL_WEBHOOK_RETRY_DELAYS_S", ["10", "60", "300"])
]
PORTAL_WEBHOOK_TIMEOUT_S = env_int("PORTAL_WEBHOOK_TIMEOUT_S", 10)
PORTAL_STORAGE_BASE = Path(os.environ.get("PORTAL_STORAGE_BASE", VAR_DIR / "storage"))
# Other names for storage roots the slaves offer ("alias=root"): GPULab's documentation mounts
# the project's share as /project_ghent, so its examples run as they are written.
PORTAL_STORAGE_ALIASES = env_list("PORTAL_STORAGE_ALIASES", ["/project_ghent=/project"])
# Which portal owns a container (its label): an id made once per installation and kept in
# var/instance-id, so two portals sharing a Docker engine never touch each other's containers.
# (Containers started before the id existed carry "gpuportal": see jobs/execution/reconcile.py.)
PORTAL_INSTANCE = os.environ.get("PORTAL_INSTANCE") or installation.kept_value(
    VAR_DIR / "instance-id", installation.new_instance_id
)
# Run with all GPUs on slaves that have the NVIDIA runtime, to list them (must be pullable or
# present on the slave: air-gapped sites point this at their own registry).
PORTAL_GPU_PROBE_IMAGE = os.environ.get(
    "PORTAL_GPU_PROBE_IMAGE", "nvidia/cuda:12.4.1-base-ubuntu22.04"
)
# Job images may name a registry on localhost or a loopback, link-local or private address only
# when it is listed here ("host" or "host:port"): the slaves' Docker pulls them, and must not be
# pointed at internal services by a job. Example: "localhost:5000,10.0.0.5:5000".
PORTAL_ALLOWED_PRIVATE_REGISTRIES = env_list("PORTAL_ALLOWED_PRIVATE_REGISTRIES", [])
# Tapis-style file inputs (jobs/execution/staging.py): hosts whose http(s) URLs a job may stage from
# (none by default), and the most bytes of input one job may stage.
PORTAL_INPUT_ALLOWED_HOSTS = env_list("PORTAL_INPUT_ALLOWED_HOSTS", [])
PORTAL_INPUT_MAX_BYTES = env_int("PORTAL_INPUT_MAX_BYTES", 1024**3)
# A slave's engine over tcp:// without TLS client certificates lets anyone reaching the port
# run root containers on that host: refused (admin, add_slave, slave_register) unless allowed.
PORTAL_ALLOW_INSECURE_TCP = env_bool("PORTAL_ALLOW_INSECURE_TCP", False)

# Fixed host ports a job may publish: any port but the refused ones (privileged, Docker's, the
# portal's and its services'; clusters/runtime/spec.py says which is which), only on these
# addresses (hostIp). A site may narrow them to a range ("20000-29999"; empty: no range). Ports
# a site listed under the former name PORTAL_RESERVED_HOST_PORTS stay refused.
PORTAL_REFUSED_HOST_PORTS = env_list(
    "PORTAL_REFUSED_HOST_PORTS",
    ["1-1023", "2222", "2375-2377", "5432", "6379", "8000", "8001", "8443"],
) + env_list("PORTAL_RESERVED_HOST_PORTS", [])
PORTAL_HOST_PORT_RANGE = os.environ.get("PORTAL_HOST_PORT_RANGE", "")
# Where the portal picks host ports itself (the tasks of OpenPAI jobs), below the ephemeral
# ports Docker picks random ones from.
PORTAL_AUTO_HOST_PORT_RANGE = os.environ.get("PORTAL_AUTO_HOST_PORT_RANGE", "20000-29999")
# OpenPAI jobEnvs.isDebug: seconds a failed task's container is kept for inspection (gangs/debug.py).
PORTAL_OPENPAI_DEBUG_KEEP_S = env_int("PORTAL_OPENPAI_DEBUG_KEEP_S", 3600)
PORTAL_HOST_PORT_ADDRESSES = env_list("PORTAL_HOST_PORT_ADDRESSES", ["0.0.0.0", "::"])

# --- Certificates for gpulab-cli ------------------------------------------------------------
PORTAL_CA_DIR = Path(os.environ.get("PORTAL_CA_DIR", VAR_DIR / "ca"))
PORTAL_CERT_VALID_DAYS = env_int("PORTAL_CERT_VALID_DAYS", 90)
# Only requests from these addresses may hand us a verified client certificate in a header,
# and only together with the front end's shared secret (docs/tls-frontend.md): the secret from
# PORTAL_FRONTEND_SECRET, else the file PORTAL_FRONTEND_SECRET_FILE (scripts/tls-frontend.sh
# writes it), read when needed. With neither, certificate headers are ignored.
PORTAL_TRUSTED_PROXIES = env_list("PORTAL_TRUSTED_PROXIES", ["127.0.0.1", "::1"])
PORTAL_CLIENT_CERT_HEADER = "HTTP_X_SSL_CLIENT_CERT"
PORTAL_FRONTEND_SECRET = os.environ.get("PORTAL_FRONTEND_SECRET", "")
PORTAL_FRONTEND_SECRET_FILE = Path(
    os.environ.get("PORTAL_FRONTEND_SECRET_FILE", VAR_DIR / "tls" / "frontend-secret")
)
PORTAL_FRONTEND_SECRET_HEADER = "HTTP_X_PORTAL_FRONTEND_SECRET"

# --- Sign-in with the lab's identity (docs/sign-in.md) ------------------------------------
# Both off by default (local accounts only). OpenID Connect: on when PORTAL_OIDC_ISSUER is set;
# its endpoints come from the issuer's discovery document.
PORTAL_OIDC_ISSUER = os.environ.get("PORTAL_OIDC_ISSUER", "")
PORTAL_OIDC_CLIENT_ID = os.environ.get("PORTAL_OIDC_CLIENT_ID", "")
PORTAL_OIDC_CLIENT_SECRET = os.environ.get("PORTAL_OIDC_CLIENT_SECRET", "")
PORTAL_OIDC_SCOPES = os.environ.get("PORTAL_OIDC_SCOPES", "openid email profile offline_access")
PORTAL_OIDC_SIGN_ALGO = os.environ.get("PORTAL_OIDC_SIGN_ALGO", "RS256")
PORTAL_OIDC_USERNAME_CLAIM = os.environ.get("PORTAL_OIDC_USERNAME_CLAIM", "preferred_username")
PORTAL_OIDC_GROUPS_CLAIM = os.environ.get("PORTAL_OIDC_GROUPS_CLAIM", "groups")
PORTAL_OIDC_LABEL = os.environ.get("PORTAL_OIDC_LABEL", "your organisation")
PORTAL_OIDC_CA_FILE = os.environ.get("PORTAL_OIDC_CA_FILE", "")
# LDAP / Active Directory: on when PORTAL_LDAP_URL is set.
PORTAL_LDAP_URL = os.environ.get("PORTAL_LDAP_URL", "")
PORTAL_LDAP_BIND_DN = os.environ.get("PORTAL_LDAP_BIND_DN", "")
PORTAL_LDAP_BIND_PASSWORD = os.environ.get("PORTAL_LDAP_BIND_PASSWORD", "")
PORTAL_LDAP_START_TLS = env_bool("PORTAL_LDAP_START_TLS", False)
PORTAL_LDAP_CA_FILE = os.environ.get("PORTAL_LDAP_CA_FILE", "")
PORTAL_LDAP_USER_BASE = os.environ.get("PORTAL_LDAP_USER_BASE", "")
PORTAL_LDAP_USER_FILTER = os.environ.get("PORTAL_LDAP_USER_FILTER", "(uid=%(user)s)")
PORTAL_LDAP_GROUP_BASE = os.environ.get("PORTAL_LDAP_GROUP_BASE", "")
PORTAL_LDAP_GROUP_TYPE = os.environ.get("PORTAL_LDAP_GROUP_TYPE", "groupOfNames")
PORTAL_LDAP_REQUIRE_GROUP = os.environ.get("PORTAL_LDAP_REQUIRE_GROUP", "")
# Directory groups -> projects and roles, applied at each sign-in and sync (JSON; `manage.py
# check` validates it): {"cn=nlp,ou=groups,dc=lab,dc=example": {"project": "nlp", "role": "member"}}
PORTAL_SIGNIN_GROUP_MAP = os.environ.get("PORTAL_SIGNIN_GROUP_MAP", "")

# --- SSH gateway into running jobs (docs/ssh.md) ---------------------------------------------
# PORTAL_SSH_HOST/PORT are what clients are told (the job's state.resources.sshHost/sshPort);
# the gateway listens on PORTAL_SSH_BIND:PORTAL_SSH_PORT. Its host key is made once.
PORTAL_SSH_HOST = os.environ.get("PORTAL_SSH_HOST", "127.0.0.1")
PORTAL_SSH_PORT = env_int("PORTAL_SSH_PORT", 2222)
PORTAL_SSH_BIND = os.environ.get("PORTAL_SSH_BIND", "0.0.0.0")
PORTAL_SSH_HOST_KEY = Path(os.environ.get("PORTAL_SSH_HOST_KEY", VAR_DIR / "ssh" / "host_key"))
# How often open sessions re-check that their job still runs (seconds).
PORTAL_SSH_POLL_S = float(os.environ.get("PORTAL_SSH_POLL_S", "2"))

# --- The session proxy (docs/sessions.md "The proxy") -----------------------------------------
# Sessions are served on their own origin, never the portal's (`manage.py check` refuses the
# portal's): an app's JavaScript cannot read portal pages or post to the portal as its viewer.
# PORTAL_SESSION_PROXY_URL is the public base browsers are sent to; the proxy listens on BIND.
PORTAL_SESSION_PROXY_URL = os.environ.get(
    "PORTAL_SESSION_PROXY_URL", "http://127.0.0.1:8001"
).rstrip("/")
PORTAL_SESSION_PROXY_BIND = os.environ.get("PORTAL_SESSION_PROXY_BIND", "127.0.0.1:8001")

# --- Interactive sessions' lifecycle (docs/sessions.md "Policy and lifecycle") ---------------
# Culled after this long without activity through the proxy (and no GPU use where sampled);
# warned this long before a cull or the time box's end; "Extend" adds EXTEND seconds at most
# MAX_EXTENDS times and never past MAX_SECONDS in all (GPULab's JupyterHub: 72 h, 2 GPUs).
PORTAL_SESSION_IDLE_SECONDS = env_count("PORTAL_SESSION_IDLE_SECONDS", 3600)
PORTAL_SESSION_WARN_SECONDS = env_int("PORTAL_SESSION_WARN_SECONDS", 600)
PORTAL_SESSION_EXTEND_SECONDS = env_count("PORTAL_SESSION_EXTEND_SECONDS", 7200)
PORTAL_SESSION_MAX_EXTENDS = env_int("PORTAL_SESSION_MAX_EXTENDS", 3)
PORTAL_SESSION_MAX_SECONDS = env_count("PORTAL_SESSION_MAX_SECONDS", 259200)
PORTAL_SESSION_MAX_GPUS = env_int("PORTAL_SESSION_MAX_GPUS", 2)

# --- E-mail (job notifications: request.extra.emailOn*) ---------------------------------
EMAIL_BACKEND = os.environ.get(
    "PORTAL_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend"
)
EMAIL_HOST = os.environ.get("PORTAL_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("PORTAL_EMAIL_PORT", 25)
DEFAULT_FROM_EMAIL = os.environ.get("PORTAL_EMAIL_FROM", "gpuportal@localhost")
# The bootstrap admin's address: one gpulab-cli accepts (not @localhost, .local or .test).
PORTAL_ADMIN_EMAIL = os.environ.get("PORTAL_ADMIN_EMAIL", "admin@example.org")
# Links in e-mails point here (empty: no link).
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "http://127.0.0.1:8000")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("PORTAL_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
