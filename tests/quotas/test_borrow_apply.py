"""Borrowing from the database and back (issue 29 item 2): a job above a soft level starts on an
idle GPU marked borrowed (on the Job row, in the portal's explain JSON, on its page), the next
snapshot reads the mark, and an in-limit job then halts it first; the standing says so before
submit."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from jobs.models import Job
from jobs.scheduler import run_cycle
from jobs.scheduler_bridge.snapshot import build_snapshot
from jobs.scheduler_bridge.tick import tick_once
from quotas.models import Quota
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


def test_a_job_above_the_soft_level_starts_borrowed_and_is_halted_first(
    project, other_project, member, outsider, slave, client
):
    Quota.objects.create(user=member, gpus_hard=4, gpus_soft=1)
    long_ago = timezone.now() - timedelta(hours=3)
    make_job(
        owner=member, project=project, status="RUNNING", slave=slave, gpus=1, gpu_ids=[0],
        started=long_ago,
    )  # fmt: skip
    job = make_job(owner=member, project=project, gpus=1)
    summary = tick_once()
    assert summary["started"] == 1
    job.refresh_from_db()
    assert job.status == "ASSIGNED" and job.borrowed and job.gpu_ids == [1]
    # The portal's own JSON and the job page show it.
    api = APIClient()
    api.force_authenticate(member)
    assert api.get(f"/api/portal/jobs/{job.uuid}/explain/").json()["borrowed"] is True
    client.force_login(member)
    page = client.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="job-borrowed"' in page
    # Running past its minDuration, it is the one halted for an in-limit job of 3 GPUs (bob
    # is not limited), and it alone: the other running job is alice's too, in-limit.
    Job.objects.filter(pk=job.pk).update(status="RUNNING", started_at=long_ago, min_duration_s=3600)
    Job.objects.exclude(pk=job.pk).filter(status="RUNNING").update(min_duration_s=3600)
    need = make_job(owner=outsider, project=other_project, gpus=3)
    snapshot, _ = build_snapshot(timezone.now())
    assert {r.id: r.borrowed for r in snapshot.running}[str(job.uuid)] is True
    result = run_cycle(snapshot)
    assert [h.job_id for h in result.halts] == [str(job.uuid)]
    assert result.explanations[str(need.uuid)] == (
        "waiting for 1 halted job(s) on gpu1 to free room",
    )


def test_a_borrower_waits_with_the_soft_line_and_the_standing_says_it_would_borrow(
    project, member, slave
):
    Quota.objects.create(project=project, gpus_hard=8, gpus_soft=2)
    make_job(owner=member, project=project, status="RUNNING", slave=slave, gpus=4,
             gpu_ids=[0, 1, 2, 3])  # fmt: skip
    job = make_job(owner=member, project=project, gpus=1)
    tick_once()
    job.refresh_from_db()
    assert job.status == "QUEUED" and not job.borrowed
    assert job.queued_explanations[0] == (
        "above the soft level of project vision: it holds 4 GPUs at once, soft level 2, this "
        "job needs 1; may borrow idle GPUs"
    )
    client = APIClient()
    client.force_authenticate(member)
    standing = client.get(
        "/api/portal/quotas/standing", {"project": "vision", "gpus": 1, "max_duration": "1 hour"}
    ).json()["job"]
    assert standing["fits_now"] is True
    assert standing["borrows"] == job.queued_explanations[0]
