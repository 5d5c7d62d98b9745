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
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest

from jobs.states import HOLDS_RESOURCES
from tests.integration.docker_support import (
    TEST_IMAGE,
    docker_url,
    require_docker,
    require_extra_engine,
)
from tests.support.brokers import require_redis
from tests.support.services import require

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.redis]

JOBS = 200
ARRAYS = 2  # of the 200, two array submissions of ARRAY_SIZE jobs each
ARRAY_SIZE = 25
CLIENTS = 8
GPUS_PER_SLAVE = 2
DEADLINE_S = 240
END_STATES = ("FINISHED", "FAILED", "CANCELLED")

SEED = textwrap.dedent(
    """
    import json, os
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token
    from clusters.models import Cluster
    from clusters.services import slave_declare_gpus, slave_probe, slave_register
    from portal.models import Membership, Project
    from portal.schedules import schedules_ensure

    cluster = Cluster.objects.create(id=1, comment="scale-out")
    for n, url in enumerate(json.loads(os.environ["SCALE_ENGINES"])):
        slave = slave_register(name=f"node{n}", cluster=cluster, docker_url=url, host="127.0.0.1")
        slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * int(os.environ["SCALE_GPUS"]))
        slave = slave_probe(slave=slave)
        assert slave.online, slave.offline_reason
    user = User.objects.create_user("scaler")
    project = Project.objects.create(name="scale", gid=5555)
    Membership.objects.create(user=user, project=project)
    schedules_ensure()
    print(Token.objects.create(user=user).key)
    """
)


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
    from clusters.runtime.engine import DockerEngine

    for url in engines:
        engine = DockerEngine(url)
        try:
            for state in engine.list_by_labels({"gpuportal.instance": name}):
                engine.remove(state.id)
        finally:
            engine.close()
    import redis

    connection = redis.from_url(redis_url)
    keys = list(connection.scan_iter(match=f"django_q:{name}:*"))
    if keys:
        connection.delete(*keys)


class Processes:
    """The portal's processes, each logging to a file; all stopped (by their own pid)."""

    def __init__(self, env: dict, logs: Path):
        self.env, self.logs = env, logs
        self.children: dict[str, subprocess.Popen] = {}
        self.files = []

    def start(self, name: str, command: list[str]) -> None:
        log = open(self.logs / f"{name}.log", "wb")
        self.files.append(log)
        self.children[name] = subprocess.Popen(
            command,
            env=self.env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def dead(self) -> list[str]:
        return [name for name, child in self.children.items() if child.poll() is not None]

    def tails(self, lines: int = 15) -> str:
        out = []
        for name in self.children:
            text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
            out.append(f"--- {name} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def stop(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in self.children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=5)
        for log in self.files:
            log.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _web_command(port: int) -> list[str]:
    gunicorn = Path(sys.executable).with_name("gunicorn")
    if gunicorn.exists():
        return [
            str(gunicorn),
            "portal.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
            "--timeout",
            "60",
        ]
    return [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]


def _wait_for_web(port: int, processes: Processes, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert not processes.dead(), processes.tails()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/gpulab/v4.0/version", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"web on port {port} did not answer\n{processes.tails()}")


def _post(port: int, path: str, token: str, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _document(n: int) -> dict:
    return {
        "name": f"scale-{n}",
        "request": {
            "resources": {"clusterId": 1, "gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": f"sh -c 'sleep 0.{n % 3}'"},
            "scheduling": {"minDuration": "1 minute", "maxDuration": "10 minutes"},
        },
    }


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
        [*manage, "shell", "-c", SEED], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert seeded.returncode == 0, seeded.stderr
    token = seeded.stdout.strip().splitlines()[-1]

    processes = Processes(env, tmp_path)
    ports = [_free_port(), _free_port()]
    sampler = Sampler(pg_database)
    try:
        for n, port in enumerate(ports):
            processes.start(f"web{n}", _web_command(port))
        for n in range(2):
            processes.start(f"qcluster{n}", [*manage, "qcluster"])
        processes.start("watcher", [*manage, "watch_slaves"])
        for port in ports:
            _wait_for_web(port, processes)
        sampler.start()

        began = time.monotonic()
        singles = JOBS - ARRAYS * ARRAY_SIZE
        requests = [("single", n) for n in range(singles)] + [("array", a) for a in range(ARRAYS)]

        def send(item):
            kind, n = item
            port = ports[n % 2]
            if kind == "single":
                status, body = _post(port, "/api/gpulab/v4.0/jobs", token, _document(n))
                assert status == 201, body
                return [body.decode().strip()]
            documents = [_document(singles + n * ARRAY_SIZE + i) for i in range(ARRAY_SIZE)]
            status, body = _post(port, "/api/portal/jobs/array", token, {"jobs": documents})
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
