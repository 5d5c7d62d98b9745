"""Human explanations: why a job is still queued, and why a request can never run.

Rejections are aggregated, never listed per slave: the identity filters name the one obstacle
that rules out every slave ("no slave has GPU model A100 (known: ...)"); otherwise the lines say,
per cluster, how close the best candidate comes ("cluster 3: largest free block is 2 GPUs on
gpu7, job needs 4"), then which reservations, owners and offline slaves keep the job off the
rest. Jobs of one request shape share their explanation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from .filters import (
    AVAILABILITY,
    FREE_RESOURCES,
    HOST_PORTS,
    OWNER_DEMAND,
    RESERVATION,
    RESERVATION_BUDGET,
    Env,
    identity_chain,
)
from .model import QueuedJob, SchedulerConfig, SlaveState
from .shape import Shape, ShapeFactory
from .state import EPS, Context, SlaveClass, SlaveRuntime, build_classes
from .text import fmt_gb, plural

_MAX_CLUSTER_LINES = 3


def impossible_reason(
    job: QueuedJob, slaves: Sequence[SlaveState], *, config: SchedulerConfig | None = None
) -> str | None:
    """Why no registered slave (online or not, busy or not) could ever run this job, or None.

    Used at submit. Ignores load, availability and reservations; checks cluster, slave name,
    private cluster access, GPU model, CUDA version, features and total GPUs/CPUs/memory.
    """
    config = config or SchedulerConfig()
    runtimes = [
        SlaveRuntime(s, rank) for rank, s in enumerate(sorted(slaves, key=lambda s: s.name))
    ]
    classes = build_classes(runtimes, ())
    owners = {s.cluster_id: s.cluster_owner_projects for s in slaves if s.cluster_private}
    shape = ShapeFactory(now=None, config=config, private_owners=owners).shape(job)
    _, message = identity_chain(shape, classes, Env(config))
    return message


def shape_reasons(
    shape: Shape, ctx: Context, env: Env, identity: Callable | None = None
) -> tuple[str, ...]:
    """Why jobs of this shape found no room in this cycle (evaluated on the final state).

    ``identity`` may supply a memoised :func:`identity_chain` over ``ctx.classes``.
    """
    if identity is not None:
        passing, message = identity(shape)
    else:
        passing, message = identity_chain(shape, ctx.classes, env)
    if message is not None:
        return (message,)
    unavailable = [cls for cls in passing if not cls.available]
    usable = [cls for cls in passing if cls.available]
    reserved = [cls for cls in usable if RESERVATION.blocking(shape, cls) is not None]
    usable = [cls for cls in usable if RESERVATION.blocking(shape, cls) is None]
    owned = [cls for cls in usable if OWNER_DEMAND.rejects(shape, cls, ctx)]
    usable = [cls for cls in usable if not OWNER_DEMAND.rejects(shape, cls, ctx)]
    budgeted = [cls for cls in usable if RESERVATION_BUDGET.blocking(shape, cls) is not None]
    usable = [cls for cls in usable if RESERVATION_BUDGET.blocking(shape, cls) is None]

    # Slaves where a fixed host port of the job is taken are left out of "how close" below.
    ported = HOST_PORTS.blocked(shape, usable)
    skip = frozenset(s.rank for s in ported)
    lines = HOST_PORTS.describe(shape, ported, env) if ported else []
    lines += capacity_lines(shape, usable, ctx, skip)
    lines += RESERVATION.describe(shape, reserved, env)
    lines += RESERVATION_BUDGET.describe(shape, budgeted, env)
    lines += OWNER_DEMAND.describe(shape, owned, env)
    if unavailable:
        lines += AVAILABILITY.describe(shape, unavailable, env)
    if not lines:
        lines = ["no slave has room for the job right now"]
    return tuple(dict.fromkeys(lines))[: max(1, ctx.config.max_explanations)]


def capacity_lines(
    shape: Shape, classes: Sequence[SlaveClass], ctx: Context, skip: frozenset[int] = frozenset()
) -> list[str]:
    """Per cluster, how close its best slave comes to the request (closest clusters first).

    Slaves whose rank is in ``skip`` (explained otherwise) are left out.
    """
    if len(classes) == 1 and classes[0].single:
        if classes[0].slaves[0].rank in skip:
            return []
        reason = FREE_RESOURCES.reason(shape, classes[0].slaves[0])
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


def _members_with(shape: Shape, members: Sequence[SlaveClass], min_free: int, skip: frozenset[int]):
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
):
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
