"""Scheduler ticks racing on PostgreSQL never assign the same job or the same GPU twice.

Real processes against a fresh PostgreSQL database: each runs ``tick_once`` (bypassing the lease,
to race the apply step itself) or ``tick`` (with the lease), all released at the same instant.
"""

import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.postgres import throwaway_database

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.postgres

SEED = textwrap.dedent(
    """
    from django.contrib.auth.models import User
    from clusters.models import Cluster, Gpu, Slave
    from jobs.user_actions.services import job_submit
    from accounts.models import Membership, Project
    from jobs.user_actions.services import job_submit
    from accounts.models import Membership, Project
    from django.utils import timezone

    cluster = Cluster.objects.create(id=1)
    for n in range(3):
        slave = Slave.objects.create(name=f"gpu{n}", cluster=cluster, docker_url="unix:///x",
            cpus_total=32, memory_total_mb=256 * 1024, online=True, offline_reason="",
            last_seen=timezone.now())
        for i in range(8):
            Gpu.objects.create(slave=slave, index=i, model="Tesla V100", memory_mb=32768)
    for u in range(4):
        user = User.objects.create_user(f"user{u}")
        project = Project.objects.create(name=f"proj{u}", gid=7000 + u)
        Membership.objects.create(user=user, project=project)
        for j in range(25):
            job_submit(user=user, project=project, document={
                "name": f"j{u}-{j}",
                "request": {"resources": {"gpus": 1 + j % 3, "cpus": 2, "cpuMemoryGb": 4},
                            "docker": {"image": "busybox"}}})
    """
)

WORKER = textwrap.dedent(
    """
    import sys, time, django
    django.setup()
    from jobs.scheduler_bridge.tick import tick, tick_once
    go = float(sys.argv[1])
    while time.time() < go:
        time.sleep(0.001)
    if sys.argv[2] == "raw":
        tick_once()
    else:
        tick()
    """
)


@pytest.fixture
def pg_database():
    with throwaway_database("portal_race") as url:
        yield url


def _env(db_url: str, tmp_path) -> dict:
    return {
        **os.environ,
        "PORTAL_DATABASE_URL": db_url,
        "PORTAL_VAR_DIR": str(tmp_path),
        "PORTAL_TASK_MODE": "record",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PYTHONPATH": str(ROOT),
    }


def test_racing_ticks_never_double_assign(pg_database, tmp_path):
    env = _env(pg_database, tmp_path)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    subprocess.run([*manage, "shell", "-c", SEED], env=env, check=True, cwd=ROOT)

    go = time.time() + 3
    # Staggered starts: identical snapshots make identical plans (the status compare-and-swap
    # alone settles those); later workers see part of an earlier worker's assignments, which is
    # when stale GPU choices collide and only the slave lock keeps them apart.
    modes = ["raw"] * 6 + ["lease"] * 2
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(go + 0.015 * index), mode],
            env=env,
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index, mode in enumerate(modes)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err

    import psycopg

    with psycopg.connect(pg_database) as conn:
        assigned_events = conn.execute(
            "select job_id, count(*) from jobs_jobevent where new_state='ASSIGNED' group by job_id"
        ).fetchall()
        rows = conn.execute(
            "select slave_id, gpu_ids from jobs_job where status='ASSIGNED'"
        ).fetchall()
        total_gpus_free = conn.execute("select count(*) from clusters_gpu").fetchone()[0]

    assert assigned_events, "the ticks assigned nothing"
    assert all(count == 1 for _, count in assigned_events), "a job was assigned twice"
    held = Counter((slave_id, gpu) for slave_id, gpu_ids in rows for gpu in gpu_ids)
    assert held and max(held.values()) == 1, "a GPU was handed out twice"
    assert sum(held.values()) <= total_gpus_free
