"""``manage.py submit_jobs`` takes OpenPAI configs (issue 27 item 4: it refused them): the
seed's config alone becomes its gang, a list of configs each its job, all or none."""

import json

import pytest
from django.core.management import call_command

from clusters.models import Cluster
from gangs.models import JobGang
from jobs.models import Job
from tests.gangs.api.test_openpai_rest import seed_example

pytestmark = pytest.mark.django_db


def one_task(name: str, memory: int = 512) -> dict:
    return {
        "jobName": name,
        "image": "gpuportal/busybox:latest",
        "taskRoles": [
            {"name": "main", "taskNumber": 1, "cpuNumber": 1, "memoryMB": memory,
             "gpuNumber": 0, "command": "echo hi"}
        ],
    }  # fmt: skip


def test_the_seed_config_becomes_its_gang(member, project, slave, second_slave, tmp_path, capsys):
    Cluster.objects.filter(id=1).update(comment="your_virtual_cluster")
    path = tmp_path / "pai.json"
    path.write_text(json.dumps(seed_example()))
    call_command("submit_jobs", str(path), user="alice", project="vision")
    (printed,) = capsys.readouterr().out.split()
    first = Job.objects.get(uuid=printed)
    gang = JobGang.objects.get(pk=first.gang_id)
    assert gang.name == "tensorflow-distributed-jobguid"
    assert Job.objects.filter(gang=gang).count() == 4


def test_a_list_of_configs_each_or_none(member, project, slave, tmp_path, capsys):
    path = tmp_path / "many.json"
    path.write_text(json.dumps([one_task("first"), one_task("second", memory=10)]))
    with pytest.raises(SystemExit):
        call_command("submit_jobs", str(path), user="alice", project="vision")
    assert capsys.readouterr().err.splitlines() == ["jobs[1].taskRoles[0].memoryMB: must be >= 100"]
    assert not Job.objects.exists()
    path.write_text(json.dumps([one_task("first"), one_task("second")]))
    call_command("submit_jobs", str(path), user="alice", project="vision")
    printed = capsys.readouterr().out.split()
    assert [Job.objects.get(uuid=u).name for u in printed] == ["first", "second"]
