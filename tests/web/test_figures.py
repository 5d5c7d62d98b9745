"""Figures that are right (issue 28 item 3): GPUs held on Live › Clusters, reserved GPUs not
counted as free, a queued job's start estimate on the dashboard."""

import json
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


def test_timeline_times_to_the_second_when_close_and_archiving_listed_once(
    member_client, member, project, slave
):
    from jobs.models import JobEvent

    job = make_job(owner=member, project=project, status="FINISHED", slave=slave)
    JobEvent.objects.filter(job=job).delete()
    t = timezone.now().replace(second=5, microsecond=0) - timedelta(hours=1)
    rows = [
        (0, "Status Change", "RUNNING", "", ""),
        (20, "Info", "", "ARCHIVING", "ARCHIVING: copying the output folder"),
        (21, "Info", "", "", "outputs archived: 2 entries, 10 bytes"),
        (22, "Status Change", "FINISHED", "", ""),
        (600, "Info", "", "", "a later note"),
    ]
    for seconds, kind, state, stage, message in rows:
        JobEvent.objects.create(
            job=job,
            time=t + timedelta(seconds=seconds),
            type=kind,
            new_state=state,
            stage=stage,
            message=message,
        )
    page = member_client.get(f"/jobs/{job.uuid}/").content.decode()
    timeline = page[page.index('id="job-timeline"') :]
    timeline = timeline[: timeline.index("</ol>")]
    items = timeline.split("<li")[1:]
    assert len(items) == 4, timeline  # the ARCHIVING stage and its result: one line
    assert timeline.count(">ARCHIVING<") == 1 and "outputs archived: 2 entries" in timeline
    assert "copying the output folder" not in timeline
    styles = re.findall(r'data-style="(\w+)"', timeline)
    assert styles == ["seconds", "seconds", "seconds", "datetime"], styles
    assert re.search(r">\d{4}-\d{2}-\d{2} \d{2}:\d{2}:26 UTC</time>", timeline)  # archived at :26


def test_fields_renaming_an_example_drop_its_description(member_client, project, slave):
    from jobs.web.forms import HELLO_WORLD

    doc = dict(HELLO_WORLD, name="HelloWorld")
    answer = member_client.post(
        "/jobs/new/",
        {"project": project.pk, "document": json.dumps(doc), "apply_fields": "1", "name": "mine"},
    )
    shown = json.loads(answer.context["form"]["document"].value())
    assert shown["name"] == "mine" and "description" not in shown
    # A description of one's own stays.
    doc = dict(HELLO_WORLD, description="my own words")
    answer = member_client.post(
        "/jobs/new/",
        {"project": project.pk, "document": json.dumps(doc), "apply_fields": "1", "name": "mine"},
    )
    assert json.loads(answer.context["form"]["document"].value())["description"] == "my own words"


def test_create_job_offers_the_reservations_one_may_use_by_name_in_ones_zone(
    member_client, member, project, slave, reserved
):
    from accounts.models import Profile

    Profile.objects.update_or_create(user=member, defaults={"time_zone": "Asia/Tokyo"})
    mine = Reservation.objects.create(
        name="thesis-deadline",
        cluster=slave.cluster,
        start=timezone.now() + timedelta(hours=1),
        end=timezone.now() + timedelta(hours=5),
    )
    mine.projects.add(project)
    page = member_client.get("/jobs/new/").content.decode()
    select = page[page.index('name="reservations"') :]
    select = select[: select.index("</select>")]
    start = timezone.localtime(mine.start, ZoneInfo("Asia/Tokyo"))
    assert f'value="{mine.uuid}"' in select
    assert f"thesis-deadline (cluster 1, {start:%Y-%m-%d %H:%M} JST – " in select
    assert " JST)" in select
    assert "workshop" not in select  # another project's
    # Chosen by name, written into the document as its id.
    doc = {"name": "in-it", "request": {"resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
           "docker": {"image": "debian:stable"}, "scheduling": {}}}  # fmt: skip
    answer = member_client.post(
        "/jobs/new/",
        {
            "project": project.pk,
            "document": json.dumps(doc),
            "apply_fields": "1",
            "reservations": [str(mine.uuid)],
        },
    )
    shown = json.loads(answer.context["form"]["document"].value())
    assert shown["request"]["scheduling"]["reservationIds"] == [str(mine.uuid)]
