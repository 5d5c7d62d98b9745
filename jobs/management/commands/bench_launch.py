"""Benchmark the launch path on the local engine; prints JSON.

- submit -> RUNNING: job_submit until the job is RUNNING (tick, assignment, launch), with tasks
  run inline, i.e. the portal's own work without the task broker's poll interval
  (django-q2's ORM broker adds up to Q_CLUSTER["poll"] = 0.2 s per hop in production).
- bare docker run -d: create + start of the same image through the same engine client.
- exit -> FINISHED: from the container's own finish time (Docker's clock) to the job's
  FINISHED status, with the real watcher following the engine's events.
Everything the run creates (user, project, cluster 999, slave, jobs) is removed afterwards.
"""

import json
import statistics
import threading
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from clusters.models import Cluster, Slave
from clusters.runtime.spec import ContainerSpec
from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
from jobs.models import Job
from jobs.services import job_submit
from jobs.watcher import SlaveWatch
from portal.models import Membership, Project

BENCH_CLUSTER = 999


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)


class Command(BaseCommand):
    help = "Measure submit->RUNNING and exit->FINISHED against bare docker run (JSON)."

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=10)
        parser.add_argument("--image", default="gpuportal/busybox:latest")
        parser.add_argument("--docker", default=None, help="engine URL (default: local)")

    def handle(self, *args, **o):
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
        try:
            if not slave.online:
                raise CommandError(f"engine {url} unreachable: {slave.offline_reason}")
            SlaveWatch(slave, stop).start()
            time.sleep(0.3)
            report = self._measure(o, user, project, slave)
        finally:
            stop.set()
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
            began = time.perf_counter()
            job = job_submit(user=user, project=project, document=document)
            while True:
                job.refresh_from_db(fields=["status", "started_at", "container_id"])
                if job.status in ("RUNNING", "FINISHED", "FAILED"):
                    break
                time.sleep(0.005)
            to_running.append(time.perf_counter() - began)
            if job.status == "FAILED":
                raise CommandError(f"bench job failed: {Job.objects.get(pk=job.pk).end_reason}")
            deadline = time.monotonic() + 30
            while job.status not in ("FINISHED", "FAILED") and time.monotonic() < deadline:
                time.sleep(0.005)
                job.refresh_from_db(fields=["status", "ended_at", "status_updated"])
            # ended_at is Docker's own finish time of the container; status_updated is ours.
            to_finished.append((job.status_updated - job.ended_at).total_seconds())
        bare = []
        with engine_for(slave) as engine:
            for _ in range(runs):
                began = time.perf_counter()
                container = engine.run(ContainerSpec(image=image, command=("true",)))
                bare.append(time.perf_counter() - began)
                engine.remove(container)
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
