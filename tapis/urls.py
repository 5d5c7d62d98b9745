"""App pages under /apps/ and the job page's resubmit button."""

from django.urls import path

from tapis import share_views, views

app_name = "apps"

urlpatterns = [
    path("", views.app_list, name="list"),
    path("jobs/<uuid:uuid>/resubmit/", views.job_resubmit_view, name="job-resubmit"),
    path("<str:app_id>/<str:version>/", views.app_detail, name="detail"),
    path("<str:app_id>/<str:version>/check", views.app_check, name="check"),
    path("<str:app_id>/<str:version>/shares/", share_views.app_share_add, name="share-add"),
    path(
        "<str:app_id>/<str:version>/shares/<int:share_id>/revoke/",
        share_views.app_share_remove,
        name="share-revoke",
    ),
]
