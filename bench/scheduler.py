"""Benchmark the scheduler: the pure cycle, and a full tick on the configured database.

    python bench/scheduler.py --queued 10000 --slaves 1000 --gpus-per-slave 8 [--gangs 1000]

Prints one JSON object. The full tick runs inside a transaction that is rolled back, so the
synthetic cluster never stays in the database (and no launch task escapes: tasks fire on commit).
"""

if __name__ == "__main__":
    import _django  # noqa: F401  (bench/_django.py: the repository root on the path, Django set up)

import json
import os
import platform
import time
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import connection, transaction

from accounts.models import Membership, Project
from bench.synthetic import build_synthetic_snapshot
from bench.synthetic_gangs import with_gangs
from clusters.capabilities import capabilities_changed
from clusters.models import Cluster, Gpu, Slave
from core.installation import database_migrate_if_needed
from jobs.models import Job, UserUsage
from jobs.scheduler.core import run_cycle
from jobs.scheduler_bridge.tick import tick_once
from reservations.models import Reservation

GB = 1


class Rollback(Exception):
    pass


def _request(gpus: int, cpus: int, memory: int) -> dict:
    return {
        "resources": {"gpus": gpus, "cpus": cpus, "cpuMemoryGb": memory},
        "docker": {"image": "busybox", "command": [], "storage": []},
        "scheduling": {"minDuration": "1 hour", "maxDuration": "1 day"},
    }


def populate(snapshot) -> None:
    """Mirror a synthetic snapshot into the database with bulk inserts."""
    User = get_user_model()
    now = snapshot.now
    names = {j.user for j in snapshot.running} | {j.user for j in snapshot.queued}
    User.objects.bulk_create([User(username=n) for n in sorted(names)], batch_size=1000)
    users = dict(User.objects.filter(username__in=names).values_list("username", "id"))
    project_names = {j.project for j in snapshot.running} | {j.project for j in snapshot.queued}
    Project.objects.bulk_create(
        [Project(name=n, gid=90000 + i) for i, n in enumerate(sorted(project_names))]
    )
    projects = dict(Project.objects.values_list("name", "id"))
    pairs = {(j.user, j.project) for j in (*snapshot.running, *snapshot.queued)}
    Membership.objects.bulk_create(
        [Membership(user_id=users[u], project_id=projects[p]) for u, p in pairs],
        ignore_conflicts=True,
    )
    for cluster_id in sorted({s.cluster_id for s in snapshot.slaves}):
        first = next(s for s in snapshot.slaves if s.cluster_id == cluster_id)
        cluster = Cluster.objects.create(id=cluster_id, is_private=first.cluster_private)
        cluster.owner_projects.set(
            [projects[p] for p in first.cluster_owner_projects if p in projects]
        )
    Slave.objects.bulk_create(
        [
            Slave(
                name=s.name,
                cluster_id=s.cluster_id,
                docker_url="unix:///bench.sock",
                cpus_total=len(s.cpu_ids),
                memory_total_mb=int(s.memory_gb * 1024),
                cuda_version=f"{s.cuda_major or 12}.0",
                online=s.online,
                accepting_jobs=s.accepting_jobs,
                features=sorted(s.features),
                offline_reason="",
            )
            for s in snapshot.slaves
        ],
        batch_size=1000,
    )
    slaves = dict(Slave.objects.values_list("name", "id"))
    Gpu.objects.bulk_create(
        [
            Gpu(slave_id=slaves[s.name], index=g.index, model=g.model, memory_mb=g.memory_mb)
            for s in snapshot.slaves
            for g in s.gpus
        ],
        batch_size=2000,
    )
    capabilities_changed()  # bulk_create sends no signals
    common = {"status_updated": now, "created": now, "event_times": {}}
    jobs = [
        Job(
            name="running",
            owner_id=users[j.user],
            project_id=projects[j.project],
            request=_request(len(j.gpu_ids), len(j.cpu_ids), int(j.memory_gb)),
            gpus=len(j.gpu_ids),
            cpus=len(j.cpu_ids),
            cpu_memory_gb=int(j.memory_gb),
            min_duration_s=j.min_duration_s,
            max_duration_s=j.max_duration_s,
            restartable=j.restartable,
            bucket_name=j.bucket or "",
            reservation_ids=sorted(j.reservation_ids),
            status="MUSTHALT" if j.halting else "RUNNING",
            slave_id=slaves[j.slave],
            gpu_ids=list(j.gpu_ids),
            cpu_ids=list(j.cpu_ids),
            started_at=j.started_at,
            **common,
        )
        for j in snapshot.running
    ]
    jobs += [
        Job(
            name="queued", owner_id=users[j.user], project_id=projects[j.project],
            request=_request(j.gpus, j.cpus, int(j.memory_gb)),
            gpus=j.gpus, cpus=j.cpus, cpu_memory_gb=max(1, int(j.memory_gb)),
            gpu_models=list(j.gpu_models), features=sorted(j.features), min_cuda_version=j.min_cuda,
            requested_cluster_id=j.cluster_id, requested_slave_name=j.slave_name or "",
            interactive=j.interactive, restartable=j.restartable,
            min_duration_s=j.min_duration_s, max_duration_s=j.max_duration_s,
            not_before=j.not_before, not_after=j.not_after,
            bucket_name=j.bucket[0] if j.bucket else "", bucket_max=j.bucket[1] if j.bucket else None,
            reservation_ids=sorted(j.reservation_ids), status="QUEUED",
            **{**common, "created": j.submitted_at},
        )
        for j in snapshot.queued
    ]  # fmt: skip
    Job.objects.bulk_create(jobs, batch_size=1000)
    UserUsage.objects.bulk_create(
        [
            UserUsage(user_id=users[u], value=v, updated_at=now)
            for u, v in snapshot.usage.items()
            if u in users
        ]
    )
    for window in snapshot.reservations:
        reservation = Reservation.objects.create(
            uuid=window.id, name=window.name, cluster_id=window.cluster_id,
            start=window.start, end=window.end, gpu_count=window.gpu_count,
        )  # fmt: skip
        reservation.slaves.set([slaves[n] for n in window.slave_names])
        reservation.projects.set([projects[p] for p in window.entitled_projects if p in projects])


class Command(BaseCommand):
    help = "Benchmark the scheduler (pure cycle and full tick); prints JSON."

    def add_arguments(self, parser):
        parser.add_argument("--queued", type=int, default=10_000)
        parser.add_argument("--slaves", type=int, default=1_000)
        parser.add_argument("--gpus-per-slave", type=int, default=8)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--repeat", type=int, default=3, help="pure cycles to time")
        parser.add_argument("--skip-tick", action="store_true")
        parser.add_argument(
            "--gangs",
            type=int,
            default=0,
            help="also time the pure cycle with N gangs of 2-16 tasks made of the queued jobs, "
            "beside the same jobs without gangs (bench/synthetic_gangs.py)",
        )

    def handle(self, *args, **o):
        database_migrate_if_needed(stderr=self.stderr)
        now = datetime.now(UTC).replace(microsecond=0)
        snapshot = build_synthetic_snapshot(
            queued=o["queued"], slaves=o["slaves"], gpus_per_slave=o["gpus_per_slave"],
            seed=o["seed"], now=now,
        )  # fmt: skip
        pure_times = []
        for _ in range(o["repeat"]):
            began = time.perf_counter()
            result = run_cycle(snapshot)
            pure_times.append(time.perf_counter() - began)
        report = {
            "queued": o["queued"],
            "slaves": o["slaves"],
            "gpus_per_slave": o["gpus_per_slave"],
            "running_jobs": len(snapshot.running),
            "pure_cycle_s": round(min(pure_times), 4),
            "pure_cycle_s_all": [round(t, 4) for t in pure_times],
            "pure_placements": len(result.starts),
            "pure_halts": len(result.halts),
            "pure_decisions_per_s": round(len(result.decisions) / min(pure_times), 1),
            "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
            "database": connection.vendor,
        }
        if o["gangs"]:
            report["gangs"] = self._gangs(snapshot, o["gangs"], o["seed"], o["repeat"])
        if not o["skip_tick"]:
            report.update(self._full_tick(snapshot, now))
        self.stdout.write(json.dumps(report, indent=2))

    def _gangs(self, snapshot, gangs: int, seed: int, repeat: int) -> dict:
        """The pure cycle on the same queued jobs with and without gangs, interleaved runs."""
        ganged, plain = with_gangs(snapshot, gangs=gangs, seed=seed)
        times = {"with_gangs": [], "without_gangs": []}
        results = {}
        for _ in range(repeat):
            for name, snap in (("with_gangs", ganged), ("without_gangs", plain)):
                began = time.perf_counter()
                results[name] = run_cycle(snap)
                times[name].append(time.perf_counter() - began)
        tasks = [j for j in ganged.queued if j.gang is not None]
        started = {s.job_id for s in results["with_gangs"].starts}
        gang_ids = {j.gang for j in tasks}
        placed = {j.gang for j in tasks if j.id in started}
        best = {name: min(values) for name, values in times.items()}
        return {
            "gangs": len(gang_ids),
            "gang_tasks": len(tasks),
            "gangs_started": len(placed),
            "pure_cycle_s_with_gangs": round(best["with_gangs"], 4),
            "pure_cycle_s_without_gangs": round(best["without_gangs"], 4),
            "ratio": round(best["with_gangs"] / best["without_gangs"], 3),
            "all_s": {k: [round(t, 4) for t in v] for k, v in times.items()},
            "placements_with_gangs": len(results["with_gangs"].starts),
            "placements_without_gangs": len(results["without_gangs"].starts),
        }

    def _full_tick(self, snapshot, now) -> dict:
        out = {"database": connection.vendor}
        try:
            with transaction.atomic():
                began = time.perf_counter()
                populate(snapshot)
                out["populate_s"] = round(time.perf_counter() - began, 2)
                began = time.perf_counter()
                summary = tick_once(now)
                total = time.perf_counter() - began
                decisions = summary["started"] + summary["halted"] + summary["failed"]
                decisions += summary["cancelled"]
                out.update(
                    full_tick_s=round(total, 3),
                    tick_snapshot_s=round(summary["snapshot_s"], 3),
                    tick_cycle_s=round(summary["cycle_s"], 3),
                    tick_apply_s=round(summary["apply_s"], 3),
                    placements=summary["started"],
                    halts=summary["halted"],
                    explanations_written=summary["explanations_written"],
                    decisions_per_s=round(decisions / total, 1),
                )
                raise Rollback
        except Rollback:
            pass
        return out


if __name__ == "__main__":
    _django.run(Command)
