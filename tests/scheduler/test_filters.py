"""Each filter plugin on its own: rejects(shape, class or slave, env) -> None or a reason naming
the slave."""

import pytest

from jobs.scheduler import SchedulerConfig
from jobs.scheduler.filters import (
    AVAILABILITY,
    FREE_RESOURCES,
    OWNER_DEMAND,
    RESERVATION,
    RESERVATION_BUDGET,
    Env,
    Stage,
)
from jobs.scheduler.pipeline import PIPELINE
from jobs.scheduler.shape import ShapeFactory
from jobs.scheduler.state import build_context

from .builders import DAY, HOUR, ago, later, queued, reservation, running, slave, snapshot

BY_NAME = {f.name: f for f in PIPELINE if f.stage == Stage.IDENTITY}


def setup(job, slaves, **kw):
    snap = snapshot(slaves=slaves, queued=[job], **kw)
    ctx = build_context(snap)
    env = Env(SchedulerConfig(), ctx)
    shape = ShapeFactory(
        now=snap.now, config=snap.config, private_owners=ctx.private_owners, rrs=ctx.reservations
    ).shape(job)
    return shape, ctx, env


@pytest.mark.parametrize(
    ("name", "job", "the_slave", "reason"),
    [
        (
            "cluster",
            queued("j", cluster_id=2),
            slave("s1", 1),
            "slave s1 is in cluster 1, job asks for cluster 2",
        ),
        ("cluster", queued("j", cluster_id=1), slave("s1", 1), None),
        ("slave name", queued("j", slave_name="x"), slave("s1"), "job asks for slave x"),
        (
            "private cluster",
            queued("j"),
            slave("p", 7, private=True),
            "private cluster 7 takes guest jobs only with minDuration <= 1 hour",
        ),
        (
            "private cluster",
            queued("j", project="lab"),
            slave("p", 7, private=True, owners=("lab",)),
            None,
        ),
        (
            "gpu model",
            queued("j", models=("A100",)),
            slave("s1"),
            "slave s1 has no GPU model A100 (has: Tesla V100-PCIE-32GB)",
        ),
        (
            "cuda",
            queued("j", min_cuda=13),
            slave("s1", cuda=11),
            "slave s1 has CUDA 11, job needs CUDA >= 13",
        ),
        ("features", queued("j", features=("ib",)), slave("s1"), "slave s1 lacks feature(s) ib"),
        ("capacity", queued("j", gpus=8), slave("s1"), "slave s1 has 4 GPUs, job needs 8"),
        ("capacity", queued("j", cpus=20), slave("s1"), "slave s1 has 16 CPUs, job needs 20"),
        (
            "capacity",
            queued("j", memory=65),
            slave("s1"),
            "slave s1 has 64 GB memory, job needs 65 GB",
        ),
    ],
)
def test_identity_filters(name, job, the_slave, reason):
    shape, ctx, env = setup(job, [the_slave])
    assert BY_NAME[name].rejects(shape, ctx.by_name[the_slave.name].cls, env) == reason


def test_runtime_and_dynamic_filters():
    slaves = [
        slave("off", online=False),
        slave("r1"),
        slave("p1", 7, private=True, owners=("lab",)),
    ]
    res = reservation("R", start=ago(HOUR), end=later(DAY), slaves=("r1",))
    shape, ctx, env = setup(queued("j", min_duration_s=HOUR), slaves, reservations=[res])
    off, r1, p1 = (ctx.by_name[s.name].cls for s in slaves)
    assert AVAILABILITY.rejects(shape, off, env) == "slave off is offline"
    assert AVAILABILITY.rejects(shape, r1, env) is None
    assert RESERVATION.rejects(shape, r1, env).startswith("reservation R holds r1 until")
    assert RESERVATION_BUDGET.rejects(shape, r1, env) is None  # whole-slave: not a budget
    assert OWNER_DEMAND.rejects(shape, p1, env) is None
    ctx.owner_demand[7] = 1
    assert OWNER_DEMAND.rejects(shape, p1, env) == (
        "private cluster 7: its owners' jobs are waiting for room"
    )


def test_free_resources():
    slaves = [slave("s1")]
    shape, ctx, env = setup(
        queued("j", gpus=2), slaves, running=[running("r", "s1", gpu_ids=(0, 1, 2))]
    )
    runtime = ctx.by_name["s1"]
    assert not FREE_RESOURCES.fits(shape, runtime)
    assert FREE_RESOURCES.rejects(shape, runtime, env) == "slave s1 has 1 free GPU, job needs 2"
