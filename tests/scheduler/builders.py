"""Small builders for hand-made scheduler snapshots (no database, no Django)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from jobs.scheduler import (
    GpuInfo,
    QueuedJob,
    ReservationWindow,
    RunningJob,
    SchedulerConfig,
    SlaveState,
    Snapshot,
    Start,
)
from jobs.scheduler.model import CycleResult

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
V100 = "Tesla V100-PCIE-32GB"
A100 = "NVIDIA A100-SXM4-80GB"
GTX = "GeForce GTX 1080 Ti"
HOUR = 3600
DAY = 24 * HOUR
WEEK = 7 * DAY


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def later(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def slave(
    name: str,
    cluster: int = 1,
    *,
    gpus: int = 4,
    model: str = V100,
    models: tuple[str, ...] | None = None,
    cpus: int = 16,
    memory: float = 64.0,
    private: bool = False,
    owners: tuple[str, ...] = (),
    online: bool = True,
    accepting: bool = True,
    cuda: int | None = 12,
    features: tuple[str, ...] = (),
) -> SlaveState:
    models = models or (model,) * gpus
    return SlaveState(
        name=name,
        cluster_id=cluster,
        cluster_private=private,
        cluster_owner_projects=frozenset(owners),
        online=online,
        accepting_jobs=accepting,
        gpus=tuple(GpuInfo(i, m, 32000) for i, m in enumerate(models)),
        cpu_ids=tuple(range(cpus)),
        memory_gb=memory,
        cuda_major=cuda,
        features=frozenset(features),
    )


def running(
    job_id: str,
    on: str,
    *,
    user: str = "heavy",
    project: str = "proj",
    gpu_ids: tuple[int, ...] = (),
    cpu_ids: tuple[int, ...] = (),
    memory: float = 0.0,
    started: datetime | None = None,
    min_s: int = HOUR,
    max_s: int = 2 * WEEK,
    run_before: int = 0,
    restartable: bool = False,
    reservation_ids: tuple[str, ...] = (),
    ignoring: tuple[str, ...] = (),
    bucket: str | None = None,
    halting: bool = False,
) -> RunningJob:
    return RunningJob(
        id=job_id,
        user=user,
        project=project,
        slave=on,
        gpu_ids=gpu_ids,
        cpu_ids=cpu_ids,
        memory_gb=memory,
        started_at=started or ago(DAY),
        run_seconds_before=run_before,
        min_duration_s=min_s,
        max_duration_s=max_s,
        restartable=restartable,
        reservation_ids=frozenset(reservation_ids),
        bucket=bucket,
        ignoring_reservation_ids=frozenset(ignoring),
        halting=halting,
    )


def queued(
    job_id: str,
    *,
    user: str = "alice",
    project: str = "proj",
    gpus: int = 1,
    cpus: int = 1,
    memory: float = 1.0,
    submitted: datetime | None = None,
    models: tuple[str, ...] = (),
    features: tuple[str, ...] = (),
    reservations: tuple[str, ...] = (),
    **extra,
) -> QueuedJob:
    return QueuedJob(
        id=job_id,
        user=user,
        project=project,
        submitted_at=submitted or ago(HOUR),
        gpus=gpus,
        cpus=cpus,
        memory_gb=memory,
        gpu_models=models,
        features=frozenset(features),
        reservation_ids=frozenset(reservations),
        **extra,
    )


def reservation(
    res_id: str,
    *,
    name: str | None = None,
    cluster: int = 1,
    start: datetime,
    end: datetime,
    slaves: tuple[str, ...] = (),
    gpu_count: int | None = None,
    projects: tuple[str, ...] = (),
    users: tuple[str, ...] = (),
) -> ReservationWindow:
    return ReservationWindow(
        id=res_id,
        name=name or res_id,
        cluster_id=cluster,
        start=start,
        end=end,
        slave_names=frozenset(slaves),
        gpu_count=gpu_count,
        entitled_projects=frozenset(projects),
        entitled_users=frozenset(users),
    )


def snapshot(
    *,
    slaves=(),
    running=(),
    queued=(),
    reservations=(),
    usage=None,
    bucket_counts=None,
    config: SchedulerConfig | None = None,
    now: datetime = NOW,
) -> Snapshot:
    return Snapshot(
        now=now,
        slaves=tuple(slaves),
        running=tuple(running),
        queued=tuple(queued),
        reservations=tuple(reservations),
        usage=dict(usage or {}),
        bucket_counts=dict(bucket_counts or {}),
        config=config or SchedulerConfig(),
    )


def started(result: CycleResult) -> dict[str, Start]:
    """Start decisions by job id."""
    return {d.job_id: d for d in result.starts}


def halted_ids(result: CycleResult) -> set[str]:
    return {d.job_id for d in result.halts}


def failed(result: CycleResult) -> dict[str, str]:
    return {d.job_id: d.reason for d in result.fails}
