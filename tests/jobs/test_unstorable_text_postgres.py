"""On PostgreSQL, text it cannot store is a 400 naming the field, not a 500.

PostgreSQL refuses NUL in text (SQLite stores it), so these were 500s there only: a NUL in a
job's name, description, command or an environment value, and ``?user_name=%00``. A lone
surrogate in the name was a 500 on both. A fresh database (unique name, dropped after) is
migrated and served requests through Django's test client in a subprocess, with DEBUG off as in
production.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.postgres import throwaway_database

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres

SCRIPT = textwrap.dedent(
    """
    import json

    from django.contrib.auth.models import User
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.utils import timezone

    from clusters.models import Cluster, Slave
    from jobs.models import Job
    from accounts.models import Membership, Project

    setup_test_environment()
    cluster = Cluster.objects.create(id=1)
    Slave.objects.create(name="gpu1", cluster=cluster, docker_url="unix:///x", cpus_total=16,
        memory_total_mb=65536, online=True, offline_reason="", last_seen=timezone.now())
    user = User.objects.create_user("alice")
    project = Project.objects.create(name="vision", gid=6001)
    Membership.objects.create(user=user, project=project)
    client = Client(raise_request_exception=False)
    client.force_login(user)

    def doc(**docker):
        return {"name": "ok", "description": "d", "request": {
            "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": "busybox", "command": "true", **docker}}}

    answers = {}
    def keep(label, response):
        answers[label] = [response.status_code, response.content.decode("utf-8", "replace")]

    for label, document in {
        "control": doc(),
        "name": {**doc(), "name": "a\\x00b"},
        "description": {**doc(), "description": "a\\x00b"},
        "command": doc(command="echo \\x00"),
        "command list": doc(command=["echo", "\\x00"]),
        "environment value": doc(environment={"FOO": "a\\x00b"}),
        "surrogate name": {**doc(), "name": "a\\ud800b"},
    }.items():
        keep(label, client.post("/api/gpulab/v4.0/jobs", data=json.dumps(document),
                                content_type="application/json"))
    keep("user_name", client.get("/api/gpulab/v4.0/jobs?user_name=%00"))
    keep("web form", client.post("/jobs/new/", {"project": project.pk, "name": "x\\x00"}))
    keep("editor", client.post("/jobs/new/", {"project": project.pk,
        "document": json.dumps({**doc(), "description": "\\x00"})}))
    print("RESULT " + json.dumps(
        {"answers": answers, "jobs": list(Job.objects.values_list("name", flat=True))}))
    """
)


@pytest.fixture
def pg_database():
    with throwaway_database("portal_text") as url:
        yield url


def test_unstorable_text_is_a_400_on_postgres(pg_database, tmp_path):
    env = {
        **os.environ,
        "PORTAL_DATABASE_URL": pg_database,
        "PORTAL_VAR_DIR": str(tmp_path),
        "PORTAL_TASK_MODE": "record",
        "PORTAL_DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PYTHONPATH": str(ROOT),
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    run = subprocess.run(
        [*manage, "shell", "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    answers = result["answers"]

    assert answers["control"][0] == 201, answers["control"]  # the setup reaches the database
    nul = "contains a NUL byte, which cannot be stored"
    expected_paths = {
        "name": "name",
        "description": "description",
        "command": "request.docker.command",
        "command list": "request.docker.command[1]",
        "environment value": "request.docker.environment.FOO",
    }
    for label, path in expected_paths.items():
        status, body = answers[label]
        assert status == 400, (label, body)
        assert f"{path}: {nul}" in json.loads(body)["errors"], (label, body)
    status, body = answers["surrogate name"]
    assert status == 400
    assert json.loads(body)["errors"] == [
        "name: contains an unpaired surrogate, which cannot be stored"
    ]
    status, body = answers["user_name"]
    assert status == 400
    assert json.loads(body) == {
        "error": "invalid query parameter user_name",
        "errors": [f"user_name: {nul}"],
    }
    assert answers["web form"][0] == 400 and f"name: {nul}" in answers["web form"][1]
    assert answers["editor"][0] == 400 and "<code>description</code>" in answers["editor"][1]
    assert result["jobs"] == ["ok"]  # only the control was written
