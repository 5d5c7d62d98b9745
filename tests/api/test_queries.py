"""List endpoints run a bounded number of queries, whatever the number of rows."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clusters.models import Cluster, Gpu, Slave
from tests.api.conftest import API, put_state

pytestmark = pytest.mark.django_db


def _count(client, path):
    client.get(path)  # warm-up: the token's first use of the period records last_used
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200
    return len(ctx.captured_queries), response


def _make_jobs(submit, slave, n):
    for index in range(n):
        job = submit()
        if index % 3 == 1:
            put_state(job, "RUNNING", slave=slave, gpu_ids=[index % 4], cpu_ids=[index % 16])
        elif index % 3 == 2:
            put_state(job, "FINISHED", slave=slave, gpu_ids=[0])


@pytest.mark.parametrize("who", ["member_client", "outsider_client", "admin_client"])
def test_job_list_queries_do_not_grow(request, submit, slave, who):
    client = request.getfixturevalue(who)
    path = API + "jobs?page_size=200"
    _make_jobs(submit, slave, 5)
    small, first = _count(client, path)
    _make_jobs(submit, slave, 45)
    large, second = _count(client, path)
    assert len(first.json()["items"]) == 5 and len(second.json()["items"]) == 50
    assert small == large, (small, large)
    assert large <= 8


def _add_slaves(cluster_count, slaves_per_cluster):
    for c in range(cluster_count):
        cluster, _ = Cluster.objects.get_or_create(id=100 + c)
        for s in range(slaves_per_cluster):
            slave = Slave.objects.create(
                name=f"s{c}-{s}-{Slave.objects.count()}",
                cluster=cluster,
                docker_url="unix:///x.sock",
                cpus_total=8,
                memory_total_mb=8192,
                online=True,
            )
            for index in range(2):
                Gpu.objects.create(slave=slave, index=index, model="A100", memory_mb=40960)


@pytest.mark.parametrize("path", ["clusters", "slaves"])
@pytest.mark.parametrize("who", ["anon_client", "member_client"])
def test_cluster_and_slave_queries_do_not_grow(request, submit, slave, path, who):
    client = request.getfixturevalue(who)
    _make_jobs(submit, slave, 5)
    small, first = _count(client, API + path)
    _add_slaves(5, 4)
    _make_jobs(submit, slave, 20)
    large, second = _count(client, API + path)
    assert len(second.json()) > len(first.json())
    assert small == large, (small, large)
    assert large <= 8
