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
from .state import Context, SlaveRuntime, build_classes


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
    identity: Callable | None = None,
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
