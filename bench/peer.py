"""The portal beside its real peer, Slurm 22.05 on loopback, in one run; prints one JSON object.

    python bench/peer.py [--seconds 10] [--clients 8] [--sweep 10000] [--runs 5]
                         [--docker unix:///var/run/docker.sock] [--no-slurm]

Needs root, Debian's Slurm packages (``apt-get install slurm-wlm slurmrestd munge``; see
bench/peers/slurm.py for how they are run) and, for the latencies, a Docker engine with the test
image. The phases, portal first (each side's server idle while the other runs):

- single submits: ``--clients`` clients for ``--seconds``, one connection per request.
  Portal: ``POST /api/gpulab/v4.0/jobs`` on gunicorn (sync x3, SQLite in a temporary directory
  or, with ``--database-url postgres://...``, a fresh PostgreSQL database there; production settings and task mode: the tick is requested, no scheduler runs), beside its floor
  (bench/floor.py: a bare token-authenticated insert on the same stack). Slurm: ``POST
  /slurm/v0.0.38/job/submit`` to slurmrestd, held jobs. Per submit: the servers' CPU time
  (gunicorn and its workers; slurmrestd, slurmctld and munged), read with psutil.
- a ``--sweep``-job sweep: the portal's array API (``POST /api/portal/jobs/array``, the sweep
  form, in requests of ``PORTAL_ARRAY_MAX_JOBS`` jobs) against ``sbatch --array`` (and the same
  array through slurmrestd), wall time and the servers' CPU.
- latency: submit -> running and job end -> the next job running. Portal: bench/launch.py
  ``--mode queue`` (the deployed processes: a q cluster and the watcher, Docker; creation ->
  RUNNING event; the container's finish -> the next job's RUNNING). Slurm: the job scripts'
  own clocks (see bench/peers/slurm.py).

The machine's load average is printed beside (the start, the end, and each side's).
"""

if __name__ == "__main__":
    import _django  # noqa: F401  (bench/_django.py: the repository root on the path, Django set up)

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from bench import api
from bench.peers import slurm as slurm_peer


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def server_pids(server: api.Server) -> list[int]:
    """gunicorn's master and its workers."""
    master = psutil.Process(server.proc.pid)
    return [master.pid, *(child.pid for child in master.children(recursive=True))]


class Command(BaseCommand):
    help = "The portal beside Slurm 22.05 on loopback: submits, a sweep, latencies (JSON)."

    def add_arguments(self, parser):
        parser.add_argument("--seconds", type=float, default=10.0, help="per submit phase")
        parser.add_argument("--clients", type=int, default=8)
        parser.add_argument("--sweep", type=int, default=10_000, help="jobs in the sweep")
        parser.add_argument("--runs", type=int, default=5, help="latency runs (0: none)")
        parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
        parser.add_argument("--docker", default=None, help="engine URL for the latencies")
        parser.add_argument("--image", default="gpuportal/busybox:latest")
        parser.add_argument("--no-slurm", action="store_true", help="the portal's side only")
        parser.add_argument(
            "--database-url",
            default="",
            help="postgres://... : the portal's submits and sweep on a fresh database there "
            "(else SQLite)",
        )

    def handle(self, *args, **o):
        if not o["no_slurm"]:
            try:
                slurm_peer.check_available()
            except slurm_peer.SlurmUnavailable as reason:
                raise CommandError(f"{reason} (or --no-slurm)") from None
        report: dict = {
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": {
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "loadavg_start": _loadavg(),
            },
            "clients": o["clients"],
            "seconds_per_phase": o["seconds"],
        }
        portal = self._portal(o)
        portal["loadavg_end"] = _loadavg()
        peer = None
        if not o["no_slurm"]:
            peer = slurm_peer.measure(
                seconds=o["seconds"],
                clients=o["clients"],
                sweep_jobs=o["sweep"],
                runs=o["runs"],
                keep=False,
            )
            peer["loadavg_end"] = _loadavg()
        report["single_submits"] = {
            "portal": portal.pop("single_submits"),
            "portal_floor": portal.pop("floor"),
            "slurm": peer.pop("single_submits") if peer else None,
        }
        report["sweep"] = {
            "portal": portal.pop("sweep"),
            "slurm": peer.pop("sweep") if peer else None,
        }
        report["latency"] = {
            "portal": portal.pop("latency"),
            "slurm": peer.pop("latency") if peer else None,
        }
        report["portal"] = portal
        report["slurm"] = peer
        report["machine"]["loadavg_end"] = _loadavg()
        self.stdout.write(json.dumps(report, indent=2))

    # -- the portal ----------------------------------------------------------------------------

    def _portal(self, o) -> dict:
        var = Path(tempfile.mkdtemp(prefix="bench_peer_"))
        env = api.measured_env(var)
        env.pop("PORTAL_REDIS_URL", None)
        pg = api.FreshPostgres(o["database_url"]) if o["database_url"] else None
        if pg:
            env["PORTAL_DATABASE_URL"] = pg.url
        out: dict = {
            "database": "postgresql" if pg else "sqlite",
            "server": f"gunicorn sync x{o['workers']}",
        }
        server = None
        try:
            api._manage(env, "migrate", "--no-input")
            keys_file = var / "keys.json"
            api._manage(
                env, "--seed-into", str(keys_file), "--jobs", "0", "--clients",
                str(min(o["clients"], 20)), program=str(Path(api.__file__).resolve()),
            )  # fmt: skip
            tokens = json.loads(keys_file.read_text())["keys"]
            server = api.Server(env, workers=o["workers"], worker_class="sync", threads=1)
            out["floor"] = self._submits(server, tokens, o, api.FLOOR, "floor")
            out["single_submits"] = self._submits(server, tokens, o, api.API + "jobs", "submit")
            out["sweep"] = self._sweep(server, tokens[0], o["sweep"]) if o["sweep"] else None
        finally:
            if server:
                server.stop()
            if pg:
                pg.drop()
            shutil.rmtree(var, ignore_errors=True)
        out["latency"] = self._latency(o) if o["runs"] else None
        return out

    def _submits(self, server, tokens, o, path, kind) -> dict:
        body = json.dumps(api.JOB)

        def pick(rng, token):
            return kind, "POST", path, body

        pids = server_pids(server)
        cpu_before = slurm_peer.cpu_seconds(pids)
        result = api.drive(
            port=server.port, tokens=tokens, seconds=o["seconds"], pick=pick, clients=o["clients"]
        )
        cpu = slurm_peer.cpu_seconds(pids) - cpu_before
        merged = api._merge([result], kind)
        ok = merged["statuses"].get("201", 0)
        merged.update(
            seconds=result["seconds"],
            server_cpu_s=round(cpu, 2),
            server_cpu_ms_per_submit=round(cpu * 1000 / ok, 2) if ok else None,
        )
        return merged

    def _sweep(self, server, token, jobs: int) -> dict:
        chunk = settings.PORTAL_ARRAY_MAX_JOBS
        template = json.loads(json.dumps(api.JOB))
        template["name"] = "sweep-${index}"
        template["request"]["docker"]["command"] = "true ${index}"
        pids = server_pids(server)
        cpu_before, began = slurm_peer.cpu_seconds(pids), time.perf_counter()
        created, requests = 0, 0
        for start in range(0, jobs, chunk):
            size = min(chunk, jobs - start)
            body = json.dumps({"project": "bench", "template": template, "variations": [{}] * size})
            status, data, _ = api.request("POST", server.port, api.ARRAY, body, token)
            requests += 1
            if status != 201:
                raise CommandError(f"array submit answered {status}: {data[:300]!r}")
            created += len(json.loads(data)["uuids"])
        seconds = time.perf_counter() - began
        cpu = slurm_peer.cpu_seconds(pids) - cpu_before
        return {
            "jobs": created,
            "requests": requests,
            "jobs_per_request": chunk,
            "form": "sweep (template + {} variations)",
            "seconds": round(seconds, 3),
            "jobs_per_s": round(created / seconds, 1),
            "server_cpu_s": round(cpu, 2),
            "server_cpu_ms_per_job": round(cpu * 1000 / created, 3) if created else None,
        }

    def _latency(self, o) -> dict:
        launch = Path(__file__).resolve().parent / "launch.py"
        args = ["--mode", "queue", "--runs", str(o["runs"]), "--image", o["image"]]
        args += ["--docker", o["docker"]] if o["docker"] else []
        done = subprocess.run(
            [sys.executable, str(launch), *args], capture_output=True, text=True, timeout=600
        )
        if done.returncode:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return {"skipped": "bench/launch.py --mode queue failed: " + " | ".join(tail)}
        full = json.loads(done.stdout)
        keep = (
            "mode", "engine", "broker_poll_s", "submit_to_running_s", "exit_to_next_running_s",
            "exit_to_finished_s", "freed_gpus_to_next_running_s", "bare_docker_run_s",
        )  # fmt: skip
        return {key: full.get(key) for key in keep} | {"runs": o["runs"]}


if __name__ == "__main__":
    _django.run(Command)
