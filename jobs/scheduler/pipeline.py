"""The scheduler pipeline as data: one ordered tuple of filters that placing and explaining walk.

After the Kubernetes scheduling framework: ``PIPELINE`` lists every filter once, in order; the
:class:`Pipeline` groups them by stage and holds the walks that both users share:

* the ``JOB`` filters (quotas) are asked once per job, before any slave (:meth:`Pipeline.held`):
  the cycle leaves a job they reject waiting with their line, as it does a full bucket;
* placement (``placement.Placer``) takes the classes that :meth:`Pipeline.identity` lets
  through, keeps those that no runtime, then no dynamic filter rejects (:meth:`Pipeline.passing`)
  and searches their members with the room filters (``fits``);
* explanations (``explain.shape_reasons``) run the same :meth:`Pipeline.identity`, put each
  class under the first runtime or dynamic filter that rejects it, walk the room filters in
  order over the rest, and let every filter summarize what it rejected
  (:meth:`Pipeline.explain`).

So a slave is explained by exactly the first filter of the pipeline that rejects it
(tests/scheduler/test_pipeline.py checks this against the placer on generated snapshots).
Reordering, removing or adding a filter is an edit of ``PIPELINE`` and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from .filters import (
    AVAILABILITY,
    CAPACITY,
    CLUSTER,
    CUDA,
    FEATURES,
    FREE_RESOURCES,
    GPU_MODEL,
    HOST_PORTS,
    OWNER_DEMAND,
    PRIVATE_ACCESS,
    QUOTA,
    RESERVATION,
    RESERVATION_BUDGET,
    SLAVE_NAME,
    Env,
    Filter,
    Stage,
    rejected_members,
    scope_of,
)
from .model import QueuedJob
from .shape import Shape
from .state import SlaveClass, SlaveRuntime, single_class
from .text import compress_names

PIPELINE: tuple[Filter, ...] = (
    # job: the same on every slave
    QUOTA,
    # identity: what the slave is
    CLUSTER,
    SLAVE_NAME,
    PRIVATE_ACCESS,
    GPU_MODEL,
    CUDA,
    FEATURES,
    CAPACITY,
    # runtime: fixed for the cycle
    AVAILABILITY,
    RESERVATION,
    # dynamic: change while the cycle places jobs
    OWNER_DEMAND,
    RESERVATION_BUDGET,
    # room: one slave's free room
    HOST_PORTS,
    FREE_RESOURCES,
)


class Pipeline:
    """An ordered tuple of filters, grouped by stage (the stages must come in order)."""

    def __init__(self, filters: Sequence[Filter]) -> None:
        self.filters = tuple(filters)
        stages = [f.stage for f in self.filters]
        if stages != sorted(stages):
            raise ValueError("pipeline filters must be ordered by stage")
        self.job_filters = tuple(f for f in self.filters if f.stage == Stage.JOB)
        self.identity_filters = tuple(f for f in self.filters if f.stage == Stage.IDENTITY)
        self.runtime = tuple(f for f in self.filters if f.stage == Stage.RUNTIME)
        self.dynamic = tuple(f for f in self.filters if f.stage == Stage.DYNAMIC)
        self.class_filters = self.runtime + self.dynamic
        self.room = tuple(f for f in self.filters if f.stage == Stage.ROOM)
        indexed = [f for f in self.room if f.indexed]
        if len(indexed) > 1:
            raise ValueError("at most one room filter can be answered by the class index")
        self.indexed = indexed[0] if indexed else None
        self.explain_order = tuple(
            sorted((f for f in self.filters if f.stage > Stage.IDENTITY), key=_explain_key)
        )

    # --- which filters a shape needs (the framework's PreFilter "skip") ----------------------

    @staticmethod
    def relevant(shape: Shape, group: tuple[Filter, ...], env: Env) -> tuple[Filter, ...]:
        """The filters of ``group`` that can reject this shape (memoised for the cycle)."""
        key = ("relevant", id(group), shape)
        found = env.memo.get(key)
        if found is None:
            found = env.memo[key] = tuple(f for f in group if f.relevant(shape))
        return found

    # --- job -------------------------------------------------------------------------------

    def held(self, job: QueuedJob, shape: Shape, env: Env) -> str | None:
        """Why a ``JOB`` filter keeps this job waiting whatever the slaves (the first that does)."""
        for plugin in self.job_filters:
            reason = plugin.rejects(shape, job, env)
            if reason is not None:
                return reason
        return None

    # --- identity ----------------------------------------------------------------------------

    def identity(
        self, shape: Shape, groups: Sequence[SlaveClass], env: Env
    ) -> tuple[list[SlaveClass], str | None]:
        """Apply the identity filters one after the other.

        Returns the classes that pass all of them, or (``[]``, why none does). The message
        names the filter that refused each slave the job could otherwise use (the slaves its
        ``narrows`` filters, clusterId, left in scope):

        * one line of the filter that rejects every class left by the ones before, when that
          filter refuses every slave in scope too, so the line is true of each of them ("no
          slave has GPU model A100", however many slaves an earlier filter already refused);
        * otherwise each slave under the first filter that refused it, in pipeline order
          (``cluster 1: no slave meets every requirement: slave local has no GPU model V100
          (has: ...); slave gpu2 has CUDA 9, job needs CUDA >= 10``). Before, the last filter's
          line alone said "no slave has CUDA >= 10 (highest: 9)" while ``local`` had CUDA 11:
          it was refused for its GPU model.

        A ``pins`` filter narrows the classes to a one-slave view, which then gets that slave's
        own reason. Classes that only a ``names_itself`` filter kept off are named by it when
        they would pass every later filter.
        """
        left = list(groups)
        if not left:
            return [], "no slaves are registered"
        pinned = False
        kept_off: list[tuple[Filter, list[SlaveClass]]] = []  # by names_itself filters
        # (filter, classes before it, classes it let through) for the filters that refused
        # some in-scope class: what a refusal message is made of (rarely needed, so kept raw).
        steps: list[tuple[Filter, list[SlaveClass], list[SlaveClass]]] = []
        chain = self.identity_filters
        for step, plugin in enumerate(chain):
            if not plugin.relevant(shape):
                continue
            if plugin.pins:
                view = plugin.pin(shape, left)
                if view is None:
                    return [], plugin.summarize(shape, groups, env)[0]
                left, pinned = [view], True
                continue
            passed = [g for g in left if plugin.rejects(shape, g, env) is None]
            if len(passed) < len(left):
                if plugin.names_itself:
                    kept_off.append((plugin, _gone(left, passed)))
                if not plugin.narrows:
                    steps.append((plugin, left, passed))
            if not passed:
                if pinned:
                    return [], plugin.rejects(shape, left[0], env)
                later = [f for f in chain[step:] if f.relevant(shape)]
                for earlier, rejected in kept_off:
                    if earlier is plugin:
                        continue
                    usable_if_allowed = [
                        g for g in rejected if all(f.rejects(shape, g, env) is None for f in later)
                    ]
                    if usable_if_allowed:
                        return [], earlier.summarize(shape, usable_if_allowed, env)[0]
                return [], self._refusal(shape, plugin, left, steps, env)
            left = passed
        return left, None

    def _refusal(
        self,
        shape: Shape,
        last: Filter,
        left: Sequence[SlaveClass],
        steps: Sequence[tuple[Filter, list[SlaveClass], list[SlaveClass]]],
        env: Env,
    ) -> str:
        """Why no class in scope passes: ``last``'s line when it holds for every one of them,
        else each class under the first filter that refused it (see :meth:`identity`)."""
        refused = [(plugin, g) for plugin, before, after in steps for g in _gone(before, after)]
        if all(f is last or last.rejects(shape, g, env) is not None for f, g in refused):
            return last.summarize(shape, left, env)[0]
        by_filter: dict[int, list[SlaveClass]] = {}
        for plugin, cls in refused:
            by_filter.setdefault(id(plugin), []).append(cls)
        parts = [
            _refused_part(shape, plugin, by_filter[id(plugin)], env)
            for plugin in self.identity_filters
            if id(plugin) in by_filter
        ]
        return f"{scope_of(shape)}no slave meets every requirement: " + "; ".join(parts)

    # --- runtime and dynamic -----------------------------------------------------------------

    def passing(
        self, shape: Shape, classes: Sequence[SlaveClass], env: Env, group: tuple[Filter, ...]
    ) -> list[SlaveClass]:
        """The classes no filter of ``group`` rejects (placement's form of the walk)."""
        return self.survivors(shape, classes, env, self.relevant(shape, group, env))

    @staticmethod
    def survivors(
        shape: Shape, classes: Sequence[SlaveClass], env: Env, active: tuple[Filter, ...]
    ) -> list[SlaveClass]:
        """The classes none of ``active`` (filters already found relevant) rejects."""
        if not active:
            return list(classes)
        if len(active) == 1:  # the common case, as a plain comprehension (runs per class)
            rejects = active[0].rejects
            return [cls for cls in classes if rejects(shape, cls, env) is None]
        found = []
        for cls in classes:
            for plugin in active:
                if plugin.rejects(shape, cls, env) is not None:
                    break
            else:
                found.append(cls)
        return found

    # --- the whole walk, for one slave and for an explanation --------------------------------

    def first_rejection(
        self, shape: Shape, slave: SlaveRuntime, env: Env
    ) -> tuple[Filter, str] | None:
        """The first filter of the pipeline that rejects this slave for the shape, and why."""
        view = single_class(slave)  # class filters ask about this very slave
        for plugin in self.filters:
            if plugin.stage == Stage.JOB or not plugin.relevant(shape):
                continue  # JOB filters are asked about the job, never about a slave
            if plugin.stage == Stage.ROOM:
                reason = plugin.rejects(shape, slave, env)
            else:
                reason = plugin.rejects(shape, view, env)
            if reason is not None:
                return plugin, reason
        return None

    def explain(
        self, shape: Shape, passing: Sequence[SlaveClass], env: Env
    ) -> list[tuple[Filter, str]]:
        """(filter, line) for classes that passed the identity filters, in explanation order.

        Each class is summarized by the first class filter that rejects it; the members of the
        others by the first room filter that rejects them.
        """
        rejected: dict[int, list[SlaveClass]] = {}
        usable = []
        active = self.relevant(shape, self.class_filters, env)
        for cls in passing:
            for plugin in active:
                if plugin.rejects(shape, cls, env) is not None:
                    rejected.setdefault(id(plugin), []).append(cls)
                    break
            else:
                usable.append(cls)
        lines: dict[int, list[str]] = {}
        for plugin, classes in ((f, rejected.get(id(f))) for f in self.class_filters):
            if classes:
                lines[id(plugin)] = plugin.summarize(shape, classes, env)
        skip: frozenset[int] = frozenset()
        for step, plugin in enumerate(self.room):
            lines[id(plugin)] = plugin.summarize(shape, usable, env, skip)
            if step + 1 < len(self.room):
                skip |= {s.rank for s in rejected_members(plugin, shape, usable, skip)}
        return [(f, line) for f in self.explain_order for line in lines.get(id(f), ())]


def _gone(before: Sequence[SlaveClass], after: Sequence[SlaveClass]) -> list[SlaveClass]:
    """The classes of ``before`` that a filter did not let through to ``after``."""
    kept = {id(g) for g in after}
    return [g for g in before if id(g) not in kept]


def _refused_part(shape: Shape, plugin: Filter, classes: Sequence[SlaveClass], env: Env) -> str:
    """What one filter refused: a lone slave's own reason, or the filter's line about the
    slaves it refused, introduced by their names (``gpu2-gpu3: none has CUDA >= 10 ...``)."""
    names = [name for cls in classes for name in cls.names]
    if len(names) == 1:
        return plugin.rejects(shape, classes[0], env) or ""
    line = plugin.summarize(shape, classes, env)[0]
    scope = scope_of(shape)
    if scope and line.startswith(scope):
        line = line[len(scope) :]
    if line.startswith("no slave "):
        line = "none " + line[len("no slave ") :]
    return f"{compress_names(names)}: {line}"


def _explain_key(plugin: Filter) -> int:
    return plugin.explain_order


DEFAULT_PIPELINE = Pipeline(PIPELINE)
