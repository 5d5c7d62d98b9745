"""Figures that are right (issue 28 item 3): GPUs held on Live › Clusters, reserved GPUs not
counted as free, a queued job's start estimate on the dashboard."""

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from jobs.execution.metrics import cluster_utilisation_series
from jobs.models import JobSample, StartEstimate
from reservations.models import Reservation
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


def sample(job, at):
    JobSample.objects.create(
        job=job,
        time=at,
        cpu_percent=100.0,
        memory_mb=1024,
        net_rx_kbps=0,
        net_tx_kbps=0,
        gpus=[],
        cpu_ns=0,
        net_rx_bytes=0,
        net_tx_bytes=0,
    )


def test_gpus_held_follows_the_runs_not_every_job_with_a_sample(member, project, slave):
    # Nine one-minute jobs, two at a time on GPUs 0 and 1, all in one 10-minute bucket; each
    # left a sample. Counted per job with a sample this read 9 GPUs held (and 9 CPU cores).
    since = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    for i in range(9):
        started = since + timedelta(seconds=60 * (i // 2) + 2 * (i % 2))
        job = make_job(
            owner=member,
            project=project,
            status="FINISHED",
            slave=slave,
            gpu_ids=[i % 2],
            started=started,
            ended=started + timedelta(seconds=60),
        )
        sample(job, started + timedelta(seconds=30))
    series = cluster_utilisation_series(
        cluster_id=slave.cluster_id, since=since, until=since + timedelta(hours=1), bucket_s=600
    )
    assert series["gpusHeld"][0] == 0.9  # 9 GPU-minutes over 10 minutes
    assert max(series["gpusHeld"]) <= 2
    assert series["cpuCores"][0] == 0.9  # one core each, for a tenth of the bucket
    assert series["gpusHeld"][1:] == [0] * 6


def test_a_running_job_holds_its_gpus_to_the_end_of_the_window(member, project, slave):
    now = timezone.now()
    make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        gpus=2,
        started=now - timedelta(hours=2),
    )
    make_job(  # ended before the window: not held in it
        owner=member,
        project=project,
        status="FINISHED",
        slave=slave,
        gpus=4,
        started=now - timedelta(hours=5),
        ended=now - timedelta(hours=3),
    )
    series = cluster_utilisation_series(
        cluster_id=slave.cluster_id, since=now - timedelta(hours=1), until=now, bucket_s=600
    )
    assert series["gpusHeld"] == [2] * 7


@pytest.fixture
def reserved(slave, outsider, other_project):
    now = timezone.now()
    reservation = Reservation.objects.create(
        name="workshop",
        cluster=slave.cluster,
        gpu_count=2,
        start=now - timedelta(hours=1),
        end=now + timedelta(hours=1),
    )
    reservation.projects.add(other_project)
    return reservation


def test_reserved_gpus_are_not_free_on_the_dashboard_and_live_clusters(
    member_client, outsider_client, member, project, slave, reserved
):
    make_job(owner=member, project=project, status="RUNNING", slave=slave, gpu_ids=[0])
    page = member_client.get("/").content.decode()
    # 4 GPUs: 1 used, 2 reserved for another project, 1 free.
    assert re.search(r'id="stat-free-gpus">1<', page), page
    assert 'id="stat-reserved-gpus">(+ 2 reserved)' in page
    assert re.search(r"<strong>1</strong> / 4 free", page)
    clusters = member_client.get("/live/clusters/").content.decode()
    assert re.search(r'data-resource="gpu">1<span', clusters)
    assert 'data-free-percent="25"' in clusters
    assert 'data-reserved-gpus="2">+ 2 reserved<' in clusters
    # The reservation's own project may use them: free to them, and said to be theirs.
    theirs = outsider_client.get("/live/clusters/").content.decode()
    assert re.search(r'data-resource="gpu">3<span', theirs)
    assert "data-reserved-gpus" not in theirs
    assert 'data-reserved-yours="2">2 of them reserved for you<' in theirs
    dashboard = outsider_client.get("/").content.decode()
    assert re.search(r'id="stat-free-gpus">3<', dashboard)
    assert "(2 reserved for you)" in dashboard


def test_a_queued_jobs_start_estimate_is_on_the_dashboard(member_client, member, project, slave):
    from accounts.models import Profile

    Profile.objects.update_or_create(user=member, defaults={"time_zone": "Asia/Tokyo"})
    job = make_job(owner=member, project=project, status="QUEUED", name="waiting-one")
    now = timezone.now()
    start = (now + timedelta(hours=2)).replace(second=0, microsecond=0)
    StartEstimate.objects.create(
        job=job, first_made_at=now, first_start=start, made_at=now, start=start
    )
    page = member_client.get("/").content.decode()
    item = page[page.index(f'data-job="{job.uuid}"') :]
    item = item[: item.index("</li>")]
    local = timezone.localtime(start, timezone=ZoneInfo("Asia/Tokyo"))
    assert "Estimated start:" in item
    assert local.strftime("%Y-%m-%d %H:%M JST") in item
    assert re.search(r"\(in (1h 5\dm|2h)", item), item


def test_the_dashboard_makes_a_missing_estimate(member_client, member, project, slave):
    job = make_job(owner=member, project=project, status="QUEUED", name="never-estimated")
    page = member_client.get("/").content.decode()
    assert StartEstimate.objects.filter(job=job).exists()
    item = page[page.index(f'data-job="{job.uuid}"') :]
    assert "Estimated start:" in item[: item.index("</li>")]
