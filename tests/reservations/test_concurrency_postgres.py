"""Admins creating overlapping reservations at the same instant on PostgreSQL: the capacity rule
holds (the service locks the cluster's row before it checks), so only one of them is written.

Real processes against a fresh PostgreSQL database, all released at the same instant."""

import subprocess
import sys
import textwrap
import time

import pytest

from tests.jobs.test_concurrency_postgres import ROOT, _env, pg_database  # noqa: F401

pytestmark = pytest.mark.postgres

SEED = textwrap.dedent(
    """
    from clusters.models import Cluster, Gpu, Slave
    from django.utils import timezone

    cluster = Cluster.objects.create(id=1)
    slave = Slave.objects.create(name="duo", cluster=cluster, docker_url="unix:///x",
        cpus_total=8, memory_total_mb=16 * 1024, online=True, offline_reason="",
        last_seen=timezone.now())
    for i in range(2):
        Gpu.objects.create(slave=slave, index=i, model="Tesla V100", memory_mb=32768)
    """
)

WORKER = textwrap.dedent(
    """
    import sys, time, django
    django.setup()
    from datetime import UTC, datetime, timedelta
    from clusters.models import Cluster
    from reservations import services
    from reservations.services import ReservationInvalid, reservation_create

    checked = services._capacity_errors

    def slow_check(**kwargs):
        # Widen the gap between the check and the write, so that without the lock the racers
        # would all pass the check before any of them has written.
        errors = checked(**kwargs)
        time.sleep(0.5)
        return errors

    services._capacity_errors = slow_check

    cluster = Cluster.objects.get(pk=1)
    start = datetime(2030, 1, 1, tzinfo=UTC) + timedelta(minutes=int(sys.argv[2]))
    go = float(sys.argv[1])
    while time.time() < go:
        time.sleep(0.001)
    try:
        reservation_create(name="r" + sys.argv[2], cluster=cluster, start=start,
                           end=start + timedelta(days=1), gpu_count=2)
        print("created")
    except ReservationInvalid:
        print("refused")
    """
)


def test_racing_overlapping_creates_write_only_one(pg_database, tmp_path):  # noqa: F811
    env = _env(pg_database, tmp_path)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    subprocess.run([*manage, "shell", "-c", SEED], env=env, check=True, cwd=ROOT)

    go = time.time() + 3
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(go), str(index)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(6)
    ]
    outcomes = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        outcomes.append(out.strip())

    import psycopg

    with psycopg.connect(pg_database) as conn:
        written = conn.execute("select count(*) from reservations_reservation").fetchone()[0]
    # Every pair overlaps and 2 + 2 GPUs exceed the slave's 2: exactly one may exist.
    assert sorted(outcomes) == ["created"] + ["refused"] * 5
    assert written == 1
