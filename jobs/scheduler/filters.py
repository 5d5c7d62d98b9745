"""Filter plugins, in the manner of the Kubernetes scheduling framework.

Every filter implements one protocol (:class:`Filter`): a ``name``, a ``stage``, ``relevant(shape)``
(the framework's PreFilter "skip": a filter that cannot reject a shape is not asked about it),
``rejects(shape, target, env) -> reason | None`` and ``summarize(...)`` (aggregated explanation
lines about what it rejected). The ordered tuple of filters that placing and explaining both walk
is ``pipeline.PIPELINE``; what used to be special cases of that walk are attributes here.

Stages, in pipeline order (``Stage``):

* ``JOB`` -- about the job alone, the same on every slave (quotas, ``QUOTA`` below): asked
  once per job with the job as ``target``, before any slave is looked at; its reason is the
  job's explanation.
* ``IDENTITY`` -- never changes while the slave stays registered as it is; also decides whether a
  request is impossible. Asked of a :class:`~.state.SlaveClass` (its representative slave:
  every member gets the same answer).
* ``RUNTIME`` -- availability and whole-slave reservations, fixed for the cycle (per class).
* ``DYNAMIC`` -- changes as the cycle places jobs (owner demand, reservation budgets; per class).
* ``ROOM`` -- one slave's free room and ports (per :class:`~.state.SlaveRuntime`: members of a
  class differ). Room filters also offer ``fits(shape, slave)``, the boolean form of ``rejects``
  for the placement search; :class:`FreeResources` is ``indexed``: the classes' buckets by free
  GPU count answer its GPU part.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from enum import IntEnum
from typing import Any, Protocol

from . import reservations as res_rules
from .model import QueuedJob, SchedulerConfig, SlaveState
from .shape import Shape
from .state import EPS, Context, SlaveClass, SlaveRuntime, model_matches, single_class
from .text import compress_names, fmt_gb, join_limited, plural
from .timing import format_duration


class Stage(IntEnum):
    JOB = 0
    IDENTITY = 1
    RUNTIME = 2
    DYNAMIC = 3
    ROOM = 4


class Filter(Protocol):
    """What every filter offers (see the module docstring).

    ``rejects`` takes a :class:`SlaveClass` in the class stages and a :class:`SlaveRuntime` in
    ``ROOM``. ``summarize`` returns explanation lines: in ``IDENTITY`` about classes none of which
    passes (one line), in ``RUNTIME``/``DYNAMIC`` about the classes this filter was the first to
    reject, in ``ROOM`` about the members of the usable classes (ranks in ``skip`` were explained
    by an earlier room filter).

    Attributes that replace special cases of the walk:

    * ``explain_order`` -- where its lines go in an explanation (most specific first);
    * ``pins`` -- narrows the set to one slave before the later filters (``pin``): slaveName;
    * ``names_itself`` -- classes it alone keeps off are named by it even when a later filter
      rejects the rest ("no slave has 4 A100s" is misleading when a private cluster has them);
    * ``indexed`` -- a room filter the class index answers (placement scans buckets, not slaves);
    * ``narrows`` -- an identity filter the job chose (clusterId): the slaves it rejects are out
      of the job's scope, not obstacles, and identity refusals never name it for them.
    """

    name: str
    stage: Stage
    explain_order: int
    pins: bool
    names_itself: bool
    indexed: bool
    narrows: bool

    def relevant(self, shape: Shape) -> bool: ...

    # ``target``: a SlaveClass, or a SlaveRuntime in ROOM.
    def rejects(self, shape: Shape, target: Any, env: Env) -> str | None: ...

    # ``rejected``: classes; ROOM filters also take ``skip`` (ranks explained already).
    def summarize(
        self, shape: Shape, rejected: Any, env: Env, *args: Any, **kwargs: Any
    ) -> list[str]: ...

    # ``pins`` filters only: the one-slave view of the named slave, or None.
    def pin(self, shape: Shape, left: Sequence[SlaveClass]) -> SlaveClass | None: ...

    # ROOM filters only: the boolean form of ``rejects`` for the placement search.
    def fits(self, shape: Shape, slave: SlaveRuntime) -> bool: ...


class BaseFilter:
    """Defaults of the protocol's attributes."""

    name = ""
    stage = Stage.IDENTITY
    explain_order = 0
    pins = False
    names_itself = False
    indexed = False
    narrows = False

    def relevant(self, shape: Shape) -> bool:
        return True

    def pin(self, shape: Shape, left: Sequence[SlaveClass]) -> SlaveClass | None:
        raise NotImplementedError(f"{self.name} does not pin (pins is False)")

    def fits(self, shape: Shape, slave: SlaveRuntime) -> bool:
        raise NotImplementedError(f"{self.name} is not a room filter")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class Env:
    """What filters need besides the shape and the slave (``ctx`` is None outside a cycle).

    It also memoises per-slave counts: the same representative slaves are asked about again and
    again (once per request shape), and the snapshot keeps them alive for the whole cycle.
    """

    __slots__ = ("config", "ctx", "memo", "_models", "_matching", "_cpus")

    def __init__(self, config: SchedulerConfig, ctx: Context | None = None) -> None:
        self.config = config
        self.ctx = ctx
        # Per-cycle memo for plugins (keyed by plugin and objects alive).
        self.memo: dict[tuple[object, ...], Any] = {}
        self._models: dict[int, dict[int, str]] = {}
        self._matching: dict[tuple[int, tuple[str, ...]], int] = {}
        self._cpus: dict[int, int] = {}

    def matching_gpus(self, slave: SlaveState, wanted: tuple[str, ...]) -> int:
        """How many GPUs of the slave have a model the request accepts."""
        key = (id(slave), wanted)
        found = self._matching.get(key)
        if found is None:
            models = self._models.get(id(slave))
            if models is None:
                models = self._models[id(slave)] = {g.index: g.model.lower() for g in slave.gpus}
            found = sum(1 for model in models.values() if model_matches(model, wanted))
            self._matching[key] = found
        return found

    def cpus(self, slave: SlaveState) -> int:
        found = self._cpus.get(id(slave))
        if found is None:
            found = self._cpus[id(slave)] = len(set(slave.cpu_ids))
        return found


def _gpu_word(shape: Shape) -> str:
    return f"{shape.models_label} GPU" if shape.models_label else "GPU"


def scope_of(shape: Shape) -> str:
    """Prefix of aggregated messages: what part of the fleet they talk about."""
    return f"cluster {shape.cluster_id}: " if shape.cluster_id is not None else ""


# --- identity filters ------------------------------------------------------------------------


class ClusterFilter(BaseFilter):
    name = "cluster"
    narrows = True

    def relevant(self, shape: Shape) -> bool:
        return shape.cluster_id is not None

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        slave = cls.rep
        if shape.cluster_id is None or slave.cluster_id == shape.cluster_id:
            return None
        return f"slave {slave.name} is in cluster {slave.cluster_id}, job asks for cluster {shape.cluster_id}"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> list[str]:
        if not groups:
            return ["no slaves are registered"]
        known = sorted({g.cluster_id for g in groups})
        return [f"no cluster {shape.cluster_id} (known: {join_limited(map(str, known), 10)})"]


class SlaveNameFilter(BaseFilter):
    """slaveName: the walk narrows the classes left to a one-slave view of the named slave."""

    name = "slave name"
    pins = True

    def relevant(self, shape: Shape) -> bool:
        return shape.slave_name is not None

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        if shape.slave_name is None or cls.rep.name == shape.slave_name:
            return None
        return f"job asks for slave {shape.slave_name}"

    def pin(self, shape: Shape, left: Sequence[SlaveClass]) -> SlaveClass | None:
        """A one-slave view of the named slave among the classes left, or None."""
        found = next((s for g in left for s in g.slaves if s.name == shape.slave_name), None)
        return None if found is None else single_class(found)

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> list[str]:
        """``groups`` are all classes: say where the slave is when it is elsewhere."""
        for g in groups:
            if shape.slave_name in g.names:
                return [
                    f"slave {shape.slave_name} is in cluster {g.cluster_id}, "
                    f"not cluster {shape.cluster_id}"
                ]
        return [f"no slave named {shape.slave_name}"]


class PrivateAccessFilter(BaseFilter):
    """Owners' projects only; others as guests with no clusterId and a short minDuration."""

    name = "private cluster"
    names_itself = True

    def relevant(self, shape: Shape) -> bool:
        return not shape.guest_ok

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        slave = cls.rep
        if not slave.cluster_private or slave.cluster_id in shape.owner_of or shape.guest_ok:
            return None
        if shape.cluster_id is not None:
            return f"cluster {slave.cluster_id} is private to its owners' projects"
        limit = format_duration(env.config.private_guest_max_min_duration_s)
        return (
            f"private cluster {slave.cluster_id} takes guest jobs only with minDuration <= {limit}"
        )

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> list[str]:
        clusters = sorted({g.cluster_id for g in groups})
        if shape.cluster_id is not None:
            return [f"cluster {shape.cluster_id} is private to its owners' projects"]
        limit = format_duration(env.config.private_guest_max_min_duration_s)
        which = ", ".join(map(str, clusters))
        noun = "cluster {} takes" if len(clusters) == 1 else "clusters {} take"
        return [f"private {noun.format(which)} guest jobs only with minDuration <= {limit}"]


class GpuModelFilter(BaseFilter):
    name = "gpu model"

    def relevant(self, shape: Shape) -> bool:
        return bool(shape.gpu_models)

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        slave = cls.rep
        if not shape.gpu_models or env.matching_gpus(slave, shape.gpu_models):
            return None
        has = join_limited(sorted({gpu.model for gpu in slave.gpus})) or "no GPUs"
        return f"slave {slave.name} has no GPU model {shape.models_label} (has: {has})"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> list[str]:
        known = join_limited(sorted({gpu.model for g in groups for gpu in g.rep.gpus})) or "none"
        return [f"{scope_of(shape)}no slave has GPU model {shape.models_label} (known: {known})"]


class CudaFilter(BaseFilter):
    name = "cuda"

    def relevant(self, shape: Shape) -> bool:
        return shape.min_cuda is not None

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        slave = cls.rep
        if shape.min_cuda is None or (
            slave.cuda_major is not None and slave.cuda_major >= shape.min_cuda
        ):
            return None
        has = "no CUDA version" if slave.cuda_major is None else f"CUDA {slave.cuda_major}"
        return f"slave {slave.name} has {has}, job needs CUDA >= {shape.min_cuda}"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> list[str]:
        versions = [g.rep.cuda_major for g in groups if g.rep.cuda_major is not None]
        highest = f"highest: {max(versions)}" if versions else "none reports a CUDA version"
        return [f"{scope_of(shape)}no slave has CUDA >= {shape.min_cuda} ({highest})"]


class FeaturesFilter(BaseFilter):
    name = "features"

    def relevant(self, shape: Shape) -> bool:
        return bool(shape.features)

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        missing = shape.features - cls.rep.features
        if not missing:
            return None
        return f"slave {cls.rep.name} lacks feature(s) {', '.join(sorted(missing))}"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> list[str]:
        offered = frozenset().union(*(g.rep.features for g in groups))
        missing = sorted(shape.features - offered)
        if missing:
            return [f"{scope_of(shape)}no slave offers feature(s) {', '.join(missing)}"]
        wanted = ", ".join(sorted(shape.features))
        return [f"{scope_of(shape)}no slave offers all of the features {wanted}"]


class CapacityFilter(BaseFilter):
    """The slave's whole capacity (ignoring load) is large enough."""

    name = "capacity"

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        slave = cls.rep
        gpus = env.matching_gpus(slave, shape.gpu_models)
        if gpus < shape.gpus:
            return (
                f"slave {slave.name} has {plural(gpus, _gpu_word(shape))}, job needs {shape.gpus}"
            )
        cpus = env.cpus(slave)
        if cpus < shape.cpus:
            return f"slave {slave.name} has {plural(cpus, 'CPU')}, job needs {shape.cpus}"
        if slave.memory_gb + EPS < shape.memory_gb:
            return (
                f"slave {slave.name} has {fmt_gb(slave.memory_gb)} memory, "
                f"job needs {fmt_gb(shape.memory_gb)}"
            )
        return None

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> list[str]:
        return [self._summary(shape, groups, env)]

    def _summary(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
        scope = scope_of(shape)
        word = _gpu_word(shape)
        sized = [(env.matching_gpus(g.rep, shape.gpu_models), g) for g in groups]
        enough = [g for n, g in sized if n >= shape.gpus]
        if not enough:
            n, best = max(sized, key=lambda item: (item[0], -item[1].slaves[0].rank))
            return (
                f"{scope}no slave has {plural(shape.gpus, word)} "
                f"(largest: {n} on {best.slaves[0].name})"
            )
        with_gpus = f"with {plural(shape.gpus, word)} " if shape.gpus else ""
        cpus = [(env.cpus(g.rep), g) for g in enough]
        roomy = [g for n, g in cpus if n >= shape.cpus]
        if not roomy:
            n, best = max(cpus, key=lambda item: (item[0], -item[1].slaves[0].rank))
            return (
                f"{scope}no slave {with_gpus}has {plural(shape.cpus, 'CPU')} "
                f"(largest: {n} on {best.slaves[0].name})"
            )
        best = max(roomy, key=lambda g: (g.rep.memory_gb, -g.slaves[0].rank))
        with_cpus = f"with {plural(shape.cpus, 'CPU')} " if not shape.gpus else with_gpus
        return (
            f"{scope}no slave {with_cpus}has {fmt_gb(shape.memory_gb)} memory "
            f"(largest: {fmt_gb(best.rep.memory_gb)} on {best.slaves[0].name})"
        )


# --- The quota filter -----------------------------------------------------------------------
# The ``JOB`` stage of ``pipeline.PIPELINE`` (``quota_ledger.py`` counts). A limit is the same
# on every slave, so the filter is asked once per job, before any slave is
# looked at; its line is the job's explanation, as a full bucket's is.


class QuotaFilter(BaseFilter):
    """The hard levels of the quotas that apply to a job (``QuotaLedger.blocked``)."""

    name = "quota"
    stage = Stage.JOB

    def rejects(self, shape: Shape | None, target: Any, env: Env) -> str | None:
        ledger = env.ctx.quotas if env.ctx is not None else None
        if ledger is None:
            return None
        assert isinstance(target, QueuedJob)
        return ledger.blocked(target)

    def summarize(
        self, shape: Shape, rejected: Any, env: Env, *args: Any, **kwargs: Any
    ) -> list[str]:
        return []


CLUSTER = ClusterFilter()
SLAVE_NAME = SlaveNameFilter()
PRIVATE_ACCESS = PrivateAccessFilter()
GPU_MODEL = GpuModelFilter()
CUDA = CudaFilter()
FEATURES = FeaturesFilter()
CAPACITY = CapacityFilter()
QUOTA = QuotaFilter()


# --- runtime filters (fixed for the cycle) ---------------------------------------------------


def _describe_reservations(
    blocking: Callable[[Shape, SlaveClass], res_rules.ResRuntime | None],
    shape: Shape,
    rejected: Sequence[SlaveClass],
    env: Env,
) -> list[str]:
    """One line per reservation that keeps the job off some of the slaves."""
    assert env.ctx is not None
    seen: dict[str, str] = {}
    for cls in rejected:
        rr = blocking(shape, cls)
        if rr is not None and rr.id not in seen:
            seen[rr.id] = rr.describe(env.ctx.now)
    return list(seen.values())


class AvailabilityFilter(BaseFilter):
    name = "availability"
    stage = Stage.RUNTIME
    explain_order = 5

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        if cls.available:
            return None
        slave = cls.rep
        if not slave.online:
            return f"slave {slave.name} is offline"
        return f"slave {slave.name} is not accepting jobs"

    def summarize(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        key = ("availability", tuple(id(g) for g in rejected))
        line = env.memo.get(key)
        if line is None:
            names = [name for g in rejected for name in g.names]
            noun = "matching slave is" if len(names) == 1 else "matching slaves are"
            line = f"{len(names)} {noun} offline or not accepting jobs ({compress_names(names)})"
            env.memo[key] = line
        return [line]


class ReservationFilter(BaseFilter):
    """Whole-slave reservations: open ones, and upcoming ones the job would run into."""

    name = "reservation"
    stage = Stage.RUNTIME
    explain_order = 2

    def relevant(self, shape: Shape) -> bool:
        return bool(shape.res)

    def blocking(self, shape: Shape, cls: SlaveClass) -> res_rules.ResRuntime | None:
        for rr in cls.reservations:
            if res_rules.statically_blocked(shape.rel(rr.id), rr):
                return rr
        return None

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        assert env.ctx is not None
        rr = self.blocking(shape, cls)
        return None if rr is None else rr.describe(env.ctx.now)

    def summarize(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        return _describe_reservations(self.blocking, shape, rejected, env)


# --- dynamic filters (change while the cycle places jobs) ------------------------------------


class OwnerDemandFilter(BaseFilter):
    """Guests stay off a private cluster while owner jobs wait for room there."""

    name = "owner demand"
    stage = Stage.DYNAMIC
    explain_order = 4

    @staticmethod
    def _line(cluster_id: int) -> str:
        return f"private cluster {cluster_id}: its owners' jobs are waiting for room"

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        assert env.ctx is not None
        if (
            cls.private
            and cls.cluster_id not in shape.owner_of
            and env.ctx.owner_demand.get(cls.cluster_id, 0) > 0
        ):
            return self._line(cls.cluster_id)
        return None

    def summarize(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        return [self._line(c) for c in sorted({cls.cluster_id for cls in rejected})]


class ReservationBudgetFilter(BaseFilter):
    """gpu_count reservations: jobs not entitled share only the unreserved GPUs."""

    name = "reservation budget"
    stage = Stage.DYNAMIC
    explain_order = 3

    def relevant(self, shape: Shape) -> bool:
        return bool(shape.res) and shape.gpus > 0

    def blocking(self, shape: Shape, cls: SlaveClass) -> res_rules.ResRuntime | None:
        for rr in cls.reservations:
            if res_rules.budget_blocked(shape.rel(rr.id), rr, shape.gpus):
                return rr
        return None

    def rejects(self, shape: Shape, cls: SlaveClass, env: Env) -> str | None:
        assert env.ctx is not None
        rr = self.blocking(shape, cls)
        return None if rr is None else rr.describe(env.ctx.now)

    def summarize(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        return _describe_reservations(self.blocking, shape, rejected, env)


# --- room filters (one slave's free room; change with every placement) -----------------------


class HostPortFilter(BaseFilter):
    """Fixed host ports are a resource of the slave: one job per port on a slave.

    Like :class:`FreeResources` it looks at one slave (members of a class may differ), and what
    it rejects only grows during a cycle (every start and every room held takes its ports).
    Slaves it rejects are left out of the "how close" lines of the filters after it.
    """

    name = "host ports"
    stage = Stage.ROOM
    explain_order = 0

    def relevant(self, shape: Shape) -> bool:
        return bool(shape.host_ports)

    def fits(self, shape: Shape, slave: SlaveRuntime) -> bool:
        return not shape.host_ports or shape.host_ports.isdisjoint(slave.ports)

    def taken(self, shape: Shape, slave: SlaveRuntime) -> tuple[int, ...]:
        """The ports the job asks for that are in use on the slave, in order."""
        if not shape.host_ports:
            return ()
        return tuple(sorted(shape.host_ports & slave.ports))

    def rejects(self, shape: Shape, slave: SlaveRuntime, env: Env) -> str | None:
        taken = self.taken(shape, slave)
        return f"{_ports_text(taken)} in use on {slave.name}" if taken else None

    def summarize(
        self, shape: Shape, classes: Sequence[SlaveClass], env: Env, skip: frozenset[int]
    ) -> list[str]:
        """One line per set of taken ports: ``host port 8080 is in use on gpu1``."""
        by_ports: dict[tuple[int, ...], list[str]] = {}
        for slave in rejected_members(self, shape, classes, skip):
            by_ports.setdefault(self.taken(shape, slave), []).append(slave.name)
        lines = []
        for taken, names in sorted(by_ports.items()):
            where = names[0] if len(names) == 1 else f"{len(names)} matching slaves"
            if len(names) > 1:
                where += f" ({compress_names(names)})"
            lines.append(f"{_ports_text(taken)} in use on {where}")
        return lines[:3]


def _ports_text(ports: Sequence[int]) -> str:
    if len(ports) == 1:
        return f"host port {ports[0]} is"
    return f"host ports {', '.join(map(str, ports))} are"


def rejected_members(
    plugin: Filter, shape: Shape, classes: Sequence[SlaveClass], skip: frozenset[int] = frozenset()
) -> list[SlaveRuntime]:
    """The members of these classes (ranks in ``skip`` left out) that a room filter rejects."""
    if not plugin.relevant(shape):
        return []
    return [
        s for cls in classes for s in cls.slaves if s.rank not in skip and not plugin.fits(shape, s)
    ]


_MAX_CLUSTER_LINES = 3


class FreeResources(BaseFilter):
    """The slave's free room holds the request (GPUs of an accepted model, CPUs, memory).

    ``indexed``: for classes whose every GPU model matches, placement finds members with enough
    free GPUs in the class's buckets and checks only CPUs and memory here.
    """

    name = "free resources"
    stage = Stage.ROOM
    explain_order = 1
    indexed = True

    def fits(self, shape: Shape, slave: SlaveRuntime) -> bool:
        gpus = slave.matching_free(shape.gpu_models) if shape.gpu_models else slave.free_gpus
        return (
            len(gpus) >= shape.gpus
            and len(slave.free_cpus) >= shape.cpus
            and slave.free_mem + EPS >= shape.memory_gb
        )

    def rejects(self, shape: Shape, slave: SlaveRuntime, env: Env | None = None) -> str | None:
        gpus = len(slave.matching_free(shape.gpu_models))
        if gpus < shape.gpus:
            return f"slave {slave.name} has {plural(gpus, 'free GPU')}, job needs {shape.gpus}"
        if len(slave.free_cpus) < shape.cpus:
            free = len(slave.free_cpus)
            return f"slave {slave.name} has {plural(free, 'free CPU')}, job needs {shape.cpus}"
        if slave.free_mem + EPS < shape.memory_gb:
            return (
                f"slave {slave.name} has {fmt_gb(max(0.0, slave.free_mem))} free memory, "
                f"job needs {fmt_gb(shape.memory_gb)}"
            )
        return None

    def summarize(
        self, shape: Shape, classes: Sequence[SlaveClass], env: Env, skip: frozenset[int]
    ) -> list[str]:
        """Per cluster, how close its best slave comes to the request (closest clusters first).

        A job pinned to one slave gets that slave's own reason.
        """
        assert env.ctx is not None
        ctx = env.ctx
        if len(classes) == 1 and classes[0].single:
            if classes[0].slaves[0].rank in skip:
                return []
            reason = self.rejects(shape, classes[0].slaves[0])
            return [reason] if reason else []
        by_cluster: dict[int, list[SlaveClass]] = defaultdict(list)
        for cls in classes:
            by_cluster[cls.cluster_id].append(cls)
        found = []
        for cluster_id, members in sorted(by_cluster.items()):
            closeness, line = _cluster_line(shape, cluster_id, members, ctx, skip)
            if line:
                found.append((closeness, cluster_id, line))
        found.sort(key=lambda item: (-item[0], item[1]))
        lines = [line for _, _, line in found[:_MAX_CLUSTER_LINES]]
        if len(found) > _MAX_CLUSTER_LINES:
            more = len(found) - _MAX_CLUSTER_LINES
            lines.append(f"and {plural(more, 'more cluster')} with less room")
        return lines


def _members_with(
    shape: Shape, members: Sequence[SlaveClass], min_free: int, skip: frozenset[int]
) -> Iterator[tuple[int, int]]:
    """(rank, matching free GPUs) of the members with at least ``min_free`` of them."""
    wanted = shape.gpu_models
    for cls in members:
        if cls.match_mode(wanted) == "all":
            for free in range(min_free, cls.ngpus + 1):
                for rank in cls.buckets[free]:
                    if rank not in skip:
                        yield rank, free
        else:
            for slave in cls.slaves:
                free = len(slave.matching_free(wanted))
                if free >= min_free and slave.rank not in skip:
                    yield slave.rank, free


def _largest_block(
    shape: Shape, members: Sequence[SlaveClass], skip: frozenset[int]
) -> tuple[int, int]:
    """(matching free GPUs, rank) of the member with the most, lowest rank on ties; (-1, -1)."""
    best = (-1, -1)
    wanted = shape.gpu_models
    for cls in members:
        if cls.match_mode(wanted) == "all":
            # The highest non-empty bucket (buckets hold ranks in order).
            for free in range(cls.ngpus, -1, -1):
                ranks = (
                    [r for r in cls.buckets[free] if r not in skip] if skip else cls.buckets[free]
                )
                if ranks:
                    candidate = (free, ranks[0])
                    break
            else:
                continue
        else:
            sizes = [
                (len(s.matching_free(wanted)), s.rank) for s in cls.slaves if s.rank not in skip
            ]
            if not sizes:
                continue
            candidate = max(sizes, key=lambda item: (item[0], -item[1]))
        if candidate[0] > best[0] or (candidate[0] == best[0] and candidate[1] < best[1]):
            best = candidate
    return best


def _cluster_line(
    shape: Shape,
    cluster_id: int,
    members: Sequence[SlaveClass],
    ctx: Context,
    skip: frozenset[int] = frozenset(),
) -> tuple[float, str]:
    """(closeness, line) for one cluster: the first resource its best slave lacks."""
    slaves = ctx.slaves  # index == rank
    best_gpus, best_rank = _largest_block(shape, members, skip)
    if best_rank < 0:
        return 0.0, ""
    scope = f"cluster {cluster_id}"
    if best_gpus < shape.gpus:
        name = slaves[best_rank].name
        if best_gpus == 0:
            return 0.0, f"{scope}: no free GPUs, job needs {shape.gpus}"
        block = plural(best_gpus, "GPU")
        return (
            best_gpus / shape.gpus,
            f"{scope}: largest free block is {block} on {name}, job needs {shape.gpus}",
        )
    with_gpus = [slaves[rank] for rank, _ in _members_with(shape, members, shape.gpus, skip)]
    where = f"a slave with {plural(shape.gpus, 'free GPU')}" if shape.gpus else "one slave"
    best = max(with_gpus, key=lambda s: (len(s.free_cpus), -s.rank))
    if len(best.free_cpus) < shape.cpus:
        free = len(best.free_cpus)
        if free == 0:
            text = f"{scope}: no free CPUs on any {where[2:] if shape.gpus else 'slave'}"
        else:
            text = f"{scope}: at most {plural(free, 'free CPU')} on {where} ({best.name})"
        return 1.0 + free / max(1, shape.cpus), f"{text}, job needs {shape.cpus}"
    roomy = [s for s in with_gpus if len(s.free_cpus) >= shape.cpus]
    best = max(roomy, key=lambda s: (s.free_mem, -s.rank))
    if best.free_mem + EPS < shape.memory_gb:
        return (
            2.0 + max(0.0, best.free_mem) / max(EPS, shape.memory_gb),
            f"{scope}: at most {fmt_gb(max(0.0, best.free_mem))} free memory on a slave with "
            f"room for its GPUs and CPUs ({best.name}), job needs {fmt_gb(shape.memory_gb)}",
        )
    return 3.0, f"{scope}: room opened on {best.name} during this cycle, retrying next cycle"


AVAILABILITY = AvailabilityFilter()
RESERVATION = ReservationFilter()
OWNER_DEMAND = OwnerDemandFilter()
RESERVATION_BUDGET = ReservationBudgetFilter()
HOST_PORTS = HostPortFilter()
FREE_RESOURCES = FreeResources()
