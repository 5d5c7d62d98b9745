"""The bridge: snapshot from the database, decisions applied through services, the tick."""

import copy
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import Job, UserUsage
from jobs.scheduler_bridge.snapshot import build_snapshot, running_rows, scheduler_config
from jobs.scheduler_bridge.tick import tick
from jobs.scheduler_bridge.usage import usage_accrue
from jobs.spec import SpecError

pytestmark = pytest.mark.django_db


def job_doc(hello_world, **resources):
    doc = copy.deepcopy(hello_world)
    doc["request"]["resources"].update(resources)
    return doc


def test_tick_assigns_distinct_gpus_and_fires_launches(
    submit, hello_world, recorded_tasks, django_capture_on_commit_callbacks
):
    jobs = [submit(job_doc(hello_world, gpus=2)) for _ in range(3)]
    recorded_tasks.clear()
    with django_capture_on_commit_callbacks(execute=True):
        summaries = tick()
    assert summaries[0]["started"] == 2
    assigned = Job.objects.filter(status="ASSIGNED")
    gpu_sets = [set(j.gpu_ids) for j in assigned]
    assert len(gpu_sets) == 2 and not (gpu_sets[0] & gpu_sets[1])
    assert {g for s in gpu_sets for g in s} == {0, 1, 2, 3}
    launches = [args for path, args in recorded_tasks if path == "jobs.tasks.job_launch"]
    assert sorted(a[0] for a in launches) == sorted(j.pk for j in assigned)
    waiting = Job.objects.get(status="QUEUED")
    assert waiting.pk in {j.pk for j in jobs}
    assert waiting.queued_explanations, "a job left queued must say why"
    assert any("GPU" in line for line in waiting.queued_explanations)


def test_interactive_job_that_cannot_start_fails(submit, hello_world):
    submit(job_doc(hello_world, gpus=4))
    tick()  # the first job takes every GPU
    doc = job_doc(hello_world, gpus=1)
    doc["request"]["scheduling"]["interactive"] = True
    interactive = submit(doc)
    tick()
    interactive.refresh_from_db()
    assert interactive.status == "FAILED"
    assert interactive.end_reason and interactive.event_times.get("FAILED")


def test_not_after_passed_fails_the_job(submit, hello_world):
    doc = job_doc(hello_world, gpus=1)
    doc["request"]["scheduling"]["notAfter"] = "2030-01-01T00:00:00Z"
    job = submit(doc)
    tick(now=datetime(2031, 1, 1, tzinfo=UTC))
    job.refresh_from_db()
    assert job.status == "FAILED" and "notAfter" in job.end_reason


def test_impossible_request_is_refused_at_submit(submit, hello_world):
    with pytest.raises(SpecError) as caught:
        submit(job_doc(hello_world, gpus=9))
    assert "no registered slave can run this job" in str(caught.value)
    with pytest.raises(SpecError) as caught:
        submit(job_doc(hello_world, gpuModel=["A100"]))
    assert "A100" in str(caught.value)
    assert Job.objects.count() == 0


def test_snapshot_uses_a_fixed_number_of_queries(submit, hello_world, slave):
    def count():
        with CaptureQueriesContext(connection) as ctx:
            build_snapshot(timezone.now())
        return len(ctx)

    # More jobs than the slave has GPUs: some stay queued in both counts (the limits in force
    # are read for the queued jobs' projects and users only when there are any).
    for _ in range(10):
        submit(job_doc(hello_world, gpus=1))
    tick()
    few = count()
    for _ in range(30):
        submit(job_doc(hello_world, gpus=1))
    tick()
    assert count() == few


def test_usage_accrues_for_running_jobs(submit, hello_world, member):
    job = submit(job_doc(hello_world, gpus=2))
    tick()
    start = timezone.now()
    Job.objects.filter(pk=job.pk).update(status="RUNNING", started_at=start)
    for now in (start, start + timedelta(hours=1)):
        usage_accrue(now=now, running=running_rows(), config=scheduler_config())
    usage = UserUsage.objects.get(user=member)
    # Two GPUs for an hour (plus small CPU/memory weights), barely decayed over one hour.
    assert 2 * 3600 * 0.99 < usage.value < 2 * 3600 * 1.2
    # The snapshot reads that usage at its own moment, the hour the job ran since included
    # (what a tick then would store: issue 26 item 4), and writes nothing.
    later = start + timedelta(hours=2)
    snapshot, _ = build_snapshot(later)
    assert 2 * usage.value * 0.99 < snapshot.usage[member.username] < 2 * usage.value
    assert UserUsage.objects.get(user=member).updated_at == start + timedelta(hours=1)


def test_a_snapshot_writes_no_usage(submit, hello_world, member):
    job = submit(job_doc(hello_world, gpus=1))
    tick()
    Job.objects.filter(pk=job.pk).update(status="RUNNING", started_at=timezone.now())
    UserUsage.objects.all().delete()
    build_snapshot(timezone.now() + timedelta(hours=1))
    assert not UserUsage.objects.exists()
    tick(timezone.now() + timedelta(hours=1))  # the tick is what accrues
    assert UserUsage.objects.filter(user=member).exists()


def test_max_duration_cancels_a_running_job(
    submit, hello_world, recorded_tasks, django_capture_on_commit_callbacks
):
    doc = job_doc(hello_world)
    doc["request"]["scheduling"]["maxDuration"] = "10 minutes"
    job = submit(doc)
    tick()
    started = timezone.now()
    Job.objects.filter(pk=job.pk).update(status="RUNNING", started_at=started)
    recorded_tasks.clear()
    with django_capture_on_commit_callbacks(execute=True):
        tick(now=started + timedelta(minutes=11))
    job.refresh_from_db()
    assert job.status == "CANCELLING" and "maxDuration" in job.end_reason
    assert ("jobs.tasks.job_stop", (job.pk,)) in recorded_tasks


def test_stale_start_on_a_held_gpu_is_skipped(submit, hello_world, slave):
    """A decision made on an old snapshot must never hand out a GPU another job holds now."""
    from jobs.scheduler.model import Start
    from jobs.scheduler_bridge.apply import apply_starts

    holder, late = submit(job_doc(hello_world)), submit(job_doc(hello_world))
    Job.objects.filter(pk=holder.pk).update(status="RUNNING", slave=slave, gpu_ids=[0], cpu_ids=[0])
    decisions = [Start(job_id=str(late.uuid), slave=slave.name, gpu_ids=(0,), cpu_ids=(1,))]
    assert apply_starts(decisions, {str(late.uuid): late}, timezone.now()) == 0
    late.refresh_from_db()
    assert late.status == "QUEUED"
    decisions = [Start(job_id=str(late.uuid), slave=slave.name, gpu_ids=(1,), cpu_ids=(1,))]
    assert apply_starts(decisions, {str(late.uuid): late}, timezone.now()) == 1
    late.refresh_from_db()
    assert late.status == "ASSIGNED" and late.gpu_ids == [1]


def test_flat_slave_states_match_the_model_view(slave, cluster, project):
    """``slave_states`` (flat queries) sees every slave exactly as ``slave_state`` does."""
    from clusters.models import Gpu, Slave
    from jobs.scheduler_bridge.snapshot import slave_state, slave_states

    cluster.is_private = True
    cluster.save()
    cluster.owner_projects.add(project)
    Gpu.objects.filter(slave=slave, index=2).update(acquired=False)
    Slave.objects.filter(pk=slave.pk).update(acquired_cpus=6, features=["ssd"])
    other = Slave.objects.create(
        name="cpu1", cluster=cluster, docker_url="unix:///x.sock", cpus_total=4,
        memory_total_mb=2048, cuda_version="", online=False,
    )  # fmt: skip
    expected = [
        slave_state(s)
        for s in Slave.objects.select_related("cluster").prefetch_related(
            "gpus", "cluster__owner_projects"
        )
    ]
    assert slave_states() == expected
    assert {s.name for s in expected} == {"gpu1", other.name}
    assert len(expected[1].gpus) == 3 and expected[1].cluster_owner_projects == {project.name}


def port_doc(hello_world, host_port, **resources):
    doc = job_doc(hello_world, **resources)
    doc["request"]["docker"]["portMappings"] = [{"containerPort": 8888, "hostPort": host_port}]
    return doc


def add_slave(cluster, name):
    from clusters.models import Gpu, Slave

    other = Slave.objects.create(
        name=name,
        cluster=cluster,
        docker_url="unix:///nonexistent.sock",
        host=f"{name}.example.org",
        cpus_total=16,
        memory_total_mb=64 * 1024,
        cuda_version="12.2",
        online=True,
        offline_reason="",
        last_seen=timezone.now(),
    )
    for index in range(4):
        Gpu.objects.create(
            slave=other, index=index, model="Tesla V100-PCIE-32GB", memory_mb=32768, declared=True
        )
    return other


def test_a_fixed_host_port_waits_for_its_slave_or_starts_on_another(submit, hello_world, cluster):
    """Issue 15 item 6: never two jobs with one fixed host port on a slave; the second waits,
    explained, and starts on another slave once one is there."""
    first = submit(port_doc(hello_world, 20080))
    second = submit(port_doc(hello_world, 20080))
    neighbour = submit(port_doc(hello_world, 20081))  # another port may share the slave
    tick()
    for job in (first, second, neighbour):
        job.refresh_from_db()
    assert first.status == "ASSIGNED" and neighbour.status == "ASSIGNED"
    assert first.slave.name == neighbour.slave.name == "gpu1"
    assert second.status == "QUEUED"
    assert second.queued_explanations[0] == "host port 20080 is in use on gpu1"
    Job.objects.filter(pk=first.pk).update(status="RUNNING", started_at=timezone.now())
    snapshot, _ = build_snapshot(timezone.now())
    assert {s.name: s.ports_in_use for s in snapshot.slaves} == {"gpu1": {20080, 20081}}
    assert {j.id: j.host_ports for j in snapshot.queued} == {str(second.uuid): {20080}}
    tick()
    second.refresh_from_db()
    assert second.status == "QUEUED"
    assert "host port 20080 is in use on gpu1" in second.queued_explanations
    add_slave(cluster, "gpu2")
    tick()
    second.refresh_from_db()
    assert second.status == "ASSIGNED" and second.slave.name == "gpu2"


def test_interactive_job_halts_a_job_past_min_duration_and_starts_when_it_ended(
    submit, hello_world
):
    """Issue 15 item 7: room made by halting; the interactive job waits for the halted job."""
    doc = job_doc(hello_world, gpus=4)
    doc["request"]["scheduling"]["minDuration"] = "1 hour"
    batch = submit(doc)
    tick()
    Job.objects.filter(pk=batch.pk).update(
        status="RUNNING", started_at=timezone.now() - timedelta(hours=2)
    )
    doc = job_doc(hello_world, gpus=1)
    doc["request"]["scheduling"]["interactive"] = True
    interactive = submit(doc)
    tick()
    batch.refresh_from_db()
    interactive.refresh_from_db()
    assert batch.status == "MUSTHALT"
    assert batch.halt_events[-1]["reason"] == "Score"
    assert batch.halt_events[-1]["startedJobUuids"] == [str(interactive.uuid)]
    assert interactive.status == "QUEUED"
    assert interactive.queued_explanations[0] == "waiting for 1 halted job(s) on gpu1 to free room"
    assert interactive.halt_events[-1]["haltedJobUuids"] == [str(batch.uuid)]
    # Still halting: it keeps waiting and halts nothing more.
    tick()
    interactive.refresh_from_db()
    assert interactive.status == "QUEUED"
    Job.objects.filter(pk=batch.pk).update(status="HALTED")
    tick()
    interactive.refresh_from_db()
    assert interactive.status == "ASSIGNED"


def test_interactive_job_fails_when_the_halted_job_does_not_end_in_time(
    submit, hello_world, settings
):
    doc = job_doc(hello_world, gpus=4)
    doc["request"]["scheduling"]["minDuration"] = "1 hour"
    batch = submit(doc)
    tick()
    Job.objects.filter(pk=batch.pk).update(
        status="RUNNING", started_at=timezone.now() - timedelta(hours=2)
    )
    doc = job_doc(hello_world, gpus=1)
    doc["request"]["scheduling"]["interactive"] = True
    interactive = submit(doc)
    tick()
    interactive.refresh_from_db()
    assert interactive.status == "QUEUED"
    late = timezone.now() + timedelta(seconds=settings.PORTAL_INTERACTIVE_HALT_WAIT_S + 5)
    tick(now=late)
    interactive.refresh_from_db()
    assert interactive.status == "FAILED"
    assert "the jobs halted for it did not free room within" in interactive.end_reason
