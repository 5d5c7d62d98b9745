"""The mutable view of one cycle: free resources per slave, slave classes, reservations.

Slaves that are identical for every static rule (cluster, privacy, availability, GPU models,
CUDA, features, totals, reservations covering them) form a :class:`SlaveClass`. Static filters
run once per (request shape, class) instead of once per (job, slave), and each class keeps its
slaves in buckets by free GPU count so that the best-packed fit is found without a scan.
Free capacity only shrinks during a cycle (halted jobs keep their room until they end), so
every index only ever moves slaves to lower buckets.

maxSimultaneousJobs buckets and per-user limits are counted over the cycle too (``Limits``):
counts start from the snapshot (every active job, halting ones included: they still hold their
resources) and grow with each start of the cycle, so two jobs of a full bucket never both start.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from . import reservations as res_rules
from .model import QueuedJob, RunningJob, SchedulerConfig, SlaveState, Snapshot
from .quota_ledger import QuotaLedger

EPS = 1e-9  # memory is a float: never let rounding refuse an exact fit


def model_matches(model: str, wanted: tuple[str, ...]) -> bool:
    """GPULab's gpuModel rule: any wanted item is a case-insensitive substring (both lowered)."""
    return not wanted or any(item in model for item in wanted)


class SlaveRuntime:
    """Free resources of one slave, updated by every placement of the cycle."""

    __slots__ = (
        "state",
        "name",
        "rank",
        "cls",
        "gpu_models",
        "free_gpus",
        "free_cpus",
        "free_mem",
        "ports",
    )

    def __init__(self, state: SlaveState, rank: int) -> None:
        self.state = state
        self.name = state.name
        self.rank = rank  # position in name order: the deterministic tie-break
        self.cls: SlaveClass | None = None
        self.gpu_models = {gpu.index: gpu.model.lower() for gpu in state.gpus}
        self.free_gpus: list[int] = sorted(self.gpu_models)
        self.free_cpus: list[int] = sorted(set(state.cpu_ids))
        self.free_mem = float(state.memory_gb)
        # Fixed host ports taken on the slave; like free room, only grows during a cycle.
        self.ports: set[int] = set(state.ports_in_use)

    def matching_free(self, wanted: tuple[str, ...]) -> list[int]:
        """Free GPU ids whose model matches the wanted list, lowest first."""
        if not wanted:
            return self.free_gpus
        models = self.gpu_models
        return [i for i in self.free_gpus if model_matches(models[i], wanted)]


class SlaveClass:
    """Slaves that every static rule treats alike, with a free-GPU-count index."""

    __slots__ = (
        "id",
        "rep",
        "cluster_id",
        "private",
        "available",
        "ngpus",
        "models",
        "reservations",
        "slaves",
        "buckets",
        "single",
        "_match",
        "version",
    )

    def __init__(
        self, cid: int, rep: SlaveState, reservations: tuple[res_rules.ResRuntime, ...]
    ) -> None:
        self.id = cid
        self.single = False  # a one-slave view (pinned slaveName), not indexed
        self.rep = rep  # any member: all share the static attributes
        self.cluster_id = rep.cluster_id
        self.private = rep.cluster_private
        self.available = rep.online and rep.accepting_jobs
        self.ngpus = len({gpu.index for gpu in rep.gpus})
        self.models = tuple(sorted({gpu.model.lower() for gpu in rep.gpus}))
        self.reservations: tuple[res_rules.ResRuntime, ...] = reservations
        self.slaves: list[SlaveRuntime] = []
        self.buckets: list[list[int]] = [[] for _ in range(self.ngpus + 1)]
        self._match: dict[tuple[str, ...], str] = {}
        # Bumped whenever a member's free room or ports change (``touch``): what the placer
        # found in this class for a shape holds while the version does.
        self.version = 0

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.slaves]

    def match_mode(self, wanted: tuple[str, ...]) -> str:
        """``all``/``some``/``none`` of this class's GPU models match the wanted list."""
        if not wanted:
            return "all"
        mode = self._match.get(wanted)
        if mode is None:
            hits = [model_matches(model, wanted) for model in self.models]
            mode = "all" if hits and all(hits) else ("some" if any(hits) else "none")
            self._match[wanted] = mode
        return mode

    def touch(self) -> None:
        """A member's free GPUs, CPUs, memory or ports changed."""
        self.version += 1

    def add(self, slave: SlaveRuntime) -> None:
        self.slaves.append(slave)
        slave.cls = self
        insort(self.buckets[len(slave.free_gpus)], slave.rank)

    def move(self, slave: SlaveRuntime, old_free: int) -> None:
        """Re-index a slave whose free GPU count changed from ``old_free``."""
        new_free = len(slave.free_gpus)
        if new_free == old_free:
            return
        bucket = self.buckets[old_free]
        del bucket[bisect_left(bucket, slave.rank)]
        insort(self.buckets[new_free], slave.rank)


def single_class(slave: SlaveRuntime) -> SlaveClass:
    """A view of one slave as its own class, for jobs pinned to it by slaveName.

    It shares the reservations of the slave's real class but has no bucket index: placements
    still go through (and re-index) the real class.
    """
    real = slave.cls
    view = SlaveClass(-1 - slave.rank, slave.state, real.reservations if real else ())
    view.single = True
    view.slaves.append(slave)
    return view


def class_key(slave: SlaveState, covering: tuple[str, ...]) -> tuple[object, ...]:
    return (
        slave.cluster_id,
        slave.cluster_private,
        slave.cluster_owner_projects,
        slave.online and slave.accepting_jobs,
        tuple(sorted(gpu.model.lower() for gpu in slave.gpus)),
        len({gpu.index for gpu in slave.gpus}),
        slave.cuda_major,
        slave.features,
        len(set(slave.cpu_ids)),
        float(slave.memory_gb),
        covering,
    )


def build_classes(
    slaves: Sequence[SlaveRuntime], rrs: Sequence[res_rules.ResRuntime]
) -> list[SlaveClass]:
    """Group slaves (already in name order) into classes, numbered in order of first member."""
    by_key: dict[tuple[object, ...], SlaveClass] = {}
    classes: list[SlaveClass] = []
    for slave in slaves:
        covering = tuple(rr for rr in rrs if slave.name in rr.slave_names)
        key = class_key(slave.state, tuple(rr.id for rr in covering))
        cls = by_key.get(key)
        if cls is None:
            cls = by_key[key] = SlaveClass(len(classes), slave.state, covering)
            classes.append(cls)
        cls.add(slave)
    return classes


class Context:
    """Everything a cycle reads and updates; built from a snapshot by :func:`build_context`."""

    __slots__ = (
        "now",
        "config",
        "usage",
        "slaves",
        "by_name",
        "classes",
        "clusters",
        "reservations",
        "running",
        "running_by_slave",
        "leaving",
        "owner_demand",
        "private_owners",
        "quotas",
    )

    def __init__(
        self,
        now: datetime,
        config: SchedulerConfig,
        usage: Mapping[str, float],
        slaves: list[SlaveRuntime],
        rrs: list[res_rules.ResRuntime],
        running: list[RunningJob],
    ) -> None:
        self.now = now
        self.config = config
        self.usage = usage
        self.slaves = slaves  # index == rank
        self.by_name = {s.name: s for s in slaves}
        self.reservations = rrs
        self.running = running
        self.running_by_slave: dict[str, list[RunningJob]] = defaultdict(list)
        for job in running:
            self.running_by_slave[job.slave].append(job)
        self.classes = build_classes(slaves, rrs)
        self.clusters: dict[int, list[SlaveClass]] = defaultdict(list)
        for cls in self.classes:
            self.clusters[cls.cluster_id].append(cls)
        # Running jobs about to give their room back: halting, or halted/cancelled this cycle.
        self.leaving: set[str] = {job.id for job in running if job.halting}
        # Private cluster id -> number of queued owner jobs still waiting for room there.
        self.owner_demand: dict[int, int] = {}
        # Quota counters (build_context fills them from the snapshot's limits).
        self.quotas: QuotaLedger | None = None
        self.private_owners: dict[int, frozenset[str]] = {
            s.state.cluster_id: s.state.cluster_owner_projects
            for s in slaves
            if s.state.cluster_private
        }

    def usage_of(self, user: str) -> float:
        return float(self.usage.get(user, 0.0))


def build_context(snapshot: Snapshot) -> Context:
    """Free resources per slave after subtracting every running job, and the indexes."""
    states = sorted(snapshot.slaves, key=lambda s: s.name)
    slaves = [SlaveRuntime(state, rank) for rank, state in enumerate(states)]
    by_name = {s.name: s for s in slaves}
    running = sorted(snapshot.running, key=lambda job: job.id)
    used_gpus: dict[str, set[int]] = defaultdict(set)
    used_cpus: dict[str, set[int]] = defaultdict(set)
    used_mem: dict[str, float] = defaultdict(float)
    for job in running:
        used_gpus[job.slave].update(job.gpu_ids)
        used_cpus[job.slave].update(job.cpu_ids)
        used_mem[job.slave] += job.memory_gb
    for name, slave in by_name.items():
        if name in used_gpus:
            slave.free_gpus = [i for i in slave.free_gpus if i not in used_gpus[name]]
            slave.free_cpus = [i for i in slave.free_cpus if i not in used_cpus[name]]
            slave.free_mem -= used_mem[name]
    rrs = res_rules.build(snapshot.reservations, states, snapshot.now)
    ctx = Context(snapshot.now, snapshot.config, snapshot.usage, slaves, rrs, running)
    if snapshot.quotas:
        ctx.quotas = QuotaLedger(snapshot.now, snapshot.quotas, running)
    return ctx


# --- buckets and per-user limits --------------------------------------------------------------


class Limits:
    """Mutable counters for one cycle."""

    __slots__ = ("_buckets", "_user_jobs", "_user_gpus", "_max_jobs", "_max_gpus", "_quotas")

    def __init__(self, snapshot: Snapshot, quotas: QuotaLedger | None = None) -> None:
        # The quota counters (the pipeline's quota filter reads them) grow with the same starts.
        self._quotas = quotas
        from_running = Counter(job.bucket for job in snapshot.running if job.bucket is not None)
        # The bridge may count buckets itself (all active states); names it does not mention
        # are counted from the running jobs of the snapshot.
        self._buckets: Counter[str] = Counter(from_running)
        for name, count in snapshot.bucket_counts.items():
            self._buckets[name] = int(count)
        self._user_jobs: Counter[str] = Counter(job.user for job in snapshot.running)
        self._user_gpus: Counter[str] = Counter()
        for job in snapshot.running:
            self._user_gpus[job.user] += len(job.gpu_ids)
        self._max_jobs = snapshot.config.per_user_max_running_jobs
        self._max_gpus = snapshot.config.per_user_max_gpus

    def blocked(self, job: QueuedJob) -> str | None:
        """Why a limit keeps this job queued now, or None."""
        if job.bucket is not None:
            name, maximum = job.bucket
            count = self._buckets[name]
            if count >= maximum:
                return f"bucket {name} full ({count}/{maximum})"
        if self._max_jobs is not None:
            count = self._user_jobs[job.user]
            if count >= self._max_jobs:
                return f"user limit: {count}/{self._max_jobs} running jobs"
        if self._max_gpus is not None and job.gpus:
            used = self._user_gpus[job.user]
            if used + job.gpus > self._max_gpus:
                return f"user limit: {used}/{self._max_gpus} GPUs in use, job needs {job.gpus}"
        return None

    def record_start(self, job: QueuedJob) -> None:
        if self._quotas is not None:
            self._quotas.record_start(job)
        if job.bucket is not None:
            self._buckets[job.bucket[0]] += 1
        self._user_jobs[job.user] += 1
        self._user_gpus[job.user] += job.gpus
