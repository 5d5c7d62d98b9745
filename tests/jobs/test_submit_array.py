"""job_submit_many (one rule set with job_submit) and ``manage.py submit_jobs``."""

import copy
import json
import uuid

import pytest
from django.core.management import CommandError, call_command

from core.errors import NotAllowed
from jobs.models import Job, JobEvent
from jobs.spec import SpecError
from jobs.user_actions.services import job_submit_many
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


def docs(count, **resources):
    out = []
    for n in range(count):
        document = copy.deepcopy(HELLO_WORLD)
        document["name"] = f"n{n}"
        document["request"]["resources"].update(resources)
        out.append(document)
    return out


def test_many_in_one_go(member, project, slave, django_assert_max_num_queries):
    # A fixed number of queries, not one per job: the slaves are read once, rows are bulk
    # inserted.
    with django_assert_max_num_queries(20):
        jobs = job_submit_many(user=member, project=project, documents=docs(50))
    assert [j.name for j in jobs] == [f"n{n}" for n in range(50)]
    assert all(j.pk for j in jobs)
    assert Job.objects.filter(status="QUEUED").count() == 50
    assert JobEvent.objects.count() == 50


def test_single_and_array_share_the_rules(member, project, slave, submit):
    """The same bad document fails the same way alone and inside an array."""
    bad = docs(1, gpus=99)[0]
    with pytest.raises(SpecError) as alone:
        submit(bad)
    with pytest.raises(SpecError) as inside:
        job_submit_many(user=member, project=project, documents=[docs(1)[0], bad])
    assert [f"jobs[1].{e}" for e in alone.value.errors] == [str(e) for e in inside.value.errors]
    assert Job.objects.count() == 0


def test_a_v1_item_names_its_v1_field(member, project, slave):
    v1 = {
        "jobDefinition": {
            "name": "x",
            "clusterId": 1,
            "dockerImage": "busybox",
            "resources": {"gpus": 1, "cpuCores": -1, "systemMemory": 1000},
        }
    }
    with pytest.raises(SpecError) as caught:
        job_submit_many(user=member, project=project, documents=[v1], name="variations")
    assert str(caught.value.errors[0]).startswith("variations[0].jobDefinition.resources.cpuCores")


def test_outsider_is_refused(outsider, project, slave):
    with pytest.raises(NotAllowed):
        job_submit_many(user=outsider, project=project, documents=docs(2))
    assert Job.objects.count() == 0


def test_command_submits_a_sweep(member, project, slave, tmp_path, capsys):
    path = tmp_path / "sweep.json"
    template = docs(1)[0]
    template["name"] = "lr-${index}"
    path.write_text(json.dumps({"template": template, "variations": [{}, {}, {}]}))
    call_command("submit_jobs", str(path), user="alice", project="vision")
    uuids = capsys.readouterr().out.split()
    assert [Job.objects.get(uuid=u).name for u in uuids] == ["lr-0", "lr-1", "lr-2"]


def test_command_takes_a_plain_list_and_hold(member, project, slave, tmp_path, capsys):
    path = tmp_path / "list.json"
    path.write_text(json.dumps(docs(2)))
    call_command("submit_jobs", str(path), user="alice", project="vision", hold=True)
    assert len(capsys.readouterr().out.split()) == 2
    assert set(Job.objects.values_list("status", flat=True)) == {"ONHOLD"}


def test_command_prints_every_error_and_writes_nothing(member, project, slave, tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"jobs": [*docs(1), *docs(1, gpus=-1), 3]}))
    with pytest.raises(SystemExit) as exited:
        call_command("submit_jobs", str(path), user="alice", project="vision")
    assert exited.value.code == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("jobs[1].request.resources.gpus: ")
    assert lines[-1] == "jobs[2]: must be a job document (an object)"
    assert Job.objects.count() == 0


def test_command_reports_bad_json_with_line(member, project, slave, tmp_path, capsys):
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"name": "x",}\n]')
    with pytest.raises(SystemExit):
        call_command("submit_jobs", str(path), user="alice", project="vision")
    assert "line 2" in capsys.readouterr().err


def test_command_unknown_user(project, tmp_path):
    with pytest.raises(CommandError, match="no user 'ghost'"):
        call_command("submit_jobs", str(tmp_path / "x.json"), user="ghost", project="vision")


# --- an array job is stored exactly as a single job -----------------------------------------

RICH = {
    "name": 'rich ✓ "quoted"',
    "description": "with 'quotes', a \\ backslash and ünïcødé",
    "request": {
        "resources": {
            "clusterId": 1,
            "gpus": 1,
            "cpus": 2,
            "cpuMemoryGb": 3,
            "gpuModel": ["Bench"],
            "minCudaVersion": 11,
        },
        "docker": {
            "image": "debian:stable",
            "command": ["sh", "-c", 'echo "$LR"'],
            "environment": {"LR": "0.1", "NOTE": 'ünïcødé "x"'},
        },
        "scheduling": {
            "notAfter": "2099-01-02T03:04:05Z",
            "maxSimultaneousJobs": {"bucketName": "sweep", "bucketMax": 2},
            "restartable": True,
        },
        "extra": {"emailOnEnd": ["a@example.org"]},
    },
}
V1 = {
    "jobDefinition": {
        "name": "old",
        "clusterId": 1,
        "dockerImage": "busybox",
        "command": "true",
        "resources": {"gpus": 1, "cpuCores": 1, "systemMemory": 1024},
    }
}


def compare_array_with_single() -> dict:
    """Submit the same documents alone and as one array at the same moment; every stored
    column (but ids and uuids) and every first event must be equal, and the jobs an array
    answers must hold what the database holds. Makes its own user, project and slave (it runs
    on a throwaway PostgreSQL database too). Answers the compared rows' count and the vendor."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from accounts.models import Membership, Project
    from clusters.models import Cluster, Gpu, Slave
    from jobs.user_actions.services import job_submit

    user = get_user_model().objects.create_user("same-row")
    project = Project.objects.create(name="same-row", gid=7101)
    Membership.objects.create(user=user, project=project)
    cluster = Cluster.objects.create(id=1, comment="same-row")
    slave = Slave.objects.create(
        name="same-row", cluster=cluster, docker_url="unix:///x.sock", cpus_total=16,
        memory_total_mb=64 * 1024, cuda_version="12.2", online=True, offline_reason="",
        last_seen=timezone.now(),
    )  # fmt: skip
    Gpu.objects.create(slave=slave, index=0, model="Bench GPU", memory_mb=16384, declared=True)
    now = timezone.now()
    documents = [RICH, V1, copy.deepcopy(HELLO_WORLD)]
    singles = [
        job_submit(user=user, project=project, document=copy.deepcopy(d), now=now)
        for d in documents
    ]
    many = job_submit_many(user=user, project=project, documents=copy.deepcopy(documents), now=now)

    def stored(job):
        row = Job.objects.filter(pk=job.pk).values().get()
        return {k: v for k, v in row.items() if k not in ("id", "uuid", "array_id")}

    def raw(job):  # as the database holds it: JSON columns as their text on SQLite
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM jobs_job WHERE id = %s", [job.pk])
            names = [c[0] for c in cursor.description]
            values = cursor.fetchone()
            # The array's id is the one column an array's jobs have and a single job has not.
            left_out = ("id", "uuid", "array_id")
            return {n: v for n, v in zip(names, values, strict=True) if n not in left_out}

    def events(job):
        return list(JobEvent.objects.filter(job=job).values("time", "type", "new_state",
                                                             "message", "stage"))  # fmt: skip

    def held(job):  # what the caller got back, read like the row
        row = {f.attname: getattr(job, f.attname) for f in Job._meta.concrete_fields}
        return {k: v for k, v in row.items() if k not in ("id", "uuid", "array_id")}

    assert {single.array_id for single in singles} == {None}
    assert len({item.array_id for item in many}) == 1 and many[0].array_id is not None
    for single in singles:  # the oracle: the row Django's own save writes from those values
        saved = Job(**{f.attname: getattr(single, f.attname) for f in Job._meta.concrete_fields})
        saved.pk, saved.uuid = None, uuid.uuid4()
        saved.save(force_insert=True)
        assert raw(saved) == raw(single)
        assert stored(saved) == stored(single)
    for single, item in zip(singles, many, strict=True):
        assert stored(item) == stored(single)
        assert raw(item) == raw(single)
        assert events(item) == events(single)
        assert held(item) == stored(item)
        assert Job.objects.get(pk=item.pk).uuid == item.uuid
    assert stored(many[0])["request"]["docker"]["environment"]["NOTE"] == 'ünïcødé "x"'
    # Identical jobs in one array: the same rows, each job its own.
    alike = job_submit_many(
        user=user, project=project, documents=[copy.deepcopy(documents[0])] * 3, now=now
    )
    for item in alike:
        assert stored(item) == stored(singles[0])
        assert raw(item) == raw(singles[0])
        assert events(item) == events(singles[0])
        assert held(item) == stored(item)
    return {"compared": len(many), "vendor": connection.vendor}


def test_an_array_job_is_stored_as_a_single_job():
    assert compare_array_with_single()["compared"] == 3


@pytest.mark.postgres
def test_an_array_job_is_stored_as_a_single_job_on_postgres(tmp_path):
    from tests.support.postgres import run_on_throwaway_database

    result = run_on_throwaway_database(tmp_path, compare_array_with_single)
    assert result == {"compared": 3, "vendor": "postgresql"}
