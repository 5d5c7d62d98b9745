"""Submit-time feasibility reads a cached view of the slaves that is never stale."""

import copy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from clusters.capabilities import capability_stamp
from clusters.models import Cluster, Gpu, Slave
from clusters.services import slave_declare_gpus, slave_mark_offline, slave_set_accepting
from jobs.spec import SpecError
from jobs.submit.checks import check_request_against_slaves, slave_capabilities
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


def _request(**resources) -> dict:
    from jobs.spec import parse_job_document
    from jobs.user_actions.services import spec_defaults

    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["resources"].update(resources)
    return parse_job_document(document, defaults=spec_defaults())[0]["request"]


def _refused(project, **resources) -> str | None:
    try:
        check_request_against_slaves(project=project, request=_request(**resources), user="u")
    except SpecError as refused:
        return str(refused)
    return None


def _slave_queries(ctx) -> int:
    return sum('"clusters_slave"' in q["sql"] for q in ctx.captured_queries)


def test_a_second_check_reads_no_slave_rows(project, slave):
    assert _refused(project, gpus=4) is None
    with CaptureQueriesContext(connection) as ctx:
        assert _refused(project, gpus=4) is None
        assert _refused(project, gpus=3) is None
    assert _slave_queries(ctx) == 0
    # Per check: the stamp, and the quota limits in force for the project and user (issue 29).
    assert len(ctx.captured_queries) == 4
    assert sum("clusters_capabilitystamp" in q["sql"] for q in ctx.captured_queries) == 2
    assert sum('"quotas_quota"' in q["sql"] for q in ctx.captured_queries) == 2


@pytest.mark.parametrize(
    "change",
    [
        "gpu_deleted",
        "gpu_saved",
        "slave_saved",
        "declared_gpus",
        "slave_deleted",
        "cluster_private",
    ],
)
def test_any_change_is_seen_by_the_next_check(project, other_project, slave, change):
    assert _refused(project, gpus=4) is None
    if change == "gpu_deleted":
        slave.gpus.filter(index=3).delete()
    elif change == "gpu_saved":
        gpu = slave.gpus.get(index=3)
        gpu.acquired = False
        gpu.save()
    elif change == "slave_saved":
        slave.cpus_total = 1
        slave.save()
    elif change == "declared_gpus":
        slave_declare_gpus(slave=slave, gpus=[("Tesla V100", 16384)] * 2)
    elif change == "slave_deleted":
        Gpu.objects.filter(slave=slave).delete()
        slave.delete()
        Slave.objects.create(name="small", cluster=slave.cluster, docker_url="unix:///x")
    elif change == "cluster_private":
        cluster = Cluster.objects.get(pk=slave.cluster_id)
        cluster.is_private = True
        cluster.save()
        cluster.owner_projects.add(other_project)
    reason = _refused(project, gpus=4)
    assert reason is not None and "no registered slave can run this job" in reason


def test_service_updates_without_signals_change_the_stamp(slave):
    seen = {capability_stamp()}
    slave_set_accepting(slave=slave, accepting=False)
    seen.add(capability_stamp())
    slave_mark_offline(slave=slave, reason="gone")
    seen.add(capability_stamp())
    slave_declare_gpus(slave=slave, gpus=[("A100", 40960)])
    seen.add(capability_stamp())
    assert len(seen) == 4 and None not in seen
    before = slave_capabilities()
    assert [g.model for g in before.states[0].gpus] == ["A100"]
    assert before.states[0].online is False and before.states[0].accepting_jobs is False


def test_a_change_made_by_another_process_is_seen(project, slave):
    """Another process changes the rows and the stamp (its signals); this process never heard
    of it, yet its next check sees the change."""
    assert _refused(project, gpus=4) is None
    with connection.cursor() as cursor:  # plain SQL: no signal in this process
        cursor.execute(
            "DELETE FROM clusters_gpu WHERE slave_id = %s AND index_ = 0".replace(
                "index_", connection.ops.quote_name("index")
            ),
            [slave.pk],
        )
        cursor.execute("UPDATE clusters_capabilitystamp SET stamp = 'other-process' WHERE id = 1")
    assert "no registered slave can run this job" in _refused(project, gpus=4)


def test_without_a_stamp_nothing_is_cached(project, slave):
    from clusters.models import CapabilityStamp

    CapabilityStamp.objects.all().delete()
    assert _refused(project, gpus=4) is None
    with CaptureQueriesContext(connection) as ctx:
        assert _refused(project, gpus=4) is None
    assert _slave_queries(ctx) >= 1  # rebuilt
