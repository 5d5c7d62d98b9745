"""Benchmark the API on the production server (gunicorn) against SQLite or PostgreSQL; JSON out.

    python bench/api.py                              # SQLite in a temporary var dir
    python bench/api.py --database-url postgres://portal:portal@127.0.0.1:5432/postgres
    python bench/api.py --mode mixed --clients 100   # issue 10's 60/30/10 load on 10,000 jobs
    python bench/api.py --port 8123                  # gunicorn on that port (default: a free one)

With a PostgreSQL URL a fresh database (``bench_api_<random>``) is created on that server and
dropped at the end. The portal runs as ``gunicorn portal.wsgi`` with PORTAL_DEBUG=false and its
production task mode (django-q2's queue; no cluster consumes it, as submits only enqueue) and
the settings ``bench.settings`` (the portal's, with bench/urls.py: the floor beside every route).

Modes:
- ``throughput`` (default): seeds ``--jobs`` jobs (100,000), then, with ``--clients`` concurrent
  clients (8) for ``--seconds`` each: the floor (a bare DRF token-authenticated insert,
  bench/floor.py), single submissions (``POST jobs``), and the 50-job list page. Floor
  and submit alternate over ``--rounds`` rounds so that neither gets the fresher database.
  Reports requests/s, p50 and p99 of each and submit/floor.
- ``mixed``: seeds ``--jobs`` queued jobs (use 10,000), then ``--clients`` clients (use 100) send
  60% list, 30% get, 10% submit; reports server errors, p50/p99 per kind and overall, and on
  PostgreSQL the most connections the database saw.

Array submission: ``--array-size N`` adds a phase of ``POST /api/portal/jobs/array`` requests of
N jobs each (:func:`array_document`, the list form); ``jobs_per_s`` is the jobs created per
second. ``--array-only`` runs that phase alone (after seeding).
"""

from __future__ import annotations

if __name__ == "__main__":
    import _django  # noqa: F401  (bench/_django.py: the repository root on the path, Django set up)

import http.client
import json
import os
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils import timezone

from accounts.models import Membership, Project
from accounts.tokens import api_token_rotate
from bench.floor import create_floor_table
from clusters.models import Cluster, Gpu, Slave
from jobs.models import Job
from jobs.spec import parse_job_document
from jobs.spec.v2 import columns_from_request
from jobs.user_actions.services import spec_defaults

API = "/api/gpulab/v4.0/"
FLOOR = "/api/portal/bench/floor"
JOB = {
    "name": "bench",
    "request": {
        "resources": {"clusterId": 1, "gpus": 1, "cpus": 2, "cpuMemoryGb": 4},
        "docker": {"image": "debian:stable", "command": "true"},
    },
}


ARRAY = "/api/portal/jobs/array"


def array_document(size: int) -> dict | None:
    """The body of one array submission creating ``size`` jobs (docs/api.md, "Array
    submissions"): the list form, every job a full document with its own name and command, the
    costlier of the two forms to check (the sweep form is one template and ``{}`` patches)."""
    jobs = []
    for index in range(size):
        job = json.loads(json.dumps(JOB))
        job["name"] = f"bench-{index}"
        job["request"]["docker"]["command"] = f"true {index}"
        jobs.append(job)
    return {"project": "bench", "jobs": jobs}


# --- the server ---------------------------------------------------------------------------


def measured_env(var: Path) -> dict:
    """The environment of a measured portal: production settings, its own var dir and SQLite
    database (the caller sets PORTAL_DATABASE_URL for PostgreSQL)."""
    env = {
        **os.environ,
        "PORTAL_VAR_DIR": str(var),
        "PORTAL_DEBUG": "false",
        "PORTAL_SECRET_KEY": secrets.token_hex(32),
        "PORTAL_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "PORTAL_TASK_MODE": "queue",
        "PORTAL_LOG_LEVEL": "WARNING",
    }
    env.pop("PORTAL_DATABASE_URL", None)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listen_port(requested: int | None) -> int:
    """The port the server listens on: the caller's (``--port``), else a free one."""
    return requested if requested else _free_port()


def _manage(env: dict, *args: str, timeout: int = 1800, program: str = "") -> str:
    """``manage.py ARGS`` (or the script ``program ARGS``) in a child process with ``env``."""
    program = program or str(Path(settings.BASE_DIR) / "manage.py")
    result = subprocess.run(
        [sys.executable, program, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        name = Path(program).name
        raise CommandError(f"{name} {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result.stdout


class Server:
    """``gunicorn portal.wsgi`` on 127.0.0.1:``port`` (a free port when none is given), with
    ``env`` and the settings ``bench.settings`` (the portal's, and the floor's route)."""

    def __init__(
        self, env: dict, *, workers: int, worker_class: str, threads: int, port: int | None = None
    ):
        self.port = listen_port(port)
        env = {**env, "DJANGO_SETTINGS_MODULE": "bench.settings"}
        gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or shutil.which(
            "gunicorn"
        )
        if gunicorn is None:
            raise CommandError("bench/api.py runs the portal on gunicorn: pip install gunicorn")
        cmd = [
            gunicorn,
            "portal.wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--threads",
            str(threads),
            "--timeout",
            "120",
            "--backlog",
            "2048",
            "--log-level",
            "warning",
        ]
        self.log = open(Path(env["PORTAL_VAR_DIR"]) / "gunicorn.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=settings.BASE_DIR, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                status, _, _ = request("GET", self.port, API + "version", None, None)
                if status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        tail = Path(self.log.name).read_text()[-2000:]
        raise CommandError(f"gunicorn did not start on port {self.port}:\n{tail}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def request(method, port, path, body, token, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        hdrs = {"Connection": "close", **(headers or {})}
        if token:
            hdrs["Authorization"] = f"Token {token}"
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=hdrs)
        response = conn.getresponse()
        data = response.read()
        return response.status, data, response
    finally:
        conn.close()


# --- load ---------------------------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def drive(*, port, tokens, seconds, pick, clients, think_s=0.0, on_tick=None) -> dict:
    """``clients`` threads, each sending ``pick(rng, token)`` -> (kind, method, path, body)
    requests back to back for ``seconds``; answers per-kind latencies and status counts."""
    stop_at = time.monotonic() + seconds
    results: list[tuple[str, int, float]] = []
    lock = threading.Lock()
    errors: list[str] = []

    def client(index: int) -> None:
        rng = random.Random(index)
        token = tokens[index % len(tokens)]
        mine = []
        while time.monotonic() < stop_at:
            kind, method, path, body = pick(rng, token)
            started = time.perf_counter()
            try:
                status, data, _ = request(method, port, path, body, token)
            except OSError as failure:
                status, data = 0, str(failure).encode()
            mine.append((kind, status, time.perf_counter() - started))
            if status >= 500 or status == 0:
                with lock:
                    if len(errors) < 5:
                        errors.append(f"{status} {kind}: {data[:200]!r}")
            if think_s:
                time.sleep(think_s * rng.uniform(0.5, 1.5))
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        if on_tick:
            on_tick()
        time.sleep(0.25)
    elapsed = time.monotonic() - started
    kinds: dict[str, dict] = {}
    for kind in sorted({k for k, _, _ in results}):
        rows = [(s, t) for k, s, t in results if k == kind]
        ok = [t for s, t in rows if 200 <= s < 300]
        kinds[kind] = {
            "requests": len(rows),
            "ok_per_s": round(len(ok) / elapsed, 1),
            "p50_ms": _ms(_percentile(ok, 0.5)),
            "p99_ms": _ms(_percentile(ok, 0.99)),
            "statuses": {str(s): sum(1 for x, _ in rows if x == s) for s in {x for x, _ in rows}},
        }
    every = [t for _, _, t in results]
    return {
        "seconds": round(elapsed, 1),
        "requests": len(results),
        "server_errors": sum(1 for _, s, _ in results if s >= 500 or s == 0),
        "p50_ms": _ms(_percentile(every, 0.5)),
        "p99_ms": _ms(_percentile(every, 0.99)),
        "max_ms": _ms(max(every) if every else None),
        "kinds": kinds,
        "first_errors": errors,
    }


# --- seeding (runs in a child process against the bench database) --------------------------


def seed(*, jobs: int, users: int, keys_file: str) -> None:

    create_floor_table()
    cluster = Cluster.objects.create(id=1, comment="bench_api")
    for n in range(4):
        slave = Slave.objects.create(
            name=f"bench{n}",
            cluster=cluster,
            docker_url="unix:///bench.sock",
            cpus_total=64,
            memory_total_mb=512 * 1024,
            cuda_version="12.2",
            online=True,
            offline_reason="",
            last_seen=timezone.now(),
        )
        for index in range(8):
            Gpu.objects.create(slave=slave, index=index, model="A100", memory_mb=40960)
    project = Project.objects.create(name="bench", gid=9000)
    keys, owners = [], []
    for n in range(users):
        user = get_user_model().objects.create_user(f"bench{n}")
        Membership.objects.create(user=user, project=project)
        keys.append(api_token_rotate(user=user, name="bench")[1])
        owners.append(user)
    canonical, _ = parse_job_document(json.loads(json.dumps(JOB)), defaults=spec_defaults())
    request = canonical["request"]
    columns = columns_from_request(request)
    now = timezone.now()
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    batch: list[Job] = []
    uuids: list[str] = []
    for n in range(jobs):
        job_uuid = uuid.uuid4()
        uuids.append(str(job_uuid))
        batch.append(
            Job(
                uuid=job_uuid,
                name=f"seed-{n}",
                owner=owners[n % len(owners)],
                project=project,
                request=request,
                status="QUEUED",
                status_updated=now,
                created=now,
                event_times={"created": stamp, "statusUpdated": stamp, "QUEUED": stamp},
                **columns,
            )
        )
        if len(batch) == 2000:
            Job.objects.bulk_create(batch)
            batch = []
    Job.objects.bulk_create(batch)
    if connection.vendor == "postgresql":
        # A database in service has been vacuumed and analysed; a freshly loaded one has not.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    Path(keys_file).write_text(json.dumps({"keys": keys, "jobs": uuids[-2000:]}))


# --- PostgreSQL -------------------------------------------------------------------------------


class FreshPostgres:
    """A new database on the server of ``url``, dropped at the end."""

    def __init__(self, url: str):
        import psycopg

        self.admin_url = url
        self.name = "bench_api_" + secrets.token_hex(4)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        parsed = urlparse(url)
        self.url = urlunparse(parsed._replace(path="/" + self.name))

    def connections(self) -> int:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [self.name]
            ).fetchone()
        return int(row[0])

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


# --- the command ------------------------------------------------------------------------------


class Command(BaseCommand):
    help = "Drive the API on gunicorn with concurrent clients (SQLite or PostgreSQL); JSON."

    def add_arguments(self, parser):
        parser.add_argument("--mode", choices=["throughput", "mixed"], default="throughput")
        parser.add_argument("--database-url", default="", help="postgres://... (else SQLite)")
        parser.add_argument("--clients", type=int, default=None, help="8; mixed: 100")
        parser.add_argument("--jobs", type=int, default=None, help="100,000; mixed: 10,000")
        parser.add_argument("--seconds", type=float, default=15.0, help="per phase")
        parser.add_argument("--rounds", type=int, default=2, help="floor/submit alternations")
        parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
        parser.add_argument("--worker-class", default="sync")
        parser.add_argument("--threads", type=int, default=1)
        parser.add_argument("--think-ms", type=float, default=0.0, help="mixed: pause per client")
        parser.add_argument("--array-size", type=int, default=0)
        parser.add_argument(
            "--array-only", action="store_true", help="throughput: only the array phase"
        )
        parser.add_argument("--pool-max", type=int, default=None, help="PORTAL_DB_POOL_MAX")
        parser.add_argument(
            "--port", type=int, default=0, help="gunicorn's port on 127.0.0.1 (default: a free one)"
        )
        parser.add_argument("--seed-into", default="", help=f"internal: seed and exit ({os.sep})")

    def handle(self, *args, **o):
        if o["seed_into"]:
            seed(jobs=o["jobs"], users=o["clients"], keys_file=o["seed_into"])
            return
        mixed = o["mode"] == "mixed"
        clients = o["clients"] or (100 if mixed else 8)
        jobs = o["jobs"] if o["jobs"] is not None else (10_000 if mixed else 100_000)
        users = min(clients, 20)
        var = Path(tempfile.mkdtemp(prefix="bench_api_"))
        pg = FreshPostgres(o["database_url"]) if o["database_url"] else None
        env = measured_env(var)
        if pg:
            env["PORTAL_DATABASE_URL"] = pg.url
        if o["pool_max"] is not None:
            env["PORTAL_DB_POOL_MAX"] = str(o["pool_max"])
        report: dict = {
            "mode": o["mode"],
            "database": "postgresql" if pg else "sqlite",
            "server": f"gunicorn {o['worker_class']} x{o['workers']} (threads {o['threads']})",
            "clients": clients,
            "jobs_seeded": jobs,
            "cpus": os.cpu_count(),
        }
        server = None
        try:
            _manage(env, "migrate", "--no-input")
            keys_file = var / "keys.json"
            started = time.monotonic()
            _manage(
                env,
                "--seed-into",
                str(keys_file),
                "--jobs",
                str(jobs),
                "--clients",
                str(users),
                program=str(Path(__file__).resolve()),
            )
            report["seed_s"] = round(time.monotonic() - started, 1)
            seeded = json.loads(keys_file.read_text())
            server = Server(
                env,
                workers=o["workers"],
                worker_class=o["worker_class"],
                threads=o["threads"],
                port=o["port"],
            )
            report["port"] = server.port
            run = self._mixed if mixed else self._throughput
            report.update(run(server.port, seeded, clients, o, pg))
        finally:
            if server:
                server.stop()
            if pg:
                pg.drop()
            shutil.rmtree(var, ignore_errors=True)
        self.stdout.write(json.dumps(report, indent=2))

    # -- throughput ---------------------------------------------------------------------------

    def _throughput(self, port, seeded, clients, o, pg) -> dict:
        tokens = seeded["keys"]
        if o["array_only"]:  # A/B runs of array submission alone, without the other phases
            return {"array": self._array(port, tokens, clients, o)}
        job_body = json.dumps(JOB)

        def floor(rng, token):
            return "floor", "POST", FLOOR, job_body

        def submit(rng, token):
            return "submit", "POST", API + "jobs", job_body

        def listing(rng, token):
            return "list", "GET", API + "jobs?page_size=50", None

        seconds, rounds = o["seconds"], max(1, o["rounds"])
        phases: dict[str, list[dict]] = {"floor": [], "submit": []}
        for n in range(rounds):
            order = ("floor", "submit") if n % 2 == 0 else ("submit", "floor")
            for name in order:
                pick = floor if name == "floor" else submit
                phases[name].append(
                    drive(port=port, tokens=tokens, seconds=seconds / rounds, pick=pick,
                          clients=clients)
                )  # fmt: skip
        out: dict = {}
        for name, runs in phases.items():
            out[name] = _merge(runs, name)
        out["submit_vs_floor"] = (
            round(out["submit"]["ok_per_s"] / out["floor"]["ok_per_s"], 3)
            if out["floor"]["ok_per_s"]
            else None
        )
        listed = drive(port=port, tokens=tokens, seconds=seconds, pick=listing, clients=clients)
        out["list_50"] = _merge([listed], "list")
        out["array"] = self._array(port, tokens, clients, o)
        return out

    def _array(self, port, tokens, clients, o) -> dict | None:
        size = o["array_size"]
        document = array_document(size) if size else None
        if document is None:
            return None
        body = json.dumps(document)

        def pick(rng, token):
            return "array", "POST", ARRAY, body

        result = drive(port=port, tokens=tokens, seconds=o["seconds"], pick=pick, clients=clients)
        merged = _merge([result], "array")
        merged["jobs_per_s"] = round(merged["ok_per_s"] * size, 1)
        return merged

    # -- mixed -------------------------------------------------------------------------------

    def _mixed(self, port, seeded, clients, o, pg) -> dict:
        tokens, uuids = seeded["keys"], seeded["jobs"]
        job_body = json.dumps(JOB)

        def pick(rng, token):
            roll = rng.random()
            if roll < 0.6:
                page = rng.randint(1, 20)
                return "list", "GET", f"{API}jobs?page_size=50&page={page}", None
            if roll < 0.9:
                return "get", "GET", API + "jobs/" + rng.choice(uuids), None
            return "submit", "POST", API + "jobs", job_body

        most = {"connections": 0}

        def watch():
            if pg is not None:
                most["connections"] = max(most["connections"], pg.connections())

        result = drive(
            port=port,
            tokens=tokens,
            seconds=o["seconds"],
            pick=pick,
            clients=clients,
            think_s=o["think_ms"] / 1000,
            on_tick=watch,
        )
        result["think_ms"] = o["think_ms"]
        if pg is not None:
            result["max_db_connections"] = most["connections"]
        return {"mixed": result}


def _merge(runs: list[dict], kind: str) -> dict:
    """One phase's figures over its rounds (rates averaged, latencies of the worst round)."""
    parts = [r["kinds"].get(kind, {"requests": 0, "ok_per_s": 0.0}) for r in runs]
    statuses: dict[str, int] = {}
    for part in parts:
        for status, count in part.get("statuses", {}).items():
            statuses[status] = statuses.get(status, 0) + count
    return {
        "ok_per_s": round(statistics.mean(p["ok_per_s"] for p in parts), 1),
        "p50_ms": max((p.get("p50_ms") or 0) for p in parts),
        "p99_ms": max((p.get("p99_ms") or 0) for p in parts),
        "requests": sum(p["requests"] for p in parts),
        "statuses": statuses,
        "server_errors": sum(r["server_errors"] for r in runs),
        "first_errors": [e for r in runs for e in r["first_errors"]][:5],
    }


if __name__ == "__main__":
    _django.run(Command)
