"""The gang's page action: resubmit a multi-task OpenPAI job as a copy, from any of its tasks'
pages (the URL it had under jobs/, kept)."""

from django.urls import path

from gangs import views

app_name = "gangs"

urlpatterns = [
    path("jobs/<uuid:uuid>/gang/resubmit/", views.job_gang_resubmit, name="resubmit"),
]
