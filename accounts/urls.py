"""Account pages: profile (API token, SSH keys), login certificates for gpulab-cli."""

from django.urls import include, path

from accounts import timezone_views, views

urlpatterns = [
    path("profile/", views.profile, name="profile"),
    path("profile/token/", views.token_rotate, name="token-rotate"),
    path("profile/time-zone/", timezone_views.profile_time_zone, name="profile-time-zone"),
    # Login certificates for gpulab-cli (download, revoke).
    path("certificates/", include("accounts.certs.urls")),
]
