"""job_submit_many (one rule set with job_submit) and ``manage.py submit_jobs``."""

import copy
import json

import pytest
from django.core.management import CommandError, call_command

from core.errors import NotAllowed
from jobs.actions.services import job_submit_many
from jobs.models import Job, JobEvent
from jobs.spec import SpecError
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
