"""Settings for GPU Portal.

Everything has an embedded default so that a fresh clone runs with no configuration: SQLite in
``var/``, django-q2's ORM broker, and the local Docker engine as slave ``local``. Production
overrides come from ``PORTAL_*`` environment variables (see docs/configuration.md).
"""

import os
from pathlib import Path

from portal.envconfig import database_from_url, env_bool, env_int, env_list

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))

SECRET_KEY = os.environ.get("PORTAL_SECRET_KEY", "insecure-dev-key-change-me-in-production")
DEBUG = env_bool("PORTAL_DEBUG", True)
ALLOWED_HOSTS = env_list("PORTAL_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("PORTAL_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    # Swagger UI / Redoc files served locally for /api/docs/ (no CDN).
    "drf_spectacular_sidecar",
    "django_q",
    "crispy_forms",
    "crispy_bootstrap5",
    "portal",
    "clusters",
    "reservations",
    "jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads a cookie, a parameter or the body into a query: NUL bytes and
    # unpaired surrogates get a 400 naming the parameter instead of a database error (500).
    "portal.text_guard.TextGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
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

DATABASES = {
    "default": database_from_url(
        os.environ.get("PORTAL_DATABASE_URL", ""),
        sqlite_path=VAR_DIR / "portal.sqlite3",
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

CRISPY_ALLOWED_TEMPLATE_PACKS = "bootstrap5"
CRISPY_TEMPLATE_PACK = "bootstrap5"

# Request bodies above this are refused with 413 (API) / 400 (forms) before they are parsed.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("PORTAL_MAX_BODY_BYTES", 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
        # gpulab-cli's login certificate, handed over by the TLS front end. Last on purpose:
        # see portal/certs/authentication.py.
        "portal.certs.authentication.ClientCertificateAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": None,
    "EXCEPTION_HANDLER": "portal.api_errors.exception_handler",
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
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}

# django-q2: the ORM broker needs nothing but the database. Set PORTAL_REDIS_URL to use Redis.
Q_CLUSTER = {
    "name": "gpuportal",
    "workers": env_int("PORTAL_Q_WORKERS", 4),
    "timeout": 300,
    "retry": 360,
    "max_attempts": 3,
    "orm": "default",
    "poll": 0.2,
    "catch_up": False,
    "ack_failures": True,
    "save_limit": 1000,
}
if os.environ.get("PORTAL_REDIS_URL"):
    Q_CLUSTER.pop("orm")
    Q_CLUSTER["redis"] = os.environ["PORTAL_REDIS_URL"]

# "queue": hand tasks to django-q2 (production); "inline": run them right after commit in the
# calling process (single-process demos and integration tests); "record": only remember them
# (unit tests assert what would have been enqueued).
PORTAL_TASK_MODE = os.environ.get("PORTAL_TASK_MODE", "queue")

# --- GPULab identity -----------------------------------------------------------------------
PORTAL_URN_AUTHORITY = os.environ.get("PORTAL_URN_AUTHORITY", "gpuportal.local")
PORTAL_DEPLOYMENT_ENVIRONMENT = os.environ.get("PORTAL_DEPLOYMENT_ENVIRONMENT", "production")
PORTAL_VERSION = "0.1.0"
# The gpulab-cli warns when it is older than this.
PORTAL_LATEST_CLIENT_VERSION = "3.11.12"

# --- Job defaults (GPULab's) ----------------------------------------------------------------
PORTAL_DEFAULT_MIN_DURATION = os.environ.get("PORTAL_DEFAULT_MIN_DURATION", "1 week")
PORTAL_DEFAULT_MAX_DURATION = os.environ.get("PORTAL_DEFAULT_MAX_DURATION", "2 weeks")

# --- Scheduler -------------------------------------------------------------------------------
PORTAL_USAGE_HALF_LIFE_S = env_int("PORTAL_USAGE_HALF_LIFE_S", 7 * 86400)
PORTAL_USAGE_WEIGHTS = {"gpu": 1.0, "cpu": 0.05, "mem_gb": 0.01}
PORTAL_PRIVATE_GUEST_MAX_MIN_DURATION_S = env_int("PORTAL_PRIVATE_GUEST_MAX_MIN_DURATION_S", 3600)
PORTAL_USER_MAX_RUNNING_JOBS = env_int("PORTAL_USER_MAX_RUNNING_JOBS", 0) or None
PORTAL_USER_MAX_GPUS = env_int("PORTAL_USER_MAX_GPUS", 0) or None
PORTAL_TICK_INTERVAL_S = env_int("PORTAL_TICK_INTERVAL_S", 60)
# A tick lease older than this is considered abandoned by a crashed worker.
PORTAL_TICK_LEASE_S = env_int("PORTAL_TICK_LEASE_S", 120)

# --- Runtime --------------------------------------------------------------------------------
PORTAL_HALT_GRACE_S = env_int("PORTAL_HALT_GRACE_S", 15)
PORTAL_STOP_GRACE_S = env_int("PORTAL_STOP_GRACE_S", 10)
PORTAL_SLAVE_LOST_GRACE_S = env_int("PORTAL_SLAVE_LOST_GRACE_S", 600)
PORTAL_LOCAL_DOCKER_URL = os.environ.get("PORTAL_LOCAL_DOCKER_URL", "unix:///var/run/docker.sock")
PORTAL_LOG_ARCHIVE_DIR = Path(os.environ.get("PORTAL_LOG_ARCHIVE_DIR", VAR_DIR / "logs"))
PORTAL_STORAGE_BASE = Path(os.environ.get("PORTAL_STORAGE_BASE", VAR_DIR / "storage"))
PORTAL_INSTANCE = os.environ.get("PORTAL_INSTANCE", "gpuportal")
# Run with all GPUs on slaves that have the NVIDIA runtime, to list them (must be pullable or
# present on the slave: air-gapped sites point this at their own registry).
PORTAL_GPU_PROBE_IMAGE = os.environ.get(
    "PORTAL_GPU_PROBE_IMAGE", "nvidia/cuda:12.4.1-base-ubuntu22.04"
)
# Job images may name a registry on localhost or a loopback, link-local or private address only
# when it is listed here ("host" or "host:port"): the slaves' Docker pulls them, and must not be
# pointed at internal services by a job. Example: "localhost:5000,10.0.0.5:5000".
PORTAL_ALLOWED_PRIVATE_REGISTRIES = env_list("PORTAL_ALLOWED_PRIVATE_REGISTRIES", [])

# Fixed host ports a job may publish: inside this range (below the ephemeral ports Docker picks
# random ones from), never one of the reserved ports, only on these addresses (hostIp).
PORTAL_HOST_PORT_RANGE = os.environ.get("PORTAL_HOST_PORT_RANGE", "20000-29999")
PORTAL_RESERVED_HOST_PORTS = env_list(
    "PORTAL_RESERVED_HOST_PORTS", ["22", "2375", "2376", "2377", "8000", "8443"]
)
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

# --- SSH gateway into running jobs (docs/ssh.md) ---------------------------------------------
# PORTAL_SSH_HOST/PORT are what clients are told (the job's state.resources.sshHost/sshPort);
# the gateway listens on PORTAL_SSH_BIND:PORTAL_SSH_PORT. Its host key is made once.
PORTAL_SSH_HOST = os.environ.get("PORTAL_SSH_HOST", "127.0.0.1")
PORTAL_SSH_PORT = env_int("PORTAL_SSH_PORT", 2222)
PORTAL_SSH_BIND = os.environ.get("PORTAL_SSH_BIND", "0.0.0.0")
PORTAL_SSH_HOST_KEY = Path(os.environ.get("PORTAL_SSH_HOST_KEY", VAR_DIR / "ssh" / "host_key"))
# How often open sessions re-check that their job still runs (seconds).
PORTAL_SSH_POLL_S = float(os.environ.get("PORTAL_SSH_POLL_S", "2"))

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
