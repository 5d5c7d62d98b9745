"""Benchmark the launch path on the local engine; prints JSON.

    python bench/launch.py [--docker URL] [--runs N]     # tasks inline, the configured database
    python bench/launch.py --mode queue                  # as deployed, on a temporary database

- submit -> RUNNING: job_submit until the job is RUNNING (tick, assignment, launch), with tasks
  run inline, i.e. the portal's own work without the task broker's poll interval
  (django-q2's ORM broker adds up to Q_CLUSTER["poll"] = 0.2 s per hop in production).
- bare docker run -d: create + start of the same image through the same engine client.
- exit -> FINISHED: from the container's own finish time (Docker's clock) to the job's
  FINISHED status, with the real watcher following the engine's events.
Everything the run creates (user, project, cluster 999, slave, jobs) is removed afterwards.

``--mode queue`` measures the portal as deployed instead: a fresh SQLite database in a temporary
directory, a real ``manage.py qcluster`` (django-q2's ORM broker) and ``manage.py watch_slaves``
as subprocesses, ``PORTAL_TASK_MODE=queue`` (the caller's ``PORTAL_INSTANCE`` is kept, so the
containers carry the caller's label; without one the temporary directory makes its own, as any
fresh installation does), and reports, as p50/p90:

- submit -> RUNNING: the job's creation to its RUNNING event (tick task, launch task, Docker);
- exit -> FINISHED: Docker's finish time of the container to the job's FINISHED;
- freed GPUs -> next RUNNING: a job queued behind the only GPU, from the FINISHED that frees
  it to its own RUNNING event (and ``exit_to_next_running_s``: from Docker's finish time of the
  first job's container to the second job's RUNNING, the two above together);

beside a bare ``docker run`` of the same image measured in the same run.
"""

if __name__ == "__main__":
    import _django  # noqa: F401  (bench/_django.py: the repository root on the path, Django set up)

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.models import Membership, Project
from clusters.models import Cluster, Slave
from clusters.runtime.spec import ContainerSpec
from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
from core.installation import database_migrate_if_needed
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job, JobEvent
from jobs.user_actions.services import job_submit

BENCH_CLUSTER = 999
# How often the inline measurement reads the job back while it waits.
POLL_S = 0.005


def argparse_suppress():
    return argparse.SUPPRESS


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)


def bare_docker_runs(slave, image: str, runs: int) -> list[float]:
    """The floor: seconds of each of ``runs`` bare ``docker run true`` on the slave's engine."""
    bare = []
    with engine_for(slave) as engine:
        for _ in range(runs):
            began = time.perf_counter()
            container = engine.run(ContainerSpec(image=image, command=("true",)))
            bare.append(time.perf_counter() - began)
            engine.remove(container)
    return bare


def queue_env(var: str, environ) -> dict:
    """The environment of queue mode's processes: a fresh SQLite database in ``var`` and the
    ORM broker (no Redis: the measured cluster must consume the measured queue); everything
    else, ``PORTAL_INSTANCE`` included, stays the caller's."""
    env = {**environ, "PORTAL_VAR_DIR": var, "PORTAL_DATABASE_URL": "", "PORTAL_TASK_MODE": "queue"}
    env.pop("PORTAL_REDIS_URL", None)
    return env


class Command(BaseCommand):
    help = "Measure submit->RUNNING and exit->FINISHED against bare docker run (JSON)."

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=10)
        parser.add_argument("--image", default="gpuportal/busybox:latest")
        parser.add_argument("--docker", default=None, help="engine URL (default: local)")
        parser.add_argument(
            "--mode",
            choices=["inline", "queue"],
            default="inline",
            help="inline: tasks run in this process; queue: real q cluster and watcher",
        )
        parser.add_argument(
            "--with-max-duration",
            action="store_true",
            help="queue mode: also time a maxDuration cancel (adds a minute)",
        )
        parser.add_argument("--inner", action="store_true", help=argparse_suppress())

    def handle(self, *args, **o):
        if o["mode"] == "queue":
            if o["inner"]:
                return self._queue_inner(o)
            return self._queue_outer(o)
        database_migrate_if_needed(stderr=self.stderr)
        settings.PORTAL_TASK_MODE = "inline"
        url = o["docker"] or settings.PORTAL_LOCAL_DOCKER_URL
        user = get_user_model().objects.create_user(f"bench-{time.time_ns()}")
        project = Project.objects.create(name=f"bench{time.time_ns() % 10**9}", gid=99999)
        Membership.objects.create(user=user, project=project)
        cluster = Cluster.objects.create(id=BENCH_CLUSTER, comment="bench_launch")
        slave = slave_register(name=f"bench-{time.time_ns()}", cluster=cluster, docker_url=url)
        slave_declare_gpus(slave=slave, gpus=[("Bench GPU", 0)])
        slave = slave_probe(slave=slave)
        stop = threading.Event()
        watch = None
        try:
            if not slave.online:
                raise CommandError(f"engine {url} unreachable: {slave.offline_reason}")
            watch = SlaveWatch(slave, stop)
            watch.start()
            time.sleep(0.3)
            report = self._measure(o, user, project, slave)
        finally:
            stop.set()
            if watch is not None:
                # Let it finish what it is doing (the last event's bookkeeping) before its slave
                # goes; it waits for the next event afterwards, and is a daemon thread.
                watch.join(timeout=1.0)
            Job.objects.filter(project=project).delete()
            Slave.objects.filter(cluster=cluster).delete()
            cluster.delete()
            project.delete()
            user.delete()
        self.stdout.write(json.dumps(report, indent=2))

    def _measure(self, o, user, project, slave) -> dict:
        image, runs = o["image"], o["runs"]
        document = {
            "name": "bench",
            "request": {
                "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1, "clusterId": BENCH_CLUSTER},
                "docker": {"image": image, "command": ["sleep", "0.5"]},
            },
        }
        to_running, to_finished = [], []
        for _ in range(runs):
            began = timezone.now()
            job = job_submit(user=user, project=project, document=document)
            # Wait for the end, whatever was seen on the way: a job may be RUNNING when
            # job_submit returns and FINISHED by the first look (a loaded machine, a fast
            # engine), and every field below is read once it has ended.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                job.refresh_from_db(fields=["status", "ended_at", "status_updated"])
                if job.status in ("FINISHED", "FAILED"):
                    break
                time.sleep(POLL_S)
            if job.status == "FAILED":
                raise CommandError(f"bench job failed: {Job.objects.get(pk=job.pk).end_reason}")
            if job.status != "FINISHED" or job.ended_at is None:
                raise CommandError(f"bench job {job.uuid} did not finish in 30 s ({job.status})")
            running = (
                JobEvent.objects.filter(job=job, new_state="RUNNING")
                .values_list("time", flat=True)
                .first()
            )
            if running is None:
                raise CommandError(f"bench job {job.uuid} ended without a RUNNING event")
            to_running.append((running - began).total_seconds())
            # ended_at is Docker's own finish time of the container; status_updated is ours.
            to_finished.append((job.status_updated - job.ended_at).total_seconds())
        bare = bare_docker_runs(slave, image, runs)
        return {
            "runs": runs,
            "engine": slave.docker_url,
            "submit_to_running_s": {"p50": pct(to_running, 0.5), "p90": pct(to_running, 0.9)},
            "bare_docker_run_s": {"p50": pct(bare, 0.5), "p90": pct(bare, 0.9)},
            "submit_to_running_over_bare_p50_s": round(
                statistics.median(to_running) - statistics.median(bare), 4
            ),
            "exit_to_finished_s": {"p50": pct(to_finished, 0.5), "p90": pct(to_finished, 0.9)},
            "task_mode": "inline (add the broker poll interval for django-q2)",
        }

    # --- queue mode ------------------------------------------------------------------------

    def _queue_outer(self, o) -> None:
        """A fresh database in a temporary directory; the measuring process runs on it."""
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        with tempfile.TemporaryDirectory(prefix="bench-launch-") as var:
            env = queue_env(var, os.environ)
            subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
            args = ["--mode", "queue", "--inner", "--runs", str(o["runs"])]
            args += ["--image", o["image"]] + (["--docker", o["docker"]] if o["docker"] else [])
            args += ["--with-max-duration"] if o["with_max_duration"] else []
            done = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), *args],
                env=env,
                capture_output=True,
                text=True,
            )
            self.stderr.write(done.stderr)
            if done.returncode:
                raise CommandError(f"the measuring process failed ({done.returncode})")
            self.stdout.write(done.stdout.rstrip("\n"))

    def _queue_inner(self, o) -> None:
        if settings.PORTAL_TASK_MODE != "queue":
            raise CommandError("--inner runs only under PORTAL_TASK_MODE=queue")
        url = o["docker"] or settings.PORTAL_LOCAL_DOCKER_URL
        user = get_user_model().objects.create_user("bench")
        project = Project.objects.create(name="bench", gid=99999)
        Membership.objects.create(user=user, project=project)
        cluster = Cluster.objects.create(id=BENCH_CLUSTER, comment="bench_launch")
        slave = slave_register(name="bench", cluster=cluster, docker_url=url)
        slave_declare_gpus(slave=slave, gpus=[("Bench GPU", 0)])
        slave = slave_probe(slave=slave)
        if not slave.online:
            raise CommandError(f"engine {url} unreachable: {slave.offline_reason}")
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        logs = open(settings.VAR_DIR / "processes.log", "w")  # noqa: SIM115 (closed below)
        children = [
            subprocess.Popen([*manage, name], stdout=logs, stderr=subprocess.STDOUT)
            for name in ("qcluster", "watch_slaves")
        ]
        try:
            report = self._queue_measure(o, user, project, slave)
        finally:
            for child in children:
                child.terminate()
            for child in children:
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
            logs.close()
        self.stdout.write(json.dumps(report, indent=2))

    def _queue_measure(self, o, user, project, slave) -> dict:
        image, runs = o["image"], o["runs"]

        def document(command):
            return {
                "name": "bench",
                "request": {
                    "resources": {
                        "gpus": 1, "cpus": 1, "cpuMemoryGb": 1, "clusterId": BENCH_CLUSTER,
                    },
                    "docker": {"image": image, "command": command},
                    "scheduling": {"minDuration": "1 hour", "maxDuration": "1 hour"},
                },
            }  # fmt: skip

        def wait_for(job, states, timeout=60.0):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                job.refresh_from_db(fields=["status", "ended_at", "status_updated"])
                if job.status in states:
                    return job
                time.sleep(0.01)
            raise CommandError(f"job {job.uuid} stuck in {job.status}")

        def event_time(job, state):
            return (
                JobEvent.objects.filter(job=job, new_state=state)
                .values_list("time", flat=True)
                .first()
            )

        to_running, to_finished, to_next, exit_to_next = [], [], [], []
        # Where submit -> RUNNING goes: the tick task hop, the launch task hop, Docker.
        parts: dict[str, list[float]] = {"to_assigned": [], "to_starting": [], "to_running": []}
        # Warm-up (not counted): the q cluster and the watcher start, the image is local.
        wait_for(job_submit(user=user, project=project, document=document(["true"])), {"FINISHED"})
        for _ in range(runs):
            # A job that holds the only GPU for a moment, and one queued behind it.
            first = job_submit(user=user, project=project, document=document(["sleep", "1"]))
            wait_for(first, {"RUNNING", "FINISHED", "FAILED"})
            second = job_submit(user=user, project=project, document=document(["true"]))
            first = wait_for(first, {"FINISHED", "FAILED"})
            second = wait_for(second, {"FINISHED", "FAILED"})
            if "FAILED" in (first.status, second.status):
                raise CommandError(f"bench job failed: {Job.objects.get(pk=first.pk).end_reason}")
            started = event_time(first, "RUNNING")
            finished = event_time(first, "FINISHED")
            to_running.append((started - first.created).total_seconds())
            assigned, starting = event_time(first, "ASSIGNED"), event_time(first, "STARTING")
            parts["to_assigned"].append((assigned - first.created).total_seconds())
            parts["to_starting"].append((starting - assigned).total_seconds())
            parts["to_running"].append((started - starting).total_seconds())
            to_finished.append((finished - first.ended_at).total_seconds())
            to_next.append((event_time(second, "RUNNING") - finished).total_seconds())
            exit_to_next.append((event_time(second, "RUNNING") - first.ended_at).total_seconds())
        # Time-driven ticks: a notBefore job, from its notBefore to ASSIGNED and to RUNNING.
        timed: dict[str, list[float]] = {"to_assigned": [], "to_running": []}
        for _ in range(min(runs, 3)):
            moment = (timezone.now() + timedelta(seconds=3)).replace(microsecond=0)
            doc = document(["true"])
            doc["request"]["scheduling"]["notBefore"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
            job = wait_for(job_submit(user=user, project=project, document=doc), {"FINISHED"})
            timed["to_assigned"].append((event_time(job, "ASSIGNED") - moment).total_seconds())
            timed["to_running"].append((event_time(job, "RUNNING") - moment).total_seconds())
        # maxDuration (at least a minute, so only on request): from the deadline (Docker's start
        # time + 1 minute) to the cancel decision.
        overdue = []
        for _ in range(1 if o["with_max_duration"] else 0):
            doc = document(["sleep", "120"])
            doc["request"]["scheduling"].update(minDuration="1 minute", maxDuration="1 minute")
            job = job_submit(user=user, project=project, document=doc)
            job = wait_for(job, {"CANCELLED", "FAILED", "FINISHED"}, timeout=120)
            job.refresh_from_db(fields=["started_at"])
            deadline = job.started_at + timedelta(minutes=1)
            overdue.append((event_time(job, "CANCELLING") - deadline).total_seconds())
        bare = bare_docker_runs(slave, image, runs)

        def stats(values):
            return {"p50": pct(values, 0.5), "p90": pct(values, 0.9)}

        return {
            "runs": runs,
            "mode": "queue (django-q2 cluster and watcher subprocesses, SQLite)",
            "engine": slave.docker_url,
            "broker_poll_s": settings.Q_CLUSTER.get("poll"),
            "submit_to_running_s": stats(to_running),
            "bare_docker_run_s": stats(bare),
            "submit_to_running_over_bare_p50_s": round(
                statistics.median(to_running) - statistics.median(bare), 4
            ),
            "exit_to_finished_s": stats(to_finished),
            "freed_gpus_to_next_running_s": stats(to_next),
            "exit_to_next_running_s": stats(exit_to_next),
            "not_before_to_assigned_s": stats(timed["to_assigned"]),
            "not_before_to_running_s": stats(timed["to_running"]),
            "max_duration_to_cancel_s": stats(overdue) if overdue else None,
            "submit_to_running_parts_p50_s": {
                name: pct(values, 0.5) for name, values in parts.items()
            },
        }


if __name__ == "__main__":
    _django.run(Command)
