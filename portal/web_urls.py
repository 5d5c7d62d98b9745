"""Browser pages."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from clusters import views as cluster_views
from jobs import views as job_views
from portal import timezone_views, views
from reservations import views as reservation_views

ACTIONS = "cancel|halt|hold|release|delete"

job_patterns = [
    path("", job_views.job_list, name="list"),
    path("new/", job_views.job_create, name="create"),
    path("new/convert", job_views.job_convert, name="convert"),
    path("bulk/", job_views.job_bulk, name="bulk"),
    path("<uuid:uuid>/", job_views.job_detail, name="detail"),
    path("<uuid:uuid>/live/", job_views.job_live, name="live"),
    path("<uuid:uuid>/log/", job_views.job_log, name="log"),
    path("<uuid:uuid>/log.txt", job_views.job_log_raw, name="log-raw"),
    *[
        path(f"<uuid:uuid>/{name}/", job_views.job_action, {"action": name}, name=name)
        for name in ACTIONS.split("|")
    ],
]

live_patterns = [
    path("clusters/", cluster_views.cluster_list, name="clusters"),
    path("slaves/", cluster_views.slave_list, name="slaves"),
]

reservation_patterns = [
    path("", reservation_views.reservation_list, name="list"),
    path("new/", reservation_views.reservation_create, name="create"),
    path("<uuid:uuid>/", reservation_views.reservation_detail, name="detail"),
    path("<uuid:uuid>/edit/", reservation_views.reservation_edit, name="edit"),
    path("<uuid:uuid>/delete/", reservation_views.reservation_delete, name="delete"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", views.profile, name="profile"),
    path("profile/token/", views.token_rotate, name="token-rotate"),
    path("profile/time-zone/", timezone_views.profile_time_zone, name="profile-time-zone"),
    path("usage/", views.usage, name="usage"),
    path("jobs/", include((job_patterns, "jobs"))),
    path("live/", include((live_patterns, "live"))),
    path("reservations/", include((reservation_patterns, "reservations"))),
]
