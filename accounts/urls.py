"""Account pages: profile (API token, SSH keys), login certificates for gpulab-cli, and the
OpenID Connect sign-in's two stops (404 unless PORTAL_OIDC_ISSUER is set)."""

from django.urls import include, path

from accounts import timezone_views, views
from accounts.directory.oidc_backend import SignInCallbackView, SignInStartView

urlpatterns = [
    path("profile/", views.profile, name="profile"),
    path("profile/token/", views.token_rotate, name="token-rotate"),
    path("profile/time-zone/", timezone_views.profile_time_zone, name="profile-time-zone"),
    # Login certificates for gpulab-cli (download, revoke).
    path("certificates/", include("accounts.certs.urls")),
    # Sign-in with the lab's OpenID Connect provider (docs/sign-in.md): the provider must know
    # <portal>/oidc/callback/ as the client's redirect URI.
    path("oidc/authenticate/", SignInStartView.as_view(), name="oidc-start"),
    path("oidc/callback/", SignInCallbackView.as_view(), name="oidc-callback"),
]
