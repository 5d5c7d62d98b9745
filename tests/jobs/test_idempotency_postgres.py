"""Two processes submitting with one Idempotency-Key on PostgreSQL create one job.

Both pass the "key unknown" check before either commits (each holds its transaction open for a
moment after creating its job); the unique (user, key) index makes the second wait for the
first, fail, roll back whole and answer the first one's job.
"""

import json
import subprocess
import sys
import textwrap
import time

import pytest

from tests.jobs.test_concurrency_postgres import ROOT, _env, pg_database  # noqa: F401

pytestmark = pytest.mark.postgres

SEED = textwrap.dedent(
    """
    from django.contrib.auth.models import User
    from clusters.models import Cluster, Gpu, Slave
    from accounts.models import Membership, Project

    cluster = Cluster.objects.create(id=1)
    slave = Slave.objects.create(name="gpu0", cluster=cluster, docker_url="unix:///x",
        cpus_total=32, memory_total_mb=256 * 1024, online=True)
    Gpu.objects.create(slave=slave, index=0, model="V100", memory_mb=32768)
    user = User.objects.create_user("alice")
    Membership.objects.create(user=user, project=Project.objects.create(name="vision", gid=1))
    """
)

WORKER = textwrap.dedent(
    """
    import json, sys, time, django
    django.setup()
    from django.contrib.auth.models import User
    from jobs.submit import idempotency
    from jobs.user_actions.services import job_submit
    from accounts.models import Project
    from jobs.submit import idempotency
    from jobs.user_actions.services import job_submit
    from accounts.models import Project

    user, project = User.objects.get(username="alice"), Project.objects.get(name="vision")
    document = {"name": "race", "request": {"resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
        "docker": {"image": "busybox"}}}
    go = float(sys.argv[1])
    while time.time() < go:
        time.sleep(0.001)

    def submit():
        job = job_submit(user=user, project=project, document=document)
        time.sleep(1.0)  # keep the transaction open: the other process passes its check now
        return idempotency.SubmitAnswer(201, str(job.uuid), job)

    answer = idempotency.submit_once(user=user, key="k", digest="d", submit=submit)
    print(json.dumps({"body": answer.body, "replayed": answer.replayed}))
    """
)


def test_concurrent_submits_with_one_key_create_one_job(pg_database, tmp_path):  # noqa: F811
    env = _env(pg_database, tmp_path)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    subprocess.run([*manage, "shell", "-c", SEED], env=env, check=True, cwd=ROOT)
    go = time.time() + 3
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(go)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    answers = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        answers.append(json.loads(out.strip().splitlines()[-1]))
    assert answers[0]["body"] == answers[1]["body"]
    assert sorted(a["replayed"] for a in answers) == [False, True]

    import psycopg

    with psycopg.connect(pg_database) as conn:
        jobs = conn.execute("select uuid::text from jobs_job").fetchall()
        keys = conn.execute("select count(*) from jobs_submitidempotencykey").fetchone()[0]
    assert [row[0] for row in jobs] == [answers[0]["body"]]
    assert keys == 1
