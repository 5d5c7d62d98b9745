"""The sessions pages (mounted at ``/sessions/``): the list with "New session", the sign-in
hand-off to the session proxy, Extend and Stop, and opening a job's declared web port."""

from django.urls import path

from interactive import views

app_name = "interactive"

urlpatterns = [
    path("", views.sessions_page, name="list"),
    path("new", views.session_new, name="new"),
    path("<str:key>/open", views.session_open, name="open"),
    path("<str:key>/extend", views.session_extend_view, name="extend"),
    path("<str:key>/stop", views.session_stop_view, name="stop"),
    # Any job's declared web port (interactive/web_ports.py).
    path("jobs/<uuid:job_uuid>/ports/<int:port>", views.job_port_open_view, name="job-port"),
]
