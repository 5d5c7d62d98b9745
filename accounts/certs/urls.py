"""Login certificate pages for gpulab-cli (list, download a new login PEM, revoke)."""

from django.urls import path

from accounts.certs import views

app_name = "certs"

urlpatterns = [
    path("", views.certificate_list, name="list"),
    path("new/", views.certificate_download, name="download"),
    path("<int:pk>/revoke/", views.certificate_revoke, name="revoke"),
]
