"""Reading one cycle's Snapshot from the database, with a fixed number of queries."""

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, F, Func, JSONField, Model

from accounts.models import Project
from clusters.models import Cluster, Gpu, Slave
from core.timefmt import parse_utc_z
from jobs.models import ENDED_RUNS, Job
from jobs.scheduler import model as sm
from jobs.scheduler.placement import check_weights
from jobs.scheduler.runtimes import history_from_runs, history_keys
from jobs.scheduler_bridge.bulk_writes import keys_in
from jobs.scheduler_bridge.quota_usage import quota_limits
from jobs.scheduler_bridge.usage import usage_now
from jobs.states import HOLDS_RESOURCES, JobStatus
from reservations.models import Reservation

log = logging.getLogger(__name__)
# In these states a job still holds its room but will free it soon: never halt it again.
WINDING_DOWN = frozenset({JobStatus.MUSTHALT, JobStatus.HALTING, JobStatus.CANCELLING})


def scheduler_config() -> sm.SchedulerConfig:
    weights = settings.PORTAL_USAGE_WEIGHTS
    return sm.SchedulerConfig(
        usage_half_life_s=settings.PORTAL_USAGE_HALF_LIFE_S,
        gpu_weight=weights["gpu"],
        cpu_weight=weights["cpu"],
        mem_gb_weight=weights["mem_gb"],
        private_guest_max_min_duration_s=settings.PORTAL_PRIVATE_GUEST_MAX_MIN_DURATION_S,
        per_user_max_running_jobs=settings.PORTAL_USER_MAX_RUNNING_JOBS,
        per_user_max_gpus=settings.PORTAL_USER_MAX_GPUS,
        interactive_halt_wait_s=settings.PORTAL_INTERACTIVE_HALT_WAIT_S,
        halt_grace_s=settings.PORTAL_HALT_GRACE_S,
        scorer_weights=scorer_weights(),
    )


def scorer_weights() -> tuple[tuple[str, float], ...]:
    """``PORTAL_SCHEDULER_SCORER_WEIGHTS`` as the scheduler's (name, weight) pairs, checked."""
    weights = tuple(settings.PORTAL_SCHEDULER_SCORER_WEIGHTS.items())
    check_weights(weights)
    return weights


# --- snapshot ------------------------------------------------------------------------------


def slave_state(slave: Slave) -> sm.SlaveState:
    """A slave as the scheduler sees it: only what the portal may use of it ("acquired")."""
    cluster = slave.cluster
    return sm.SlaveState(
        name=slave.name,
        cluster_id=slave.cluster_id,
        cluster_private=cluster.is_private,
        cluster_owner_projects=frozenset(p.name for p in cluster.owner_projects.all()),
        online=slave.online,
        accepting_jobs=slave.accepting_jobs,
        gpus=tuple(
            sm.GpuInfo(index=g.index, model=g.model, memory_mb=g.memory_mb)
            for g in slave.gpus.all()
            if g.acquired
        ),
        cpu_ids=tuple(range(slave.usable_cpus)),
        memory_gb=slave.usable_memory_mb / 1024,
        cuda_major=slave.cuda_major,
        features=frozenset(slave.features or ()),
        instance_id=slave.instance_id,
    )


def slave_states() -> list[sm.SlaveState]:
    """Every slave as ``slave_state`` sees it, from three flat queries (no model instances:
    a thousand slaves with eight GPUs each cost a second as instances)."""
    owners: dict[int, set[str]] = defaultdict(set)
    for cluster_id, project in Cluster.owner_projects.through.objects.values_list(
        "cluster_id", "project__name"
    ):
        owners[cluster_id].add(project)
    private = set(Cluster.objects.filter(is_private=True).values_list("id", flat=True))
    gpus: dict[int, list[sm.GpuInfo]] = defaultdict(list)
    for slave_id, index, model, memory_mb in (
        Gpu.objects.filter(acquired=True)
        .order_by("slave_id", "index")
        .values_list("slave_id", "index", "model", "memory_mb")
    ):
        gpus[slave_id].append(sm.GpuInfo(index=index, model=model, memory_mb=memory_mb))
    rows = Slave.objects.values_list(
        "id", "name", "cluster_id", "online", "accepting_jobs", "acquired_cpus", "cpus_total",
        "acquired_memory_mb", "memory_total_mb", "cuda_version", "features", "instance_id",
    )  # fmt: skip
    states = []
    for (
        pk, name, cluster_id, online, accepting, acq_cpus, cpus, acq_mem, mem, cuda, features,
        instance,
    ) in rows:  # fmt: skip
        head = cuda.split(".", 1)[0]
        states.append(
            sm.SlaveState(
                name=name,
                cluster_id=cluster_id,
                cluster_private=cluster_id in private,
                cluster_owner_projects=frozenset(owners.get(cluster_id, ())),
                online=online,
                accepting_jobs=accepting,
                gpus=tuple(gpus.get(pk, ())),
                cpu_ids=tuple(range(acq_cpus if acq_cpus is not None else cpus)),
                memory_gb=(acq_mem if acq_mem is not None else mem) / 1024,
                cuda_major=int(head) if head.isdigit() else None,
                features=frozenset(features or ()),
                instance_id=instance,
            )
        )
    return states


# Only the port mappings of the request (a JSON path read by the database), not the request.
PORT_MAPPINGS = "request__docker__portMappings"
RUNNING_FIELDS = (
    "uuid", "owner__username", "project__name", "slave__name", "gpu_ids", "cpu_ids",
    "cpu_memory_gb", "tmpfs_gb", "started_at", "status_updated", "min_duration_s",
    "max_duration_s", "restartable", "reservation_ids", "bucket_name",
    "ignoring_reservation_ids", "status", "gpus", "cpus", PORT_MAPPINGS, "borrowed",
)  # fmt: skip
QUEUED_FIELDS = (
    "uuid", "owner__username", "project__name", "created", "gpus", "cpus", "cpu_memory_gb",
    "tmpfs_gb", "gpu_models", "features", "min_cuda_version", "requested_cluster_id",
    "requested_slave_name", "interactive", "restartable", "min_duration_s", "max_duration_s",
    "not_before", "not_after", "bucket_name", "bucket_max", "reservation_ids", "id",
    "explanation__lines", PORT_MAPPINGS, "gang_id",
)  # fmt: skip


def fixed_host_ports(mappings) -> frozenset[int]:
    """The fixed ``hostPort`` values of a request's portMappings (Docker picks the others)."""
    return frozenset(
        int(m["hostPort"])
        for m in mappings or ()
        if isinstance(m, dict) and m.get("hostPort") is not None
    )


def ports_in_use(running: list[dict]) -> dict[str, frozenset[int]]:
    """Fixed host ports held per slave name by the jobs that hold resources there."""
    found: dict[str, set[int]] = {}
    for row in running:
        ports = fixed_host_ports(row.get(PORT_MAPPINGS))
        if ports:
            found.setdefault(row["slave__name"], set()).update(ports)
    return {name: frozenset(ports) for name, ports in found.items()}


def halt_wait_since(queued: list[dict]) -> dict[str, datetime]:
    """Per queued interactive job: when running jobs were first halted for it (one query).

    Read from its haltEvents (``apply_halts`` records each halt made for a job on both sides).
    Interactive jobs stay queued only while they wait for such halts, so there are few of them.
    """
    interactive = [row["uuid"] for row in queued if row["interactive"]]
    if not interactive:
        return {}
    found: dict[str, datetime] = {}
    rows = Job.objects.filter(uuid__in=interactive).values_list("uuid", "halt_events")
    for uuid, events in rows:
        times = [
            moment
            for e in events or ()
            if str(uuid) in (e.get("startedJobUuids") or ())
            and (moment := parse_utc_z(e.get("time"))) is not None
        ]
        if times:
            found[str(uuid)] = min(times)
    return found


# Names the rows carry, each read from its own table by id rather than joined to every job
# row: the planner has no statistics for rows written in the same transaction (a first tick
# after a bulk load, the benchmark) and then nests loops over users and slaves per job row
# (0.4 s per query at 10k jobs). The ids go as one parameter (``keys_in``): a subquery of the
# job filter instead gets the same bad plans (1.3 s). One query per name, whatever the rows.
JOINED_NAMES: dict[str, tuple[str, Callable[[], type[Model]], str]] = {
    "owner__username": ("owner_id", get_user_model, "username"),
    "project__name": ("project_id", lambda: Project, "name"),
    "slave__name": ("slave_id", lambda: Slave, "name"),
}


# JSON values the rows carry, read on PostgreSQL as one array per row: each JSON value comes
# back as text that Django parses with its own call (five per row, 0.1 s of a 10k queue).
PACKED_JSON = frozenset(
    {"gpu_ids", "cpu_ids", "reservation_ids", "ignoring_reservation_ids", "gpu_models",
     "features", "explanation__lines", "request__docker__portMappings"}
)  # fmt: skip
PACKED = "packed_json_values"


def values_with_names(queryset, fields: tuple[str, ...]) -> list[dict]:
    """``queryset.values(*fields)`` (the same dicts). On PostgreSQL the JOINED_NAMES among them
    are read by id and the PACKED_JSON ones as one array; SQLite joins well, and the separate
    reads measured no faster there."""
    if connection.vendor != "postgresql":
        return list(queryset.values(*fields))
    joined = [(name, *JOINED_NAMES[name]) for name in fields if name in JOINED_NAMES]
    columns = {name: column for name, column, _, _ in joined}
    packed = [f for f in fields if f in PACKED_JSON]
    read = [columns.get(f, f) for f in fields if f not in PACKED_JSON]
    if packed:
        queryset = queryset.annotate(
            **{
                PACKED: Func(
                    *map(F, packed), function="jsonb_build_array", output_field=JSONField()
                )
            }
        )
        read.append(PACKED)
    rows = list(queryset.values(*read))
    if packed:
        for row in rows:
            row.update(zip(packed, row.pop(PACKED), strict=True))
    for name, column, model_of, attr in joined:
        model = model_of()
        ids = sorted({row[column] for row in rows} - {None})
        names = dict(model._base_manager.filter(pk__in=keys_in(model, ids)).values_list("pk", attr))
        for row in rows:
            key = row.pop(column)
            row[name] = names.get(key) if key is not None else None
    return rows


def running_rows() -> list[dict]:
    return values_with_names(
        Job.objects.filter(status__in=HOLDS_RESOURCES, slave__isnull=False), RUNNING_FIELDS
    )


def running_job(row: dict, now: datetime) -> sm.RunningJob:
    return sm.RunningJob(
        id=str(row["uuid"]),
        user=row["owner__username"],
        project=row["project__name"],
        slave=row["slave__name"],
        gpu_ids=tuple(row["gpu_ids"]),
        cpu_ids=tuple(row["cpu_ids"]),
        memory_gb=float(Job.held_memory_of(row["cpu_memory_gb"], row["tmpfs_gb"])),
        # ASSIGNED jobs have not started: their minDuration clock has not begun either.
        started_at=row["started_at"] or now,
        # A restarted job's maxDuration is already reduced by the earlier runs.
        run_seconds_before=0,
        min_duration_s=row["min_duration_s"],
        max_duration_s=row["max_duration_s"],
        restartable=row["restartable"],
        reservation_ids=frozenset(row["reservation_ids"]),
        bucket=row["bucket_name"] or None,
        ignoring_reservation_ids=frozenset(row["ignoring_reservation_ids"]),
        halting=row["status"] in WINDING_DOWN,
        borrowed=row["borrowed"],
    )


def queued_job(row: dict) -> sm.QueuedJob:
    return sm.QueuedJob(
        id=str(row["uuid"]),
        user=row["owner__username"],
        project=row["project__name"],
        submitted_at=row["created"],
        gpus=row["gpus"],
        cpus=row["cpus"],
        memory_gb=float(Job.held_memory_of(row["cpu_memory_gb"], row["tmpfs_gb"])),
        gpu_models=tuple(row["gpu_models"]),
        features=frozenset(row["features"]),
        min_cuda=row["min_cuda_version"],
        cluster_id=row["requested_cluster_id"],
        slave_name=row["requested_slave_name"] or None,
        interactive=row["interactive"],
        restartable=row["restartable"],
        min_duration_s=row["min_duration_s"],
        max_duration_s=row["max_duration_s"],
        not_before=row["not_before"],
        not_after=row["not_after"],
        bucket=(row["bucket_name"], row["bucket_max"]) if row["bucket_name"] else None,
        reservation_ids=frozenset(row["reservation_ids"]),
        host_ports=fixed_host_ports(row.get(PORT_MAPPINGS)),
        halt_wait_since=row.get("halt_wait_since"),
        gang=str(row["gang_id"]) if row.get("gang_id") is not None else None,
        gang_size=row.get("gang_size", 0),
    )


def gang_sizes(queued: list[dict]) -> dict[int, int]:
    """Tasks in the current attempt of each gang with a queued task (one query, only when
    gangs wait): a gang starts only when all of them are queued (jobs/scheduler/gang.py)."""
    ids = {row["gang_id"] for row in queued if row.get("gang_id") is not None}
    if not ids:
        return {}
    rows = (
        Job.objects.filter(gang_id__in=ids, gang_attempt=F("gang__attempt"))
        .values("gang_id")
        .annotate(n=Count("id"))
        .values_list("gang_id", "n")
    )
    return dict(rows)


def reservation_windows(now: datetime) -> list[sm.ReservationWindow]:
    reservations = Reservation.objects.filter(end__gt=now).prefetch_related(
        "slaves", "projects", "users"
    )
    return [
        sm.ReservationWindow(
            id=str(r.uuid),
            name=r.name,
            cluster_id=r.cluster_id,
            start=r.start,
            end=r.end,
            slave_names=frozenset(s.name for s in r.slaves.all()),
            gpu_count=r.gpu_count,
            entitled_projects=frozenset(p.name for p in r.projects.all()),
            entitled_users=frozenset(u.username for u in r.users.all()),
        )
        for r in reservations
    ]


def bucket_counts() -> dict[str, int]:
    rows = (
        Job.objects.filter(status__in=HOLDS_RESOURCES)
        .exclude(bucket_name="")
        .values("bucket_name")
        .annotate(n=Count("id"))
    )
    return {row["bucket_name"]: row["n"] for row in rows}


# Start estimates read the run times of the runs that ended in this window, the latest first
# (at most HISTORY_RUNS of them; jobs/scheduler/runtimes.py keeps 50 per key).
HISTORY_WINDOW = timedelta(days=30)
HISTORY_RUNS = 5000
IMAGE = "request__docker__image"


def runtime_history(now: datetime) -> sm.RuntimeHistory:
    """How long the latest runs lasted, and the keys of every queued and running job (two
    queries), for start estimates (``jobs.scheduler.runtimes``; the tick reads none).

    A run lasted from its start to its end (``Job.run_end_of``: the container's finish time),
    whatever ended it: finished, failed, cancelled or halted, as jobs really do.
    """
    runs = (
        Job.objects.filter(
            ENDED_RUNS, started_at__isnull=False, status_updated__gt=now - HISTORY_WINDOW
        )
        .order_by("-status_updated")
        .values_list("owner__username", "name", IMAGE, "started_at", "ended_at", "status",
                     "status_updated")[:HISTORY_RUNS]
    )  # fmt: skip
    ended = []
    for user, name, image, started, ended_at, status, updated in runs:
        end = Job.run_end_of(status=status, ended_at=ended_at, status_updated=updated, now=now)
        keys = history_keys(user=user, name=name, image=str(image or ""))
        ended.append((keys, (end - started).total_seconds()))
    jobs = Job.objects.filter(status__in=[JobStatus.QUEUED, *HOLDS_RESOURCES]).values_list(
        "uuid", "owner__username", "name", IMAGE
    )
    job_keys = {
        str(uuid): history_keys(user=user, name=name, image=str(image or ""))
        for uuid, user, name, image in jobs
    }
    return history_from_runs(ended, job_keys)


def build_snapshot(
    now: datetime,
    *,
    running: list[dict] | None = None,
    usage: dict[str, float] | None = None,
    history: bool = False,
) -> tuple[sm.Snapshot, list[dict]]:
    """The snapshot and the queued rows (the latter to compare explanations on apply).

    Reads only. The tick passes the running rows and the usage it has just accrued
    (``jobs.scheduler_bridge.usage.usage_accrue``, the one writer of UserUsage); without them
    the usage is what a tick now would store (``usage_now``). ``history``: with the run times
    start estimates use (``runtime_history``); the tick never needs them."""
    config = scheduler_config()
    if running is None:
        running = running_rows()
    if usage is None:
        usage = usage_now(now=now, config=config)
    queued = values_with_names(Job.objects.filter(status=JobStatus.QUEUED), QUEUED_FIELDS)
    for row in queued:  # what apply compares the new explanations with
        row["queued_explanations"] = row.pop("explanation__lines") or []
    waits = halt_wait_since(queued)
    if waits:
        for row in queued:
            if row["interactive"] and str(row["uuid"]) in waits:
                row["halt_wait_since"] = waits[str(row["uuid"])]
    sizes = gang_sizes(queued)
    for row in queued:
        if row["gang_id"] is not None:
            row["gang_size"] = sizes.get(row["gang_id"], 0)
    ports = ports_in_use(running)
    # Limits of every project and user with a queued job (running jobs alone need none: a
    # limit only ever keeps a job from starting).
    quotas = quota_limits(
        now=now,
        projects={row["project__name"] for row in queued},
        users={row["owner__username"] for row in queued},
    )
    snapshot = sm.Snapshot(
        now=now,
        slaves=tuple(
            replace(s, ports_in_use=ports[s.name]) if s.name in ports else s for s in slave_states()
        ),
        running=tuple(running_job(row, now) for row in running),
        queued=tuple(queued_job(row) for row in queued),
        reservations=tuple(reservation_windows(now)),
        usage=usage,
        bucket_counts=bucket_counts(),
        config=config,
        history=runtime_history(now) if history else None,
        quotas=quotas,
    )
    return snapshot, queued
