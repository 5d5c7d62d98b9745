"""The dashboard: my active jobs with explanations, free GPUs, fair-share standing."""

from django.utils import timezone

from jobs.models import UserUsage
from tests.web.factories import make_job


def test_my_jobs_free_gpus_and_rank(member_client, member, outsider, project, other_project, slave):
    make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        gpu_ids=[0, 1],
        gpus=2,
        name="my-running",
    )
    make_job(
        owner=member,
        project=project,
        status="QUEUED",
        name="my-queued",
        explanations=["needs 4 free GPUs, gpu1 has 2"],
    )
    make_job(owner=outsider, project=other_project, status="QUEUED", name="not-mine")
    now = timezone.now()
    UserUsage.objects.create(user=member, value=7200, updated_at=now)
    UserUsage.objects.create(user=outsider, value=3600, updated_at=now)
    html = member_client.get("/").content.decode()
    assert "my-running" in html and "my-queued" in html and "not-mine" not in html
    assert "needs 4 free GPUs, gpu1 has 2" in html
    assert 'id="stat-running">1<' in html and 'id="stat-queued">1<' in html
    assert 'id="stat-free-gpus">2<' in html  # 4 GPUs, 2 used
    assert 'id="stat-rank">#2<' in html and "of 2" in html
    assert "2.00</strong> weighted GPU-hours" in html


def test_user_without_usage_is_first(member_client):
    html = member_client.get("/").content.decode()
    assert 'id="stat-rank">#1<' in html


def test_dashboard_queries_do_not_grow(member_client, count_queries, member, project, slave):
    def add(n):
        for i in range(n):
            make_job(owner=member, project=project, status="QUEUED" if i % 2 else "FINISHED")

    add(5)
    few = count_queries(member_client, "/")
    add(55)
    assert count_queries(member_client, "/") == few
