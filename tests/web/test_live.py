"""Live > Clusters and Live > Slaves."""

import re
from datetime import timedelta

from django.utils import timezone

from clusters.models import Cluster, Gpu, Slave
from reservations.models import Reservation
from tests.web.factories import make_job


def test_cluster_cards(member_client, member, project, slave):
    make_job(owner=member, project=project, status="RUNNING", slave=slave, gpu_ids=[0], gpus=1)
    private = Cluster.objects.create(id=2, comment="owners only", is_private=True)
    private.owner_projects.add(project)
    now = timezone.now()
    active = Reservation.objects.create(
        name="deadline",
        cluster=slave.cluster,
        start=now - timedelta(hours=1),
        end=now + timedelta(days=1),
    )
    active.projects.add(project)
    html = member_client.get("/live/clusters/").content.decode()
    assert 'data-cluster="1"' in html and 'data-cluster="2"' in html
    card = html[html.index('data-cluster="1"') : html.index('data-cluster="2"')]
    assert re.search(r'data-resource="gpu">3<span[^>]*>/4<', card)
    assert re.search(r'data-resource="cpu">14<span[^>]*>/16<', card)
    assert "Tesla V100-PCIE-32GB" in card and "gpu1" in card
    assert "deadline" in card and "yours" in card
    rest = html[html.index('data-cluster="2"') :]
    assert "private" in rest and "you own it" in rest and "vision" in rest


def test_slave_rows_show_gpu_cells_sanitised(
    member_client, outsider_client, member, project, slave
):
    job = make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        gpu_ids=[1],
        name="seen-by-members",
    )
    html = member_client.get("/live/slaves/").content.decode()
    assert 'data-slave="gpu1" data-online="1" data-accepting="1"' in html
    cells = re.findall(r'data-gpu="(\d)" data-state="(\w+)"', html)
    assert cells == [("0", "free"), ("1", "used"), ("2", "free"), ("3", "free")]
    assert "used by alice, job seen-by-members" in html
    assert "declared" in html and "12.2" in html

    html = outsider_client.get("/live/slaves/").content.decode()
    assert "seen-by-members" not in html and "alice" not in html
    assert f"used by hidden, job job-{str(job.uuid)[:6]}" in html


def test_offline_slave_shows_its_reason_to_admins_only(member_client, admin_client_, slave):
    slave.online = False
    slave.offline_reason = "Docker engine unreachable: boom"
    slave.save()
    html = member_client.get("/live/slaves/").content.decode()
    assert 'data-online="0"' in html and "Docker engine unreachable" not in html
    assert re.findall(r'data-state="(\w+)"', html).count("offline") == 4
    html = admin_client_.get("/live/slaves/").content.decode()
    assert "offline: Docker engine unreachable: boom" in html


def test_reserved_gpus(member_client, slave):
    now = timezone.now()
    Reservation.objects.create(
        name="two",
        cluster=slave.cluster,
        start=now - timedelta(hours=1),
        end=now + timedelta(hours=1),
        gpu_count=2,
    )
    html = member_client.get("/live/slaves/").content.decode()
    states = re.findall(r'data-gpu="\d" data-state="(\w+)"', html)
    assert states.count("reserved") == 2 and states.count("free") == 2


def test_slaves_refresh_only_while_visible(member_client, slave):
    html = member_client.get("/live/slaves/").content.decode()
    assert 'hx-trigger="every 5s [document.visibilityState === &#x27;visible&#x27;]"' in html or (
        "every 5s [document.visibilityState === 'visible']" in html
    )
    partial = member_client.get("/live/slaves/?cluster=1", HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="slave-table"')
    assert 'hx-get="/live/slaves/?cluster=1"' in partial


def add_slaves(cluster, n, start, member, project):
    for i in range(start, start + n):
        s = Slave.objects.create(
            name=f"s{i:03d}",
            cluster=cluster,
            docker_url="tcp://x",
            online=True,
            offline_reason="",
            cpus_total=8,
            memory_total_mb=32768,
        )
        Gpu.objects.bulk_create(Gpu(slave=s, index=g, model="A100") for g in range(2))
        make_job(owner=member, project=project, status="RUNNING", slave=s, gpu_ids=[0])


def test_live_queries_do_not_grow_with_slaves(
    member_client, count_queries, cluster, member, project
):
    now = timezone.now()
    Reservation.objects.create(
        name="r", cluster=cluster, start=now - timedelta(hours=1), end=now + timedelta(hours=1)
    )
    add_slaves(cluster, 5, 0, member, project)
    few = {
        url: count_queries(member_client, url) for url in ("/live/slaves/", "/live/clusters/", "/")
    }
    add_slaves(cluster, 45, 5, member, project)
    for url, n in few.items():
        assert count_queries(member_client, url) == n, url
