"""Benchmark the pages with a big database: 10,000 jobs and 100 slaves by default; prints JSON.

    python bench/pages.py [--jobs 10000 --slaves 100 --repeat 5]

The data (from the scheduler's synthetic cluster) lives inside a transaction that is rolled back.
Each page is fetched as a project member and as an admin; the JSON gives the median time and
the number of queries of each.
"""

if __name__ == "__main__":
    import _django  # noqa: F401  (bench/_django.py: the repository root on the path, Django set up)

import json
import statistics
import time
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.scheduler import Rollback, populate
from bench.synthetic import build_synthetic_snapshot
from core.installation import database_migrate_if_needed
from jobs.models import Job

PAGES = [
    "/",
    "/jobs/",
    "/jobs/?state=running",
    "/jobs/?page=20",
    "/jobs/{uuid}/",
    "/jobs/new/",
    "/live/clusters/",
    "/live/slaves/",
    "/reservations/",
    "/usage/",
    "/profile/",
    "/api/gpulab/v4.0/jobs?page_size=200",
    "/api/gpulab/v4.0/clusters",
    "/api/gpulab/v4.0/slaves",
]


class Command(BaseCommand):
    help = "Time every page with 10,000 jobs and 100 slaves in the database (JSON)."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=10_000)
        parser.add_argument("--slaves", type=int, default=100)
        parser.add_argument("--repeat", type=int, default=5)

    def handle(self, *args, **o):
        database_migrate_if_needed(stderr=self.stderr)
        now = datetime.now(UTC).replace(microsecond=0)
        snapshot = build_synthetic_snapshot(
            queued=o["jobs"], slaves=o["slaves"], gpus_per_slave=8, now=now
        )
        report = {"jobs": None, "slaves": o["slaves"], "pages": {}}
        try:
            with transaction.atomic():
                populate(snapshot)
                report["jobs"] = Job.objects.count()
                member = get_user_model().objects.filter(memberships__isnull=False).first()
                admin = get_user_model().objects.create_superuser("bench-admin", "", "x")
                job = Job.objects.filter(project__memberships__user=member).first()
                for who, user in (("member", member), ("admin", admin)):
                    client = Client()
                    client.force_login(user)
                    for page in PAGES:
                        url = page.format(uuid=job.uuid)
                        times, queries, status = [], 0, None
                        for _ in range(o["repeat"]):
                            with CaptureQueriesContext(connection) as ctx:
                                began = time.perf_counter()
                                response = client.get(url)
                                times.append(time.perf_counter() - began)
                            queries, status = len(ctx), response.status_code
                        report["pages"][f"{who} {url}"] = {
                            "status": status,
                            "median_ms": round(statistics.median(times) * 1000, 1),
                            "queries": queries,
                        }
                raise Rollback
        except Rollback:
            pass
        slowest = max(report["pages"].items(), key=lambda kv: kv[1]["median_ms"])
        report["slowest"] = {slowest[0]: slowest[1]}
        self.stdout.write(json.dumps(report, indent=2))


if __name__ == "__main__":
    _django.run(Command)
