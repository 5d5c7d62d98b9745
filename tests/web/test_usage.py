"""Usage: GPU-hours per day, anonymised fair share, heaviest jobs."""

import re
from datetime import timedelta

from django.utils import timezone

from jobs.models import UserUsage
from jobs.web.dashboard import usage_page_data
from tests.web.factories import make_job


def test_gpu_hours_per_day(member, outsider, project, other_project, slave):
    now = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    # 2 GPUs for 3 hours, yesterday from 10:00.
    start = now - timedelta(days=1, hours=2)
    make_job(
        owner=member,
        project=project,
        status="FINISHED",
        slave=slave,
        gpus=2,
        created=start,
        started=start,
        ended=start + timedelta(hours=3),
        name="two-gpu",
    )
    # Running since 2 hours ago with 1 GPU: counts until now.
    make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        gpus=1,
        started=now - timedelta(hours=2),
        name="running",
    )
    # Someone else's job in another project does not count.
    make_job(
        owner=outsider,
        project=other_project,
        status="FINISHED",
        slave=slave,
        gpus=4,
        started=now - timedelta(hours=5),
        ended=now - timedelta(hours=1),
    )
    # Older than 30 days: outside the window.
    old = now - timedelta(days=40)
    make_job(
        owner=member,
        project=project,
        status="FINISHED",
        slave=slave,
        gpus=8,
        created=old,
        started=old,
        ended=old + timedelta(hours=1),
    )
    data = usage_page_data(member, now=now)
    me = data["series"][0]
    assert me.label == "Me"
    assert round(me.per_day[-2], 3) == 6.0 and round(me.per_day[-1], 3) == 2.0
    assert round(me.total, 3) == 8.0
    assert [s.label for s in data["series"]] == ["Me", "Project vision"]
    assert [j["name"] for j in data["top_jobs"]] == ["two-gpu", "running"]


def test_page_anonymises_others(member_client, member, outsider, admin_user):
    now = timezone.now()
    UserUsage.objects.create(user=member, value=3600, updated_at=now)
    UserUsage.objects.create(user=outsider, value=7200, updated_at=now)
    UserUsage.objects.create(user=admin_user, value=100, updated_at=now)
    html = member_client.get("/usage/").content.decode()
    share = html[html.index('id="fair-share"') :]
    assert re.findall(r"<span>(user \d|you)</span>", share) == ["user 1", "you", "user 2"]
    assert "bob" not in html and "root" not in html
    assert 'id="fair-rank">#2<' in html
    assert "<svg" in html and '<rect class="bar"' in html


def test_usage_queries_do_not_grow(member_client, count_queries, member, project, slave):
    def add(n):
        for _ in range(n):
            make_job(owner=member, project=project, status="FINISHED", slave=slave)

    add(5)
    few = count_queries(member_client, "/usage/")
    add(45)
    assert count_queries(member_client, "/usage/") == few
