"""Request shapes: the part of a queued job that decides where it may run.

Two jobs with the same shape pass and fail exactly the same filters on the same slaves, so the
cycle evaluates filters, searches for room and writes explanations once per shape. The shape
leaves out everything that only orders or limits jobs (user, submit time, bucket, interactive);
it keeps the project only through what it decides (ownership of private clusters) and the
durations only through what they decide (guest eligibility, reservation relations). Fixed host
ports are part of it: they are a resource of the slave.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from . import reservations as res_rules
from .model import QueuedJob, SchedulerConfig


@dataclass(frozen=True, slots=True, eq=False)
class Shape:
    """Interned by :class:`ShapeFactory`: equal requests get the same object, which then hashes
    and compares by identity (cheap, since every cache of the cycle is keyed by shape)."""

    gpus: int
    cpus: int
    memory_gb: float
    gpu_models: tuple[str, ...]  # lowered, sorted, unique; empty = any (or no GPUs asked)
    features: frozenset[str]
    min_cuda: int | None
    cluster_id: int | None
    slave_name: str | None
    owner_of: frozenset[int]  # private clusters whose owner projects include the job's project
    guest_ok: bool  # may run as a guest on private clusters it does not own
    res: tuple[tuple[str, str], ...]  # (reservation id, relation) for the reservations concerned
    host_ports: frozenset[int]  # fixed host ports: at most one job per port on a slave
    # The gpuModel items as the user wrote them, for messages only.
    models_label: str = field(default="", compare=False)

    def rel(self, res_id: str) -> str | None:
        for rid, relation in self.res:
            if rid == res_id:
                return relation
        return None


def normalise_models(models: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted({m.strip().lower() for m in models if m and m.strip()}))


class ShapeFactory:
    """Builds shapes, caching the per-project and per-model-list parts."""

    def __init__(
        self,
        *,
        now: datetime | None,
        config: SchedulerConfig,
        private_owners: Mapping[int, frozenset[str]],
        rrs: Sequence[res_rules.ResRuntime] = (),
    ) -> None:
        self._now = now
        self._guest_limit = config.private_guest_max_min_duration_s
        self._private_owners = private_owners
        self._rrs = rrs
        self._owner_of: dict[str, frozenset[int]] = {}
        self._models: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._interned: dict[tuple[object, ...], Shape] = {}

    def owner_of(self, project: str) -> frozenset[int]:
        found = self._owner_of.get(project)
        if found is None:
            found = frozenset(
                cid for cid, owners in self._private_owners.items() if project in owners
            )
            self._owner_of[project] = found
        return found

    def shape(self, job: QueuedJob) -> Shape:
        models: tuple[str, ...] = ()
        if job.gpus > 0 and job.gpu_models:
            # gpuModel only narrows the GPUs a job gets: a job without GPUs ignores it.
            cached = self._models.get(job.gpu_models)
            if cached is None:
                cached = self._models[job.gpu_models] = normalise_models(job.gpu_models)
            models = cached
        relations = []
        for rr in self._rrs:
            if job.cluster_id is not None and job.cluster_id != rr.res.cluster_id:
                continue  # cannot land on its slaves anyway
            if job.slave_name is not None and job.slave_name not in rr.slave_names:
                continue
            # Reservations come with the cycle's time; explain's factories have neither.
            assert self._now is not None, "a ShapeFactory with reservations needs now"
            relation = res_rules.relation(job, rr, self._now)
            if relation is not None:
                relations.append((rr.id, relation))
        key = (
            job.gpus,
            job.cpus,
            float(job.memory_gb),
            models,
            job.features,
            job.min_cuda,
            job.cluster_id,
            job.slave_name,
            self.owner_of(job.project),
            job.cluster_id is None and job.min_duration_s <= self._guest_limit,
            tuple(relations),
            job.host_ports,
        )
        found = self._interned.get(key)
        if found is None:
            label = " or ".join(dict.fromkeys(m.strip() for m in job.gpu_models if m.strip()))
            found = self._interned[key] = Shape(*key, models_label=label if models else "")
        return found
