"""Quotas from the database to the scheduler: the snapshot carries the limits in force and this
month's usage; a job over a hard limit waits with the line naming it; one that could never fit
is refused at submit (issue 29 items 1 and 2)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from jobs.models import Job
from jobs.scheduler import run_cycle
from jobs.scheduler_bridge.snapshot import build_snapshot
from jobs.spec import SpecError
from jobs.user_actions.services import job_submit
from quotas.models import Quota
from quotas.selectors import month_end, month_start, quotas_in_force
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


def test_month_bounds():
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    assert month_start(now) == datetime(2026, 11, 1, tzinfo=UTC)
    assert month_end(now) == datetime(2026, 12, 1, tzinfo=UTC)
    assert month_end(datetime(2026, 12, 31, 23, tzinfo=UTC)) == datetime(2027, 1, 1, tzinfo=UTC)


def test_defaults_apply_to_projects_and_users_without_a_row(settings, project, member):
    settings.PORTAL_QUOTA_DEFAULTS = {"project": {"gpus_hard": 8}, "user": {"jobs_hard": 2}}
    Quota.objects.create(project=project, gpus_hard=2)
    found = {
        (q.scope, q.project or q.user): q
        for q in quotas_in_force(projects=["vision", "other"], users=["alice"])
    }
    assert found[("project", "vision")].limits == {"gpus_hard": 2}  # its own row wins
    assert found[("project", "other")].limits == {"gpus_hard": 8}
    assert found[("project", "other")].from_default
    assert found[("user", "alice")].limits == {"jobs_hard": 2}


def test_a_job_over_the_project_budget_waits_with_the_line(project, member, slave):
    now = timezone.now()
    Quota.objects.create(project=project, gpu_hours_hard=1.0)
    # This month: 2 GPUs for 20 minutes = 40 GPU-minutes used.
    started = max(month_start(now), now - timedelta(hours=2))
    make_job(
        owner=member, project=project, status="FINISHED", slave=slave, gpus=2,
        started=started, ended=started + timedelta(minutes=20),
    )  # fmt: skip
    job = make_job(owner=member, project=project, gpus=1)
    Job.objects.filter(pk=job.pk).update(max_duration_s=30 * 60)
    snapshot, _ = build_snapshot(now)
    (limit,) = snapshot.quotas
    assert limit.used_gpu_s == pytest.approx(2 * 20 * 60, abs=1)
    assert limit.renews_at == month_end(now)
    result = run_cycle(snapshot)
    assert result.starts == ()
    (line,) = result.explanations[str(job.uuid)]
    assert line.startswith("project vision has used 0.7 of 1 GPU-hours this month; this job may")
    assert line.endswith(f"the budget renews on 1 {month_end(now).strftime('%B')}")
    # 15 minutes fit the 20 GPU-minutes left.
    Job.objects.filter(pk=job.pk).update(max_duration_s=15 * 60)
    snapshot, _ = build_snapshot(now)
    assert [s.job_id for s in run_cycle(snapshot).starts] == [str(job.uuid)]


def test_member_limit_on_gpus_at_once(project, member, slave):
    Quota.objects.create(project=project, user=member, gpus_hard=2)
    make_job(owner=member, project=project, status="RUNNING", slave=slave, gpus=2, gpu_ids=[0, 1])
    job = make_job(owner=member, project=project, gpus=1)
    result = run_cycle(build_snapshot(timezone.now())[0])
    assert result.explanations[str(job.uuid)] == (
        "user alice in project vision holds 2 of its 2 GPUs at once; this job needs 1; GPUs "
        "free up as its running jobs end",
    )


def _document(gpus, max_duration="1 hour"):
    return {
        "name": "sweep",
        "request": {
            "resources": {"gpus": gpus, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": "busybox", "command": "true"},
            "scheduling": {"minDuration": "1 hour", "maxDuration": max_duration},
        },
    }


def test_submit_refusals(project, member, slave):
    Quota.objects.create(user=member, gpus_hard=2, gpu_hours_hard=10)
    with pytest.raises(SpecError) as refused:
        job_submit(user=member, project=project, document=_document(3))
    assert "over a quota: user alice may hold at most 2 GPUs at once, this job asks for 3" in str(
        refused.value.errors
    )
    with pytest.raises(SpecError) as refused:
        job_submit(user=member, project=project, document=_document(1, "11 hours"))
    assert "user alice has 10 GPU-hours a month" in str(refused.value.errors)
    assert not Job.objects.exists()
    job = job_submit(user=member, project=project, document=_document(1, "10 hours"))
    assert job.status == "QUEUED"
