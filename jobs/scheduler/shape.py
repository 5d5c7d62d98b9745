"""Request shapes: the part of a queued job that decides where it may run.

Two jobs with the same shape pass and fail exactly the same filters on the same slaves, so the
cycle evaluates filters, searches for room and writes explanations once per shape. The shape
leaves out everything that only orders or limits jobs (user, submit time, bucket, interactive);
it keeps the project only through what it decides (ownership of private clusters) and the
durations only through what they decide (guest eligibility, reservation relations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from . import reservations as res_rules
from .model import QueuedJob, SchedulerConfig


@dataclass(frozen=True, slots=True)
class Shape:
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
        now: datetime,
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

    def owner_of(self, project: str) -> frozenset[int]:
        found = self._owner_of.get(project)
        if found is None:
            found = frozenset(cid for cid, owners in self._private_owners.items() if project in owners)
            self._owner_of[project] = found
        return found

    def shape(self, job: QueuedJob) -> Shape:
        models = ()
        if job.gpus > 0 and job.gpu_models:
            # gpuModel only narrows the GPUs a job gets: a job without GPUs ignores it.
            models = self._models.get(job.gpu_models)
            if models is None:
                models = self._models[job.gpu_models] = normalise_models(job.gpu_models)
        relations = []
        for rr in self._rrs:
            if job.cluster_id is not None and job.cluster_id != rr.res.cluster_id:
                continue  # cannot land on its slaves anyway
            if job.slave_name is not None and job.slave_name not in rr.slave_names:
                continue
            relation = res_rules.relation(job, rr, self._now)
            if relation is not None:
                relations.append((rr.id, relation))
        return Shape(
            gpus=job.gpus,
            cpus=job.cpus,
            memory_gb=float(job.memory_gb),
            gpu_models=models,
            features=job.features,
            min_cuda=job.min_cuda,
            cluster_id=job.cluster_id,
            slave_name=job.slave_name,
            owner_of=self.owner_of(job.project),
            guest_ok=job.cluster_id is None and job.min_duration_s <= self._guest_limit,
            res=tuple(relations),
            models_label=" or ".join(dict.fromkeys(m.strip() for m in job.gpu_models if m.strip()))
            if models
            else "",
        )
