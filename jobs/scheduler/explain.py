"""Human explanations: why a job is still queued, and why a request can never run.

Rejections are aggregated, never listed per slave: the identity filters name the one obstacle
that rules out every slave ("no slave has GPU model A100 (known: ...)"); otherwise the lines say,
per cluster, how close the best candidate comes ("cluster 3: largest free block is 2 GPUs on
gpu7, job needs 4"), then which reservations, owners and offline slaves keep the job off the
rest. Jobs of one request shape share their explanation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .filters import Env
from .model import QueuedJob, SchedulerConfig, SlaveState
from .pipeline import DEFAULT_PIPELINE, Pipeline
from .shape import Shape, ShapeFactory
from .state import Context, SlaveClass, SlaveRuntime, build_classes


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
    _, message = DEFAULT_PIPELINE.identity(shape, classes, Env(config))
    return message


def shape_reasons(
    shape: Shape,
    ctx: Context,
    env: Env,
    identity: Callable[[Shape], tuple[list[SlaveClass], str | None]] | None = None,
    pipeline: Pipeline = DEFAULT_PIPELINE,
) -> tuple[str, ...]:
    """Why jobs of this shape found no room in this cycle (evaluated on the final state).

    ``identity`` may supply a memoised :meth:`Pipeline.identity` over ``ctx.classes`` (the
    placer's). Every line comes from the first filter of the pipeline that rejects the slaves it
    talks about (:meth:`Pipeline.explain`).
    """
    if identity is not None:
        passing, message = identity(shape)
    else:
        passing, message = pipeline.identity(shape, ctx.classes, env)
    if message is not None:
        return (message,)
    lines = [line for _, line in pipeline.explain(shape, passing, env)]
    if not lines:
        lines = ["no slave has room for the job right now"]
    return tuple(dict.fromkeys(lines))[: max(1, ctx.config.max_explanations)]


def tasks_at_once(shape: Shape, slave: SlaveState, env: Env) -> int:
    """How many jobs of this shape the slave could hold at once, empty: its GPUs of an accepted
    model, CPUs and memory, and one job per fixed host port."""
    fits = env.cpus(slave) // max(1, shape.cpus)
    if shape.gpus:
        fits = min(fits, env.matching_gpus(slave, shape.gpu_models) // shape.gpus)
    if shape.memory_gb > 0:
        fits = min(fits, int(slave.memory_gb // shape.memory_gb))
    if shape.host_ports:
        fits = min(fits, 1)
    return max(0, fits)


def _task_needs(shape: Shape) -> str:
    """``2 GPU(s), 1 CPU(s) and 1 GB``: what one task of this shape holds."""
    return f"{shape.gpus} GPU(s), {shape.cpus} CPU(s) and {shape.memory_gb:g} GB"


def gang_impossible_reasons(
    roles: Sequence[tuple[QueuedJob, int]],
    slaves: Sequence[SlaveState],
    *,
    config: SchedulerConfig | None = None,
) -> list[tuple[int | None, str]]:
    """Why the registered slaves could never hold every task of a gang at once (a gang starts
    whole or not at all): ``(role position, why)`` for a role with more tasks than the slaves
    that could run one of them could hold together, ``(None, why)`` when the roles together
    need more GPUs, CPUs or memory than those slaves have. Empty when it could fit, and when no
    slave is registered (slaves may come later).

    ``roles``: one task of each role (as queued) and the role's number of tasks. Like
    :func:`impossible_reason`, ignores load, availability and reservations; a role none of whose
    tasks could ever run anywhere is left to that function's answer.
    """
    if not slaves:
        return []
    config = config or SchedulerConfig()
    runtimes = [
        SlaveRuntime(s, rank) for rank, s in enumerate(sorted(slaves, key=lambda s: s.name))
    ]
    classes = build_classes(runtimes, ())
    owners = {s.cluster_id: s.cluster_owner_projects for s in slaves if s.cluster_private}
    factory = ShapeFactory(now=None, config=config, private_owners=owners)
    env = Env(config)
    reasons: list[tuple[int | None, str]] = []
    usable: dict[str, SlaveState] = {}
    need = {"GPUs": 0.0, "CPUs": 0.0, "GB of memory": 0.0}
    for position, (job, count) in enumerate(roles):
        shape = factory.shape(job)
        passing, message = DEFAULT_PIPELINE.identity(shape, classes, env)
        if message is not None:
            continue
        members = [runtime.state for cls in passing for runtime in cls.slaves]
        room = sum(tasks_at_once(shape, slave, env) for slave in members)
        if count > room:
            # The numbers a user needs to resize the job: each task's needs, and the most of
            # them the site can place at once (issue 27: "10 tasks × 2 GPUs on a 6-GPU site").
            gpus = sum(env.matching_gpus(slave, shape.gpu_models) for slave in members)
            reasons.append(
                (
                    position,
                    f"{count} tasks of {_task_needs(shape)} each must run at once, but the site "
                    f"can place at most {room} of them at once"
                    + (f" (the slaves that could run one have {gpus} GPUs)" if shape.gpus else ""),
                )
            )
        usable.update((slave.name, slave) for slave in members)
        need["GPUs"] += count * shape.gpus
        need["CPUs"] += count * shape.cpus
        need["GB of memory"] += count * shape.memory_gb
    if reasons or not usable:
        return reasons
    have = {
        "GPUs": sum(len({gpu.index for gpu in s.gpus}) for s in usable.values()),
        "CPUs": sum(env.cpus(s) for s in usable.values()),
        "GB of memory": sum(s.memory_gb for s in usable.values()),
    }
    for what, needed in need.items():
        if needed > have[what]:
            reasons.append(
                (
                    None,
                    f"the tasks together need {needed:g} {what} at once, the registered slaves "
                    f"that could run them have {have[what]:g}",
                )
            )
    return reasons
