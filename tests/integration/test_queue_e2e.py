"""The whole queue path through a real django-q2 cluster, on the ORM broker and on Redis.

A site on SQLite (the embedded default) with one web process, one ``manage.py qcluster`` and the
slave watcher, on the local Docker engine: jobs submitted over REST (single and array) are
ticked, launched, watched and finished by background tasks that travel through the broker.
"""

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import closing

import pytest

from tests.integration.docker_support import docker_url, require_docker
from tests.integration.site_support import (
    ROOT,
    SITE_SEED,
    Processes,
    free_port,
    job_document,
    post,
    site_cleanup,
    wait_for_web,
    web_command,
)
from tests.support.brokers import BROKERS, require_redis

pytestmark = [pytest.mark.docker, pytest.mark.slow]
SINGLES, ARRAY = 4, 4
DEADLINE_S = 150


@pytest.mark.parametrize("broker", BROKERS)
def test_jobs_run_through_a_real_q_cluster(broker, tmp_path):
    require_docker(docker_url())
    redis_url = require_redis() if broker == "redis" else None
    instance = f"queue-{broker}-{uuid.uuid4().hex[:8]}"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PORTAL_DATABASE_URL", "PORTAL_REDIS_URL")
    }
    env.update(
        PORTAL_VAR_DIR=str(tmp_path / "var"),
        PORTAL_INSTANCE=instance,
        PORTAL_TASK_MODE="queue",
        PORTAL_Q_WORKERS="2",
        DJANGO_SETTINGS_MODULE="portal.settings",
        PYTHONPATH=str(ROOT),
        SCALE_ENGINES=json.dumps([docker_url()]),
        SCALE_GPUS="2",
    )
    if redis_url:
        env["PORTAL_REDIS_URL"] = redis_url
    (tmp_path / "var").mkdir()
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    seeded = subprocess.run(
        [*manage, "shell", "-c", SITE_SEED], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert seeded.returncode == 0, seeded.stderr
    token = seeded.stdout.strip().splitlines()[-1]
    database = tmp_path / "var" / "portal.sqlite3"

    processes = Processes(env, tmp_path)
    port = free_port()
    try:
        processes.start("web", web_command(port))
        processes.start("qcluster", [*manage, "qcluster"])
        processes.start("watcher", [*manage, "watch_slaves"])
        wait_for_web(port, processes)
        submitted = []
        for n in range(SINGLES):
            status, body = post(port, "/api/gpulab/v4.0/jobs", token, job_document(n))
            assert status == 201, body
            submitted.append(body.decode().strip())
        documents = [job_document(SINGLES + n) for n in range(ARRAY)]
        status, body = post(port, "/api/portal/jobs/array", token, {"jobs": documents})
        assert status == 201, body
        submitted += json.loads(body)["uuids"]

        deadline = time.monotonic() + DEADLINE_S
        while True:
            with closing(sqlite3.connect(database, timeout=30)) as conn:
                statuses = dict(conn.execute("select uuid, status from jobs_job").fetchall())
            if all(s in ("FINISHED", "FAILED", "CANCELLED") for s in statuses.values()):
                break
            assert not processes.dead(), processes.tails()
            assert time.monotonic() < deadline, f"{statuses}\n{processes.tails()}"
            time.sleep(1)
    finally:
        processes.stop()
        site_cleanup(instance, [docker_url()], redis_url)

    with closing(sqlite3.connect(database)) as conn:
        events = conn.execute(
            "select job_id, count(*) from jobs_jobevent where new_state = 'ASSIGNED' group by job_id"
        ).fetchall()
        done = {
            func for (func,) in conn.execute("select func from django_q_task where success = 1")
        }
        rows_in_orm_queue = conn.execute("select count(*) from django_q_ormq").fetchone()[0]
    assert len(submitted) == SINGLES + ARRAY
    assert {uuid.UUID(u).hex for u in submitted} == set(statuses)
    assert set(statuses.values()) == {"FINISHED"}
    assert len(events) == SINGLES + ARRAY and {count for _, count in events} == {1}
    # The work went through the q cluster: ticks and launches are recorded tasks (the watcher
    # finishes jobs itself in queue mode).
    assert {"jobs.tasks.scheduler_tick", "jobs.tasks.job_launch"} <= done
    # The cluster served the broker under test and the tasks it fired (launches after a tick)
    # went there too (django-q2 names the queue in its log lines).
    # (On Redis the queue is named after PORTAL_INSTANCE; the ORM broker's keeps its name.)
    queue = f"django_q:{instance}:q" if broker == "redis" else "gpuportal"
    log = (tmp_path / "qcluster.log").read_text(errors="replace")
    assert f"[{queue}] running." in log and f"Enqueued [{queue}]" in log
    if broker == "redis":
        assert rows_in_orm_queue == 0  # the ORM broker's table was never used
