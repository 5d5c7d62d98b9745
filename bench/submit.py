"""Benchmark submissions over REST on the configured database: array and single submits.

    python bench/submit.py [--array 500 --requests 10 --single 100 --form list|sweep]

Creates a bench user, project, cluster and slave (unique names), POSTs ``--requests`` array
submissions of ``--array`` jobs each to ``/api/portal/jobs/array`` (and ``--single`` jobs one by
one to GPULab's ``POST jobs`` for comparison) through Django's test client, so the whole request
path (authentication, parsing, validation, the transaction) is timed; then deletes everything
it created. Tasks are only recorded (no tick is enqueued). Prints one JSON object with wall
clock and this process's CPU time.
"""

if __name__ == "__main__":
    import _django  # noqa: F401  (bench/_django.py: the repository root on the path, Django set up)

import copy
import json
import os
import platform
import time
import uuid

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import connection
from django.test import Client
from django.utils import timezone

from accounts.models import Membership, Project
from accounts.tokens import api_token_rotate
from clusters.models import Cluster, Gpu, Slave
from core.installation import database_migrate_if_needed
from jobs.models import Job

DOCUMENT = {
    "name": "bench-${index}",
    "request": {
        "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
        "docker": {"image": "busybox", "command": "sleep ${index}"},
    },
}


class Command(BaseCommand):
    help = "Time array and single job submissions over REST (prints JSON)."

    def add_arguments(self, parser):
        parser.add_argument("--array", type=int, default=500, help="jobs per array request")
        parser.add_argument("--requests", type=int, default=10, help="array requests")
        parser.add_argument("--single", type=int, default=100, help="single submits to time")
        parser.add_argument(
            "--form", choices=["list", "sweep"], default="list", help="array body form"
        )

    def handle(self, *args, **o):
        database_migrate_if_needed(stderr=self.stderr)
        settings.PORTAL_TASK_MODE = "record"
        settings.PORTAL_ARRAY_MAX_JOBS = max(settings.PORTAL_ARRAY_MAX_JOBS, o["array"])
        tag = uuid.uuid4().hex[:8]
        user, project, cluster = self._setup(tag)
        client = Client(HTTP_AUTHORIZATION=f"Token {api_token_rotate(user=user)[1]}")
        try:
            report = {
                "database": connection.vendor,
                "array_jobs_per_request": o["array"],
                "array_requests": o["requests"],
                "form": o["form"],
            }
            report.update(self._arrays(client, project, cluster, o))
            if o["single"]:
                report.update(self._singles(client, project, cluster, o["single"]))
            report["machine"] = {"cores": os.cpu_count(), "python": platform.python_version()}
        finally:
            self._cleanup(user, project, cluster)
        self.stdout.write(json.dumps(report, indent=2))

    def _setup(self, tag):
        user = get_user_model().objects.create_user(f"bench-{tag}")
        project = Project.objects.create(name=f"bench-{tag}", gid=80000 + int(tag[:4], 16))
        Membership.objects.create(user=user, project=project)
        cluster_id = 900000 + int(tag[:4], 16)
        cluster = Cluster.objects.create(id=cluster_id, comment="bench_submit")
        slave = Slave.objects.create(
            name=f"bench-{tag}",
            cluster=cluster,
            docker_url="unix:///bench.sock",
            cpus_total=64,
            memory_total_mb=512 * 1024,
            online=True,
            offline_reason="",
            last_seen=timezone.now(),
        )
        Gpu.objects.bulk_create(
            Gpu(slave=slave, index=i, model="Bench GPU", memory_mb=16384, declared=True)
            for i in range(8)
        )
        return user, project, cluster

    @staticmethod
    def _document(cluster, index=None):
        document = copy.deepcopy(DOCUMENT)
        document["request"]["resources"]["clusterId"] = cluster.id
        if index is not None:
            document = json.loads(json.dumps(document).replace("${index}", str(index)))
        return document

    def _arrays(self, client, project, cluster, o) -> dict:
        count = o["array"]
        if o["form"] == "sweep":
            body = {
                "project": project.name,
                "template": self._document(cluster),
                "variations": [{} for _ in range(count)],
            }
        else:
            body = {
                "project": project.name,
                "jobs": [self._document(cluster, index) for index in range(count)],
            }
        data = json.dumps(body)
        # Warm up (URL conf, imports, connection), as a running server is: not timed.
        client.get("/api/gpulab/v4.0/version")
        times = []
        cpu_began = time.process_time()
        for _ in range(o["requests"]):
            began = time.perf_counter()
            response = client.post("/api/portal/jobs/array", data, content_type="application/json")
            times.append(time.perf_counter() - began)
            if response.status_code != 201:
                raise RuntimeError(
                    f"array submit answered {response.status_code}: {response.content[:500]!r}"
                )
        cpu = time.process_time() - cpu_began
        total = count * o["requests"]
        return {
            "array_body_bytes": len(data),
            "array_jobs": total,
            "array_seconds": round(sum(times), 3),
            "array_jobs_per_s": round(total / sum(times), 1),
            "array_request_s_min_max": [round(min(times), 3), round(max(times), 3)],
            # This process's CPU time only (on SQLite, everything; on PostgreSQL, without the
            # server's share): on a loaded machine it says what the code costs.
            "array_cpu_seconds": round(cpu, 3),
            "array_jobs_per_cpu_s": round(total / cpu, 1),
        }

    def _singles(self, client, project, cluster, count) -> dict:
        document = self._document(cluster, 0)
        document["owner"] = {"projectUrn": project.name}
        data = json.dumps(document)
        began = time.perf_counter()
        for _ in range(count):
            response = client.post("/api/gpulab/v4.0/jobs", data, content_type="application/json")
            if response.status_code != 201:
                raise RuntimeError(f"single submit answered {response.status_code}")
        seconds = time.perf_counter() - began
        return {"single_jobs": count, "single_jobs_per_s": round(count / seconds, 1)}

    @staticmethod
    def _cleanup(user, project, cluster):
        Job.objects.filter(project=project).delete()
        Slave.objects.filter(cluster=cluster).delete()
        cluster.delete()
        project.delete()
        user.delete()


if __name__ == "__main__":
    _django.run(Command)
