"""Settings of the test OpenID Connect provider (django-oauth-toolkit, OIDC on, RS256).

Its state (SQLite, the signing key) lives in OIDC_PROVIDER_DIR, which scripts/oidc-provider.sh
makes private under var/. Test-only: a fixed secret key, fast password hashes, loopback only.
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATE = Path(os.environ["OIDC_PROVIDER_DIR"])

SECRET_KEY = "test-oidc-provider-only-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.support.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": STATE / "db.sqlite3"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/accounts/login/"
# Two providers' worth of cookies on 127.0.0.1 (the portal's and this one): names apart.
SESSION_COOKIE_NAME = "idp_session"
CSRF_COOKIE_NAME = "idp_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": (STATE / "signing.key").read_text(),
    "OAUTH2_VALIDATOR_CLASS": "tests.support.oidc_provider.claims.LabClaims",
    "SCOPES": {
        "openid": "OpenID Connect",
        "email": "e-mail address",
        "profile": "name and user name",
        "groups": "group names",
        "offline_access": "refresh tokens",
    },
    # The portal's callback on http://127.0.0.1 at any port (RFC 8252 loopback redirects).
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": 300,
}
