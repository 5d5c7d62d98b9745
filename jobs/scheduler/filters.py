"""Filter plugins, in the manner of the Kubernetes scheduling framework.

Each filter answers one question about a (request shape, slave) pair and returns ``None`` when
the slave passes or a short reason when it does not. Filters are evaluated on a
:class:`~.state.SlaveClass` (its representative slave): every member of a class gets the same
answer from every filter except :class:`FreeResources`, which looks at one slave's free room.

Three families, in pipeline order:

* identity filters -- never change while the slave stays registered as it is; they also decide
  whether a request is impossible (``summarize`` explains why none of a set of slaves passes);
* runtime filters -- availability and whole-slave reservations, fixed for the cycle;
* dynamic filters -- change as the cycle places jobs (owner demand, reservation budgets, room).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import reservations as res_rules
from .model import SchedulerConfig, SlaveState
from .shape import Shape
from .state import EPS, Context, SlaveClass, SlaveRuntime, model_matches, single_class
from .text import compress_names, fmt_gb, join_limited, plural
from .timing import format_duration


class Env:
    """What filters need besides the shape and the slave (``ctx`` is None outside a cycle).

    It also memoises per-slave counts: the same representative slaves are asked about again and
    again (once per request shape), and the snapshot keeps them alive for the whole cycle.
    """

    __slots__ = ("config", "ctx", "memo", "_models", "_matching", "_cpus")

    def __init__(self, config: SchedulerConfig, ctx: Context | None = None) -> None:
        self.config = config
        self.ctx = ctx
        self.memo: dict = {}  # per-cycle memo for plugins (keyed by plugin and objects alive)
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


class ClusterFilter:
    name = "cluster"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        if shape.cluster_id is None or slave.cluster_id == shape.cluster_id:
            return None
        return f"slave {slave.name} is in cluster {slave.cluster_id}, job asks for cluster {shape.cluster_id}"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
        if not groups:
            return "no slaves are registered"
        known = sorted({g.cluster_id for g in groups})
        return f"no cluster {shape.cluster_id} (known: {join_limited(map(str, known), 10)})"


class SlaveNameFilter:
    name = "slave name"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        if shape.slave_name is None or slave.name == shape.slave_name:
            return None
        return f"job asks for slave {shape.slave_name}"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
        """``groups`` are all classes: say where the slave is when it is elsewhere."""
        for g in groups:
            if shape.slave_name in g.names:
                return (
                    f"slave {shape.slave_name} is in cluster {g.cluster_id}, "
                    f"not cluster {shape.cluster_id}"
                )
        return f"no slave named {shape.slave_name}"


class PrivateAccessFilter:
    """Owners' projects only; others as guests with no clusterId and a short minDuration."""

    name = "private cluster"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        if not slave.cluster_private or slave.cluster_id in shape.owner_of or shape.guest_ok:
            return None
        if shape.cluster_id is not None:
            return f"cluster {slave.cluster_id} is private to its owners' projects"
        limit = format_duration(env.config.private_guest_max_min_duration_s)
        return (
            f"private cluster {slave.cluster_id} takes guest jobs only with minDuration <= {limit}"
        )

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
        clusters = sorted({g.cluster_id for g in groups})
        if shape.cluster_id is not None:
            return f"cluster {shape.cluster_id} is private to its owners' projects"
        limit = format_duration(env.config.private_guest_max_min_duration_s)
        which = ", ".join(map(str, clusters))
        noun = "cluster {} takes" if len(clusters) == 1 else "clusters {} take"
        return f"private {noun.format(which)} guest jobs only with minDuration <= {limit}"


class GpuModelFilter:
    name = "gpu model"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        if not shape.gpu_models or env.matching_gpus(slave, shape.gpu_models):
            return None
        has = join_limited(sorted({gpu.model for gpu in slave.gpus})) or "no GPUs"
        return f"slave {slave.name} has no GPU model {shape.models_label} (has: {has})"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
        known = join_limited(sorted({gpu.model for g in groups for gpu in g.rep.gpus})) or "none"
        return f"{scope_of(shape)}no slave has GPU model {shape.models_label} (known: {known})"


class CudaFilter:
    name = "cuda"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        if shape.min_cuda is None or (
            slave.cuda_major is not None and slave.cuda_major >= shape.min_cuda
        ):
            return None
        has = "no CUDA version" if slave.cuda_major is None else f"CUDA {slave.cuda_major}"
        return f"slave {slave.name} has {has}, job needs CUDA >= {shape.min_cuda}"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
        versions = [g.rep.cuda_major for g in groups if g.rep.cuda_major is not None]
        highest = f"highest: {max(versions)}" if versions else "none reports a CUDA version"
        return f"{scope_of(shape)}no slave has CUDA >= {shape.min_cuda} ({highest})"


class FeaturesFilter:
    name = "features"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        missing = shape.features - slave.features
        if not missing:
            return None
        return f"slave {slave.name} lacks feature(s) {', '.join(sorted(missing))}"

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
        offered = frozenset().union(*(g.rep.features for g in groups))
        missing = sorted(shape.features - offered)
        if missing:
            return f"{scope_of(shape)}no slave offers feature(s) {', '.join(missing)}"
        wanted = ", ".join(sorted(shape.features))
        return f"{scope_of(shape)}no slave offers all of the features {wanted}"


class CapacityFilter:
    """The slave's whole capacity (ignoring load) is large enough."""

    name = "capacity"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
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

    def summarize(self, shape: Shape, groups: Sequence[SlaveClass], env: Env) -> str:
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


CLUSTER = ClusterFilter()
SLAVE_NAME = SlaveNameFilter()
PRIVATE_ACCESS = PrivateAccessFilter()
IDENTITY_FILTERS = (
    CLUSTER,
    SLAVE_NAME,
    PRIVATE_ACCESS,
    GpuModelFilter(),
    CudaFilter(),
    FeaturesFilter(),
    CapacityFilter(),
)


def identity_chain(
    shape: Shape, groups: Sequence[SlaveClass], env: Env
) -> tuple[list[SlaveClass], str | None]:
    """Apply the identity filters one after the other.

    Returns the classes that pass all of them, or (``[]``, why none does): the message comes from
    the first filter that rejects every class left by the ones before, so it names the real
    obstacle ("no slave has GPU model A100") rather than the first difference. A job pinned to a
    slave by name is narrowed to a one-slave view of it, and gets that slave's own reason.
    """
    left = list(groups)
    if not left:
        return [], "no slaves are registered"
    private_only: list[SlaveClass] = []  # kept off only by private cluster access
    for step, plugin in enumerate(IDENTITY_FILTERS):
        if plugin is SLAVE_NAME:
            if shape.slave_name is None:
                continue
            pinned = next((s for g in left for s in g.slaves if s.name == shape.slave_name), None)
            if pinned is None:
                return [], SLAVE_NAME.summarize(shape, groups, env)
            left = [single_class(pinned)]
            continue
        passed = [g for g in left if plugin(shape, g.rep, env) is None]
        if plugin is PRIVATE_ACCESS and len(passed) < len(left):
            kept = {id(g) for g in passed}
            private_only = [g for g in left if id(g) not in kept]
        if not passed:
            if shape.slave_name is not None and plugin is not CLUSTER:
                return [], plugin(shape, left[0].rep, env)
            later = IDENTITY_FILTERS[step:]
            # "No slave has 4 A100s" is misleading when a private cluster has them: say that
            # the job may not go there instead.
            usable_if_allowed = [
                g for g in private_only if all(f(shape, g.rep, env) is None for f in later)
            ]
            if usable_if_allowed and plugin is not PRIVATE_ACCESS:
                return [], PRIVATE_ACCESS.summarize(shape, usable_if_allowed, env)
            return [], plugin.summarize(shape, left if plugin is not CLUSTER else groups, env)
        left = passed
    return left, None


# --- runtime filters (fixed for the cycle) ---------------------------------------------------


def _describe_reservations(blocking, shape: Shape, rejected: Sequence[SlaveClass], env: Env):
    """One line per reservation that keeps the job off some of the slaves."""
    assert env.ctx is not None
    seen: dict[str, str] = {}
    for cls in rejected:
        rr = blocking(shape, cls)
        if rr is not None and rr.id not in seen:
            seen[rr.id] = rr.describe(env.ctx.now)
    return list(seen.values())


class AvailabilityFilter:
    name = "availability"

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        if not slave.online:
            return f"slave {slave.name} is offline"
        if not slave.accepting_jobs:
            return f"slave {slave.name} is not accepting jobs"
        return None

    def describe(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        key = ("availability", tuple(id(g) for g in rejected))
        line = env.memo.get(key)
        if line is None:
            names = [name for g in rejected for name in g.names]
            noun = "matching slave is" if len(names) == 1 else "matching slaves are"
            line = f"{len(names)} {noun} offline or not accepting jobs ({compress_names(names)})"
            env.memo[key] = line
        return [line]


class ReservationFilter:
    """Whole-slave reservations: open ones, and upcoming ones the job would run into."""

    name = "reservation"

    def blocking(self, shape: Shape, cls: SlaveClass) -> res_rules.ResRuntime | None:
        for rr in cls.reservations:
            if res_rules.statically_blocked(shape.rel(rr.id), rr):
                return rr
        return None

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        assert env.ctx is not None
        cls = env.ctx.by_name[slave.name].cls
        rr = self.blocking(shape, cls) if cls is not None else None
        return None if rr is None else rr.describe(env.ctx.now)

    def describe(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        return _describe_reservations(self.blocking, shape, rejected, env)


# --- dynamic filters (change while the cycle places jobs) ------------------------------------


class OwnerDemandFilter:
    """Guests stay off a private cluster while owner jobs wait for room there."""

    name = "owner demand"

    def rejects(self, shape: Shape, cls: SlaveClass, ctx: Context) -> bool:
        return (
            cls.private
            and cls.cluster_id not in shape.owner_of
            and ctx.owner_demand.get(cls.cluster_id, 0) > 0
        )

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        assert env.ctx is not None
        cls = env.ctx.by_name[slave.name].cls
        if cls is None or not self.rejects(shape, cls, env.ctx):
            return None
        return f"private cluster {cls.cluster_id}: its owners' jobs are waiting for room"

    def describe(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        clusters = sorted({cls.cluster_id for cls in rejected})
        return [f"private cluster {c}: its owners' jobs are waiting for room" for c in clusters]


class ReservationBudgetFilter:
    """gpu_count reservations: jobs not entitled share only the unreserved GPUs."""

    name = "reservation budget"

    def blocking(self, shape: Shape, cls: SlaveClass) -> res_rules.ResRuntime | None:
        for rr in cls.reservations:
            if res_rules.budget_blocked(shape.rel(rr.id), rr, shape.gpus):
                return rr
        return None

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        assert env.ctx is not None
        cls = env.ctx.by_name[slave.name].cls
        rr = self.blocking(shape, cls) if cls is not None else None
        return None if rr is None else rr.describe(env.ctx.now)

    def describe(self, shape: Shape, rejected: Sequence[SlaveClass], env: Env) -> list[str]:
        return _describe_reservations(self.blocking, shape, rejected, env)


class FreeResources:
    """The slave's free room holds the request (GPUs of an accepted model, CPUs, memory)."""

    name = "free resources"

    def fits(self, shape: Shape, slave: SlaveRuntime) -> bool:
        gpus = slave.matching_free(shape.gpu_models) if shape.gpu_models else slave.free_gpus
        return (
            len(gpus) >= shape.gpus
            and len(slave.free_cpus) >= shape.cpus
            and slave.free_mem + EPS >= shape.memory_gb
        )

    def reason(self, shape: Shape, slave: SlaveRuntime) -> str | None:
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


class HostPortFilter:
    """Fixed host ports are a resource of the slave: one job per port on a slave.

    Like :class:`FreeResources` it looks at one slave (members of a class may differ), and what
    it rejects only grows during a cycle (every start and every room held takes its ports).
    """

    name = "host ports"

    def fits(self, shape: Shape, slave: SlaveRuntime) -> bool:
        return not shape.host_ports or shape.host_ports.isdisjoint(slave.ports)

    def taken(self, shape: Shape, slave: SlaveRuntime) -> tuple[int, ...]:
        """The ports the job asks for that are in use on the slave, in order."""
        if not shape.host_ports:
            return ()
        return tuple(sorted(shape.host_ports & slave.ports))

    def __call__(self, shape: Shape, slave: SlaveState, env: Env) -> str | None:
        if not shape.host_ports:
            return None
        in_use = env.ctx.by_name[slave.name].ports if env.ctx is not None else slave.ports_in_use
        taken = sorted(shape.host_ports & set(in_use))
        return f"{_ports_text(taken)} in use on {slave.name}" if taken else None

    def blocked(self, shape: Shape, classes: Sequence[SlaveClass]) -> list[SlaveRuntime]:
        """The members of these classes that a port the job asks for keeps it off."""
        if not shape.host_ports:
            return []
        return [s for cls in classes for s in cls.slaves if not self.fits(shape, s)]

    def describe(self, shape: Shape, blocked: Sequence[SlaveRuntime], env: Env) -> list[str]:
        """One line per set of taken ports: ``host port 8080 is in use on gpu1``."""
        by_ports: dict[tuple[int, ...], list[str]] = {}
        for slave in blocked:
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


AVAILABILITY = AvailabilityFilter()
RESERVATION = ReservationFilter()
OWNER_DEMAND = OwnerDemandFilter()
RESERVATION_BUDGET = ReservationBudgetFilter()
FREE_RESOURCES = FreeResources()
HOST_PORTS = HostPortFilter()
