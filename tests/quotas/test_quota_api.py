"""Quotas over REST: admins set them, users read theirs and their standing (issue 29 items 1, 3)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from quotas.models import Quota
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


def client_of(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_admins_set_limits_users_read_theirs(admin_user, member, project, outsider):
    admin = client_of(admin_user)
    created = admin.post(
        "/api/portal/quotas",
        {"project": "vision", "gpu_hours_hard": 100, "gpu_hours_soft": 80, "gpus_hard": 4},
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["scope"] == "project" and body["gpu_hours_hard"] == 100
    quota_id = body["id"]
    # soft above hard, an unknown project, a second row for the same scope: named.
    bad = admin.patch(f"/api/portal/quotas/{quota_id}", {"gpu_hours_soft": 120}, format="json")
    assert bad.status_code == 400
    assert "gpu_hours_soft: must be at most gpu_hours_hard (100)" in bad.json()["errors"]
    assert admin.post("/api/portal/quotas", {"project": "nope"}, format="json").status_code == 400
    twice = admin.post("/api/portal/quotas", {"project": "vision", "gpus_hard": 1}, format="json")
    assert twice.status_code == 400
    # Members see their project's row; others do not; nobody but admins writes.
    assert [q["id"] for q in client_of(member).get("/api/portal/quotas").json()] == [quota_id]
    assert client_of(outsider).get("/api/portal/quotas").json() == []
    assert client_of(outsider).get(f"/api/portal/quotas/{quota_id}").status_code == 404
    denied = client_of(member).patch(
        f"/api/portal/quotas/{quota_id}", {"gpus_hard": 9}, format="json"
    )
    assert denied.status_code == 403
    assert admin.delete(f"/api/portal/quotas/{quota_id}").status_code == 204
    assert not Quota.objects.exists()


def test_standing_before_submit(member, project, slave):
    Quota.objects.create(project=project, gpu_hours_hard=10, gpus_hard=4)
    Quota.objects.create(user=member, jobs_hard=3)
    now = timezone.now()
    started = max(
        now.replace(day=1, hour=0, minute=0, second=0, microsecond=0), now - timedelta(hours=3)
    )
    make_job(
        owner=member, project=project, status="FINISHED", slave=slave, gpus=2,
        started=started, ended=started + timedelta(hours=1),
    )  # fmt: skip
    client = client_of(member)
    answer = client.get(
        "/api/portal/quotas/standing",
        {"project": "vision", "gpus": 1, "max_duration": "8 hours"},
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    by_scope = {row["scope"]: row for row in body["limits"]}
    assert by_scope["project"]["gpu_hours"]["used"] == pytest.approx(2.0, abs=0.01)
    assert by_scope["project"]["gpu_hours"]["hard"] == 10
    assert by_scope["user"]["jobs"] == {"hard": 3, "soft": None, "running": 0}
    assert body["job"]["may_use"]["gpu_hours"] == 8
    assert body["job"]["fits_now"] is True and body["job"]["reason"] is None
    too_long = client.get(
        "/api/portal/quotas/standing", {"project": "vision", "gpus": 1, "max_duration": "9 hours"}
    ).json()["job"]
    assert too_long["fits_ever"] is True and too_long["fits_now"] is False
    assert too_long["reason"].startswith("project vision has used 2 of 10 GPU-hours this month")
    never = client.get(
        "/api/portal/quotas/standing", {"project": "vision", "gpus": 5, "max_duration": "1 hour"}
    ).json()["job"]
    assert never["fits_ever"] is False
    assert never["reason"] == "project vision may hold at most 4 GPUs at once, this job asks for 5"
    assert client.get("/api/portal/quotas/standing", {"project": "other"}).status_code == 404
    assert (
        client.get("/api/portal/quotas/standing", {"project": "vision", "gpus": "x"}).status_code
        == 400
    )
