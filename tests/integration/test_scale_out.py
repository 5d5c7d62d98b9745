"""Scale-out on real engines: PostgreSQL, Redis as django-q2's broker, 2 web processes, 2 q
clusters, one slave watcher and 3 Docker engines, with 200 jobs from concurrent clients.

Every job must reach a true end state (FINISHED), be assigned exactly once, and no GPU may be
held by two jobs at any moment; nothing is lost or duplicated. Two checks of "never held twice":
a sampler reads the jobs holding resources several times a second (one SELECT is a consistent
snapshot on PostgreSQL), and afterwards each (slave, GPU)'s holding intervals are compared using
JobEvent ids as the clock (an id is taken inside its transaction, so a job assigned a GPU after
another freed it has a larger ASSIGNED id than the other's end event id; wall-clock event times
would not order a tick's ``now`` against a finish committed during the tick).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse, urlunparse

import pytest

from jobs.states import HOLDS_RESOURCES
from tests.integration.docker_support import (
    docker_url,
    require_docker,
    require_extra_engine,
)
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
from tests.support.brokers import require_redis
from tests.support.services import require

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

JOBS = 200
ARRAYS = 2  # of the 200, two array submissions of ARRAY_SIZE jobs each
ARRAY_SIZE = 25
CLIENTS = 8
GPUS_PER_SLAVE = 2
DEADLINE_S = 240
END_STATES = ("FINISHED", "FAILED", "CANCELLED")


def _pg_problem(url: str) -> str | None:
    if not url:
        return "PORTAL_TEST_POSTGRES_URL is not set"
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3):
            return None
    except Exception as exc:
        return f"PostgreSQL at PORTAL_TEST_POSTGRES_URL not reachable ({exc})"


@pytest.fixture
def pg_database():
    url = os.environ.get("PORTAL_TEST_POSTGRES_URL", "")
    problem = _pg_problem(url)
    require("postgres", problem is None, problem or "")
    import psycopg

    name = f"portal_scale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunparse(urlparse(url)._replace(path=f"/{name}"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def engines():
    require_docker(docker_url())
    return [docker_url(), require_extra_engine(0), require_extra_engine(1)]


@pytest.fixture
def instance(engines):
    """A portal instance id of its own; its containers and Redis keys are removed afterwards."""
    name = f"scale-{uuid.uuid4().hex[:10]}"
    redis_url = require_redis()
    yield name
    site_cleanup(name, engines, redis_url)


class Sampler(threading.Thread):
    """Reads which GPUs the jobs holding resources hold, several times a second."""

    def __init__(self, db_url: str):
        super().__init__(daemon=True)
        self.db_url, self.stop = db_url, threading.Event()
        self.samples, self.doubles = 0, []

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while not self.stop.is_set():
                rows = conn.execute(
                    "select slave_id, gpu_ids from jobs_job where status = any(%s)",
                    [sorted(HOLDS_RESOURCES)],
                ).fetchall()
                held = Counter((slave, gpu) for slave, gpus in rows for gpu in gpus)
                self.doubles += [key for key, count in held.items() if count > 1]
                self.samples += 1
                self.stop.wait(0.2)


def test_two_webs_two_clusters_three_engines_200_jobs(pg_database, engines, instance, tmp_path):
    import psycopg

    env = {
        **os.environ,
        "PORTAL_DATABASE_URL": pg_database,
        "PORTAL_REDIS_URL": require_redis(),
        "PORTAL_INSTANCE": instance,
        "PORTAL_VAR_DIR": str(tmp_path / "var"),
        "PORTAL_TASK_MODE": "queue",
        "PORTAL_Q_WORKERS": "2",
        "PORTAL_DEBUG": "false",
        "PORTAL_SECRET_KEY": "scale-out-test-" + instance,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PYTHONPATH": str(ROOT),
        "SCALE_ENGINES": json.dumps(engines),
        "SCALE_GPUS": str(GPUS_PER_SLAVE),
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    seeded = subprocess.run(
        [*manage, "shell", "-c", SITE_SEED], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert seeded.returncode == 0, seeded.stderr
    token = seeded.stdout.strip().splitlines()[-1]

    processes = Processes(env, tmp_path)
    ports = [free_port(), free_port()]
    sampler = Sampler(pg_database)
    try:
        for n, port in enumerate(ports):
            processes.start(f"web{n}", web_command(port))
        for n in range(2):
            processes.start(f"qcluster{n}", [*manage, "qcluster"])
        processes.start("watcher", [*manage, "watch_slaves"])
        for port in ports:
            wait_for_web(port, processes)
        sampler.start()

        began = time.monotonic()
        singles = JOBS - ARRAYS * ARRAY_SIZE
        requests = [("single", n) for n in range(singles)] + [("array", a) for a in range(ARRAYS)]

        def send(item):
            kind, n = item
            port = ports[n % 2]
            if kind == "single":
                status, body = post(port, "/api/gpulab/v4.0/jobs", token, job_document(n))
                assert status == 201, body
                return [body.decode().strip()]
            documents = [job_document(singles + n * ARRAY_SIZE + i) for i in range(ARRAY_SIZE)]
            status, body = post(port, "/api/portal/jobs/array", token, {"jobs": documents})
            assert status == 201, body
            return json.loads(body)["uuids"]

        with ThreadPoolExecutor(CLIENTS) as pool:
            submitted = [u for uuids in pool.map(send, requests) for u in uuids]
        submit_s = time.monotonic() - began

        with psycopg.connect(pg_database, autocommit=True) as conn:
            while True:
                counts = dict(
                    conn.execute("select status, count(*) from jobs_job group by status").fetchall()
                )
                if sum(counts.get(s, 0) for s in END_STATES) >= JOBS:
                    break
                assert not processes.dead(), f"{processes.dead()} exited\n{processes.tails()}"
                assert time.monotonic() - began < DEADLINE_S, (
                    f"not done after {DEADLINE_S}s: {counts}\n{processes.tails()}"
                )
                time.sleep(1)
        total_s = time.monotonic() - began
    finally:
        sampler.stop.set()
        processes.stop()
    sampler.join(timeout=5)

    with psycopg.connect(pg_database) as conn:
        jobs = conn.execute(
            "select id, uuid::text, status, slave_id, gpu_ids, end_reason from jobs_job"
        ).fetchall()
        events = conn.execute(
            "select id, job_id, new_state from jobs_jobevent where new_state <> '' order by id"
        ).fetchall()

    # Nothing lost, nothing duplicated, every job really ran to its end.
    assert len(submitted) == JOBS and len(set(submitted)) == JOBS
    assert sorted(u for _, u, *_ in jobs) == sorted(submitted)
    not_finished = [
        (u, status, reason) for _, u, status, _, _, reason in jobs if status != "FINISHED"
    ]
    assert not_finished == [], not_finished[:5]

    # Exactly one assignment per job, and each job's GPU is held from its ASSIGNED event to its
    # end event (ids as the clock); no two holding intervals of one (slave, GPU) overlap.
    assigned = defaultdict(list)
    ended = {}
    for event_id, job_id, state in events:
        if state == "ASSIGNED":
            assigned[job_id].append(event_id)
        elif state in END_STATES:
            ended[job_id] = event_id
    assert {job_id: len(ids) for job_id, ids in assigned.items() if len(ids) != 1} == {}
    assert len(assigned) == JOBS
    intervals = defaultdict(list)
    for job_id, _, _, slave_id, gpu_ids, _ in jobs:
        assert len(gpu_ids) == 1
        for gpu in gpu_ids:
            intervals[(slave_id, gpu)].append((assigned[job_id][0], ended[job_id], job_id))
    overlaps = []
    for key, spans in intervals.items():
        spans.sort()
        for (_, end, first), (start, _, second) in zip(spans, spans[1:], strict=False):
            if start < end:
                overlaps.append((key, first, second))
    assert overlaps == []
    assert len(intervals) == len(engines) * GPUS_PER_SLAVE  # every GPU of every engine was used
    assert sampler.samples > 10 and sampler.doubles == []
    # Both q clusters took tasks from the one Redis queue.
    for name in ("qcluster0", "qcluster1"):
        assert "Processed 'jobs.tasks." in (tmp_path / f"{name}.log").read_text(errors="replace")

    print(
        f"\nscale-out: {JOBS} jobs, submitted in {submit_s:.1f}s, all FINISHED after "
        f"{total_s:.1f}s; {sampler.samples} samples, no GPU held twice"
    )
