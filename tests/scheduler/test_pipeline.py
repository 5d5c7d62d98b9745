"""The pipeline as data: placing and explaining walk the same filters in the same order.

For generated snapshots with one queued job, every slave's verdict is the first filter of
``PIPELINE`` that rejects it (``Pipeline.first_rejection``, evaluated on the state the placer
saw). The placer starts the job exactly when some slave has no rejecting filter, on such a
slave; when it refuses, the explanation is made of the lines of exactly those first rejecting
filters (a pinned job gets its slave's own reason, word for word).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from jobs.scheduler import SchedulerConfig, Start
from jobs.scheduler import reservations as res_rules
from jobs.scheduler.core import _Cycle
from jobs.scheduler.explain import shape_reasons
from jobs.scheduler.filters import (
    CAPACITY,
    CLUSTER,
    FREE_RESOURCES,
    HOST_PORTS,
    SLAVE_NAME,
    BaseFilter,
    Env,
    Stage,
)
from jobs.scheduler.pipeline import DEFAULT_PIPELINE, PIPELINE, Pipeline
from jobs.scheduler.placement import SCORERS, Placer, Scoring, check_weights
from jobs.scheduler.shape import ShapeFactory
from jobs.scheduler.state import build_context

from .builders import queued, running, slave, snapshot
from .test_properties import SETTINGS, snapshots


def _one_job(snap, relax):
    """The snapshot's first queued job alone, with nothing but the filters deciding.

    ``relax``: drop the job's identity constraints (models, CUDA, features) and shrink it, so
    that most examples get past the identity filters to the runtime, dynamic and room ones.
    """
    assume(snap.queued)
    job = snap.queued[0]
    if relax:
        job = replace(
            job,
            gpu_models=(),
            min_cuda=None,
            features=frozenset(),
            cpus=1,
            memory_gb=1.0,
            gpus=min(job.gpus, 1),
            cluster_id=None,
            min_duration_s=0,
            max_duration_s=max(job.max_duration_s, 1),
        )
    job = replace(
        job,
        interactive=False,
        not_before=None,
        not_after=None,
        bucket=None,
        halt_wait_since=None,
    )
    config = replace(
        snap.config,
        fairness_halts=False,
        per_user_max_running_jobs=None,
        per_user_max_gpus=None,
        max_explanations=100,
    )
    return replace(snap, queued=(job,), config=config), job


def _before_placing(snap):
    """The cycle's state right before it places its jobs."""
    cycle = _Cycle(snap)
    cycle._cancel_overdue()
    cycle._reservation_halts()
    ctx = cycle.ctx
    res_rules.compute_budgets(ctx.reservations, ctx.running, ctx.leaving)
    cycle._prepare(cycle._fail_expired())
    return cycle


@SETTINGS
@given(snapshots(), st.booleans())
def test_placing_and_explaining_walk_the_same_pipeline(snap, relax):
    snap, job = _one_job(snap, relax)
    cycle = _Cycle(snap)
    result = cycle.run()
    lines = result.explanations.get(job.id, ())
    # Room held behind jobs that are leaving (or owners halting guests) is not a filter verdict.
    assume(not any(line.startswith("waiting for") for line in lines))
    # Nor is when halts may open room later (room_later.py): a line before the verdict's.
    lines = tuple(line for line in lines if not line.startswith("room on "))

    before = _before_placing(snap)
    shape = before.shapes[job.id]
    verdicts = {
        s.name: DEFAULT_PIPELINE.first_rejection(shape, s, before.env) for s in before.ctx.slaves
    }
    open_slaves = {name for name, verdict in verdicts.items() if verdict is None}
    starts = [d for d in result.decisions if isinstance(d, Start)]

    if starts:
        assert starts[0].slave in open_slaves
        assert job.id not in result.explanations
        return
    assert not open_slaves, f"placer refused a slave the pipeline lets through: {open_slaves}"

    env = cycle.env
    passing, message = DEFAULT_PIPELINE.identity(shape, cycle.ctx.classes, env)
    if message is not None:
        assert lines == (message,)
        assert all(v[0].stage == Stage.IDENTITY for v in verdicts.values())
        if shape.slave_name in verdicts:
            # The pinned slave names itself with its own first rejection (or its cluster).
            plugin, reason = verdicts[shape.slave_name]
            assert message == reason or plugin is CLUSTER
        return

    tagged = DEFAULT_PIPELINE.explain(shape, passing, env)
    assert lines == tuple(dict.fromkeys(line for _, line in tagged))
    passed_identity = {s.name for cls in passing for s in cls.slaves}
    firsts = {verdicts[name][0] for name in passed_identity}
    assert {plugin for plugin, _ in tagged} == firsts
    if shape.slave_name is not None and passed_identity == {shape.slave_name}:
        plugin, reason = verdicts[shape.slave_name]
        if plugin.stage == Stage.ROOM:
            assert lines == (reason,)
        else:
            assert lines == tuple(plugin.summarize(shape, passing, env))


class Recording(BaseFilter):
    """Wraps a filter and records every question asked of it."""

    def __init__(self, inner, log):
        self.inner, self.log = inner, log
        for attr in (
            "name",
            "stage",
            "explain_order",
            "pins",
            "names_itself",
            "indexed",
            "narrows",
        ):
            setattr(self, attr, getattr(inner, attr))

    def relevant(self, shape):
        return self.inner.relevant(shape)

    def rejects(self, shape, target, env):
        self.log.append(self.name)
        return self.inner.rejects(shape, target, env)

    def fits(self, shape, slave):
        self.log.append(self.name)
        return self.inner.fits(shape, slave)

    def pin(self, shape, left):
        self.log.append(self.name)
        return self.inner.pin(shape, left)

    def summarize(self, shape, rejected, env, *args):
        self.log.append(self.name)
        return self.inner.summarize(shape, rejected, env, *args)


def _walk_order(log):
    """Filter names in the order they were first asked."""
    return list(dict.fromkeys(log))


def test_placer_and_explainer_ask_the_filters_of_one_tuple_in_its_order():
    """One pinned job refused by room: both walks ask the same filters, in pipeline order."""
    snap = snapshot(
        slaves=[slave("s1", features=("ssd",))],
        running=[running("r", "s1", gpu_ids=(0, 1, 2))],
        queued=[
            queued("j", gpus=2, slave_name="s1", features=("ssd",), host_ports=frozenset({8080}))
        ],
    )
    placing_log, explaining_log = [], []
    placing = Pipeline([Recording(f, placing_log) for f in PIPELINE])
    explaining = Pipeline([Recording(f, explaining_log) for f in PIPELINE])
    ctx = build_context(snap)
    env = Env(snap.config, ctx)
    res_rules.compute_budgets(ctx.reservations, ctx.running, ctx.leaving)
    shape = ShapeFactory(
        now=snap.now, config=snap.config, private_owners=ctx.private_owners, rrs=ctx.reservations
    ).shape(snap.queued[0])
    assert Placer(ctx, env, placing).place(shape) is None
    assert shape_reasons(shape, ctx, env, pipeline=explaining) == (
        "slave s1 has 1 free GPU, job needs 2",
    )
    # JOB filters (quotas) are asked about the job, never in a walk over slaves.
    expected = [f.name for f in PIPELINE if f.stage != Stage.JOB and f.relevant(shape)]
    assert _walk_order(placing_log) == expected
    assert _walk_order(explaining_log) == expected
    assert expected[:2] == [SLAVE_NAME.name, "private cluster"] and expected[-2:] == [
        HOST_PORTS.name,
        FREE_RESOURCES.name,
    ]


def test_reordering_the_tuple_changes_both_walks():
    """Capacity after free resources: the explanation follows the new order (data, not code)."""
    reordered = Pipeline([f for f in PIPELINE if f is not HOST_PORTS])
    assert HOST_PORTS not in reordered.room
    snap = snapshot(
        slaves=[slave("s1")],
        running=[],
        queued=[queued("j", gpus=1, slave_name="s1", host_ports=frozenset({8080}))],
    )
    snap = replace(snap, slaves=(replace(snap.slaves[0], ports_in_use=frozenset({8080})),))
    ctx = build_context(snap)
    env = Env(snap.config, ctx)
    shape = ShapeFactory(now=snap.now, config=snap.config, private_owners={}).shape(snap.queued[0])
    assert Placer(ctx, env).place(shape) is None  # the default pipeline checks the port
    assert Placer(ctx, env, reordered).place(shape) is not None  # without it, s1 fits


def test_pipeline_stages_must_come_in_order():
    with pytest.raises(ValueError, match="ordered by stage"):
        Pipeline([FREE_RESOURCES, CAPACITY])


def test_scorer_weights_come_from_the_config():
    default = Scoring(SchedulerConfig())
    assert [w for _, w in default.plugins] == [1.0, 2.0, 2.0]
    only_packing = Scoring(SchedulerConfig(scorer_weights=(("packing", 1.0),)))
    assert only_packing.plugins == ((SCORERS["packing"], 1.0),)
    with pytest.raises(ValueError, match="unknown scorer 'nope'"):
        check_weights((("nope", 1.0),))


def test_default_scoring_fast_path_equals_the_weighted_loop():
    """The default weights use an unrolled sum: it must equal the generic loop exactly."""
    snap = snapshot(
        slaves=[slave("a"), slave("p", 7, private=True, owners=("lab",))],
        queued=[queued("j", gpus=1, project="lab")],
    )
    ctx = build_context(snap)
    shape = ShapeFactory(now=snap.now, config=snap.config, private_owners=ctx.private_owners).shape(
        snap.queued[0]
    )
    fast = Scoring(SchedulerConfig())
    loop = Scoring.total.__get__(fast)  # the generic loop over the same plugins and weights
    assert fast.total is not loop
    for cls in ctx.classes:
        for free in range(0, 5):
            assert fast.total(shape, cls, free, 4) == loop(shape, cls, free, 4)


def test_private_owner_prefers_own_cluster_only_while_its_weight_counts():
    snap = snapshot(
        slaves=[slave("a"), slave("p", 7, private=True, owners=("lab",))],
        queued=[queued("j", gpus=1, project="lab")],
    )
    assert [d.slave for d in _Cycle(snap).run().starts] == ["p"]
    flat = replace(
        snap,
        config=SchedulerConfig(
            scorer_weights=(
                ("packing", 1.0),
                ("private_preference", 0.0),
                ("reservation_affinity", 2.0),
            )
        ),
    )
    assert [d.slave for d in _Cycle(flat).run().starts] == ["a"]  # ties go to the name
