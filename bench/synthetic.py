"""A large, realistic-looking snapshot for benchmarks (``build_synthetic_snapshot``).

Deterministic for a given seed: several public clusters with different GPU models, one private
cluster, busy slaves (about half the GPUs held by running jobs, some of them past their
minDuration), an open reservation holding part of a cluster's GPUs and an upcoming one on a whole
cluster, mixed requests (GPU counts, models, clusters, pinned slaves, interactive jobs, buckets,
notBefore), and users with very different usage.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from jobs.scheduler.model import (
    DAY,
    HOUR,
    WEEK,
    GpuInfo,
    QueuedJob,
    ReservationWindow,
    RunningJob,
    SlaveState,
    Snapshot,
)

MODELS = ("Tesla V100-PCIE-32GB", "NVIDIA A100-SXM4-80GB", "GeForce GTX 1080 Ti")
_MODEL_MEMORY = {MODELS[0]: 32510, MODELS[1]: 81920, MODELS[2]: 11178}
# Public cluster id -> GPU model of its slaves; cluster 9 is private.
_CLUSTER_MODELS = {1: MODELS[0], 2: MODELS[1], 3: MODELS[2], 4: MODELS[0], 5: MODELS[1]}
PRIVATE_CLUSTER = 9
PRIVATE_OWNER = "proj-owner"


def _slaves(rng: random.Random, count: int, gpus_per_slave: int) -> list[SlaveState]:
    private_count = max(1, count // 20) if count >= 2 else 0
    slaves = []
    for i in range(count):
        private = i < private_count
        cluster = PRIVATE_CLUSTER if private else 1 + i % 5
        model = MODELS[1] if private else _CLUSTER_MODELS[cluster]
        models = [model] * gpus_per_slave
        if cluster == 4 and i % 10 == 0 and gpus_per_slave >= 2:
            models[gpus_per_slave // 2 :] = [MODELS[2]] * (gpus_per_slave - gpus_per_slave // 2)
        slaves.append(
            SlaveState(
                name=f"gpu{i + 1:04d}",
                cluster_id=cluster,
                cluster_private=private,
                cluster_owner_projects=frozenset({PRIVATE_OWNER}) if private else frozenset(),
                online=rng.random() > 0.02,
                accepting_jobs=rng.random() > 0.02,
                gpus=tuple(GpuInfo(j, m, _MODEL_MEMORY[m]) for j, m in enumerate(models)),
                cpu_ids=tuple(range(max(16, 6 * gpus_per_slave))),
                memory_gb=float(max(64, 32 * gpus_per_slave)),
                cuda_major=12 if cluster in (2, 5, PRIVATE_CLUSTER) else rng.choice((11, 12)),
                features=frozenset({"ssd"}) if i % 2 else frozenset(),
            )
        )
    return slaves


def _running(rng, slaves, users, projects_of, now, buckets) -> list[RunningJob]:
    running = []
    for slave in slaves:
        total = len(slave.gpus)
        target = total // 2 + rng.choice((-1, 0, 0, 1)) if total else 0
        free_gpus = list(range(total))
        free_cpus = list(slave.cpu_ids)
        free_mem = slave.memory_gb
        while total and total - len(free_gpus) < target:
            want = min(rng.choice((1, 1, 2, 4)), len(free_gpus), target - (total - len(free_gpus)))
            cpus = min(len(free_cpus), 4 * want)
            memory = min(free_mem, 16.0 * want)
            user = rng.choice(users)
            gpu_ids, free_gpus = free_gpus[:want], free_gpus[want:]
            cpu_ids, free_cpus = free_cpus[:cpus], free_cpus[cpus:]
            free_mem -= memory
            project = (
                PRIVATE_OWNER if slave.cluster_private and rng.random() < 0.5 else projects_of[user]
            )
            running.append(
                RunningJob(
                    id=f"r{len(running):06d}",
                    user=user,
                    project=project,
                    slave=slave.name,
                    gpu_ids=tuple(gpu_ids),
                    cpu_ids=tuple(cpu_ids),
                    memory_gb=memory,
                    started_at=now - timedelta(seconds=rng.randint(60, 10 * DAY)),
                    min_duration_s=rng.choice((HOUR, DAY, WEEK)),
                    max_duration_s=2 * WEEK,
                    restartable=rng.random() < 0.3,
                    bucket=rng.choice(buckets) if rng.random() < 0.001 else None,
                    halting=rng.random() < 0.01,
                )
            )
    return running


def build_synthetic_snapshot(
    queued: int = 10_000,
    slaves: int = 1_000,
    gpus_per_slave: int = 8,
    seed: int = 0,
    now: datetime | None = None,
) -> Snapshot:
    """A deterministic snapshot with ``queued`` jobs waiting on ``slaves`` busy slaves."""
    rng = random.Random(seed)
    now = now or datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    users = [f"user{n:03d}" for n in range(300)]
    projects = [f"proj{n:02d}" for n in range(40)]
    projects_of = {user: projects[i % len(projects)] for i, user in enumerate(users)}
    buckets = ("sweep-a", "sweep-b", "sweep-c")
    slave_states = _slaves(rng, slaves, gpus_per_slave)
    running = _running(rng, slave_states, users, projects_of, now, buckets)
    usage = {user: rng.expovariate(1 / (200 * HOUR)) for user in users[:250]}

    reservations = []
    cluster2 = [s.name for s in slave_states if s.cluster_id == 2]
    if cluster2:
        reservations.append(
            ReservationWindow(
                id="00000000-0000-4000-8000-000000000001",
                name="course",
                cluster_id=2,
                start=now - timedelta(hours=2),
                end=now + timedelta(hours=6),
                slave_names=frozenset(cluster2[:20]),
                gpu_count=min(32, 20 * gpus_per_slave),
                entitled_projects=frozenset({projects[1]}),
            )
        )
    reservations.append(
        ReservationWindow(
            id="00000000-0000-4000-8000-000000000002",
            name="deadline",
            cluster_id=1,
            start=now + timedelta(hours=6),
            end=now + timedelta(days=2),
            entitled_projects=frozenset({projects[2]}),
        )
    )
    reservation_ids = [r.id for r in reservations]
    pinned = [s.name for s in slave_states]

    jobs = []
    for n in range(queued):
        user = rng.choice(users)
        project = projects_of[user]
        if rng.random() < 0.02:
            project = PRIVATE_OWNER
        gpus = min(rng.choice((0, 1, 1, 1, 2, 2, 4, 8)), gpus_per_slave)
        cpus = gpus * rng.choice((2, 4)) if gpus else rng.choice((1, 2, 4, 8))
        memory = float(rng.choice((4, 8, 16, 32)) * max(1, gpus))
        min_duration = rng.choice((30 * 60, HOUR, DAY, WEEK))
        max_duration = max(min_duration, rng.choice((HOUR, DAY, WEEK, 2 * WEEK)))
        interactive = rng.random() < 0.02
        jobs.append(
            QueuedJob(
                id=f"q{n:06d}",
                user=user,
                project=project,
                submitted_at=now - timedelta(seconds=rng.randint(0, 3 * DAY)),
                gpus=gpus,
                cpus=max(1, cpus),
                memory_gb=memory,
                gpu_models=(rng.choice(("V100", "A100", "1080")),) if rng.random() < 0.2 else (),
                features=frozenset({"ssd"}) if rng.random() < 0.05 else frozenset(),
                min_cuda=12 if rng.random() < 0.05 else None,
                cluster_id=rng.choice((1, 2, 3, 4, 5)) if rng.random() < 0.15 else None,
                slave_name=rng.choice(pinned) if pinned and rng.random() < 0.005 else None,
                interactive=interactive,
                restartable=rng.random() < 0.3,
                min_duration_s=min_duration,
                max_duration_s=max_duration,
                not_before=now + timedelta(hours=3)
                if not interactive and rng.random() < 0.02
                else None,
                bucket=(rng.choice(buckets), rng.choice((2, 5))) if rng.random() < 0.05 else None,
                reservation_ids=frozenset({rng.choice(reservation_ids)})
                if rng.random() < 0.03
                else frozenset(),
            )
        )
    return Snapshot(
        now=now,
        slaves=tuple(slave_states),
        running=tuple(running),
        queued=tuple(jobs),
        reservations=tuple(reservations),
        usage=usage,
    )
