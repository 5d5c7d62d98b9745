"""Explanations name the filter that actually refused each slave, and a wait behind a running
job's minDuration or a reservation says when it ends (issue 26 item 5).

GPULab: "GPULab scheduling promises to never automatically stop your job before minDuration",
and "GPULab will stop jobs not belonging to the reservation when the reservation starts"
(seed 002). Before, a refusal that combined filters named the last one only ("cluster 1: no
slave has CUDA >= 10 (highest: 9)" while ``local`` in cluster 1 has CUDA 11: it was refused for
its GPU model), and a job waiting for a minDuration or a reservation read "no free GPUs".
"""

from __future__ import annotations

from hypothesis import assume, given

from jobs.scheduler import impossible_reason, run_cycle
from jobs.scheduler.core import _Cycle
from jobs.scheduler.pipeline import DEFAULT_PIPELINE

from .builders import (
    A100,
    DAY,
    GTX,
    HOUR,
    V100,
    ago,
    later,
    queued,
    reservation,
    running,
    slave,
    snapshot,
)
from .test_properties import SETTINGS, snapshots

# The audit's site: `local` has CUDA 11 but GTX GPUs; gpu2 has V100s but CUDA 9.
LOCAL = slave("local", 1, gpus=2, model=GTX, cuda=11)
GPU2 = slave("gpu2", 1, gpus=4, model=V100, cuda=9)
GPU3 = slave("gpu3", 1, gpus=4, model=V100, cuda=9)
OTHER = slave("far", 2, gpus=8, model=V100, cuda=12)


def test_a_combined_refusal_names_each_slaves_own_filter():
    job = queued("j", cluster_id=1, models=("V100",), min_cuda=10)
    reason = impossible_reason(job, [LOCAL, GPU2, OTHER])
    # Before: "cluster 1: no slave has CUDA >= 10 (highest: 9)" (local has CUDA 11).
    assert reason == (
        "cluster 1: no slave meets every requirement: "
        f"slave local has no GPU model V100 (has: {GTX}); "
        "slave gpu2 has CUDA 9, job needs CUDA >= 10"
    )
    # The queued job's explanation is the same walk.
    result = run_cycle(snapshot(slaves=[LOCAL, GPU2, OTHER], queued=[job]))
    assert result.explanations["j"] == (reason,)


def test_several_slaves_refused_by_one_filter_are_named_together():
    job = queued("j", cluster_id=1, models=("V100",), min_cuda=10)
    assert impossible_reason(job, [LOCAL, GPU2, GPU3]) == (
        "cluster 1: no slave meets every requirement: "
        f"slave local has no GPU model V100 (has: {GTX}); "
        "gpu2-gpu3: none has CUDA >= 10 (highest: 9)"
    )


def test_one_line_when_the_last_filter_refuses_every_slave():
    """local has no V100, and CUDA 8 besides: "no slave has CUDA >= 10" is true of every
    slave of the cluster, so it stays the one line (as short as before)."""
    old_local = slave("local", 1, gpus=2, model=GTX, cuda=8)
    job = queued("j", cluster_id=1, models=("V100",), min_cuda=10)
    assert impossible_reason(job, [old_local, GPU2]) == (
        "cluster 1: no slave has CUDA >= 10 (highest: 9)"
    )


def test_a_true_line_about_every_slave_stays_one_line():
    """big was refused for its GPU model first, but "no slave has 4 A100 GPUs" is true of it
    too (it has none): the one line stays."""
    big = slave("big", 1, gpus=8, model=V100)
    small = slave("small", 1, gpus=2, model=A100)
    job = queued("j", gpus=4, models=("A100",))
    assert impossible_reason(job, [big, small]) == "no slave has 4 A100 GPUs (largest: 2 on small)"


@SETTINGS
@given(snapshots())
def test_a_single_line_refusal_is_true_of_every_slave_in_scope(snap):
    """Generated sites: when the identity filters refuse a job with one filter's line, that
    filter refuses every slave in the job's scope (its cluster); a combined refusal names,
    for each slave in scope, the first filter that refused it."""
    assume(snap.queued)
    job = snap.queued[0]
    cycle = _Cycle(snap)
    cycle._prepare([job])
    shape = cycle.shapes[job.id]
    assume(shape.slave_name is None)
    _, message = cycle.placer.identity(shape)
    assume(message is not None and "guest jobs only" not in message)
    assume(not message.startswith(("no cluster", "no slaves")))
    in_scope = [
        cls
        for cls in cycle.ctx.classes
        if shape.cluster_id is None or cls.cluster_id == shape.cluster_id
    ]
    env = cycle.env
    identity = [f for f in DEFAULT_PIPELINE.identity_filters if f.relevant(shape)]
    firsts = {
        id(next(f for f in identity if f.rejects(shape, cls, env) is not None)) for cls in in_scope
    }
    if "no slave meets every requirement" in message:
        assert len(firsts) > 1
        return
    assert any(
        all(f.rejects(shape, cls, env) is not None for cls in in_scope)
        and message in f.summarize(shape, _left_before(f, shape, in_scope, env), env)
        for f in identity
    ), message


def _left_before(plugin, shape, classes, env):
    """The classes the identity filters before ``plugin`` let through."""
    left = list(classes)
    for f in DEFAULT_PIPELINE.identity_filters:
        if f is plugin:
            return left
        if f.relevant(shape):
            left = [g for g in left if f.rejects(shape, g, env) is None]
    return left


# --- a wait behind a minDuration or a reservation says when it ends -----------------------------


def test_waiting_behind_a_heavy_users_min_duration_says_when_it_ends():
    busy = running("h", "s1", user="heavy", gpu_ids=(0,), started=ago(HOUR), min_s=3 * HOUR)
    result = run_cycle(
        snapshot(
            slaves=[slave("s1", gpus=1)],
            running=[busy],
            queued=[queued("light", user="light", gpus=1)],
            usage={"heavy": 100 * HOUR, "light": 0.0},
        )
    )
    assert not result.halts
    assert result.explanations["light"] == (
        "room on s1 from 14:00 UTC: 1 running job there reaches its minDuration then and may "
        "be halted for this job (fair share)",
        "cluster 1: no free GPUs, job needs 1",
    )


def test_no_such_line_when_nobody_may_halt_for_the_job():
    """An equally heavy user's job is never halted for it: only "no free GPUs"."""
    busy = running("h", "s1", user="other", gpu_ids=(0,), started=ago(HOUR), min_s=3 * HOUR)
    result = run_cycle(
        snapshot(
            slaves=[slave("s1", gpus=1)],
            running=[busy],
            queued=[queued("j", user="me", gpus=1)],
            usage={"other": 10 * HOUR, "me": 10 * HOUR},
        )
    )
    assert result.explanations["j"] == ("cluster 1: no free GPUs, job needs 1",)


def test_waiting_for_its_reservation_to_open_says_when():
    """Entitled to R, which opens in 2 hours on s1, where a job not entitled to it runs past
    its minDuration: R halts it when it opens, and the job is told so."""
    res = reservation("R", start=later(2 * HOUR), end=later(DAY), slaves=("s1",), users=("me",))
    busy = running("other", "s1", user="u", gpu_ids=(0,), started=ago(DAY), min_s=HOUR)
    result = run_cycle(
        snapshot(
            slaves=[slave("s1", gpus=1)],
            running=[busy],
            reservations=[res],
            queued=[queued("j", user="me", gpus=1, reservations=("R",))],
            usage={"u": 0.0, "me": 0.0},
        )
    )
    assert result.explanations["j"] == (
        "room on s1 from 14:00 UTC: reservation R opens then and halts 1 job not entitled to it",
        "cluster 1: no free GPUs, job needs 1",
    )


def test_waiting_inside_an_open_reservation_for_a_min_duration():
    res = reservation("R", start=ago(HOUR), end=later(DAY), slaves=("s1",), users=("me",))
    busy = running("other", "s1", user="u", gpu_ids=(0,), started=ago(HOUR), min_s=2 * HOUR)
    result = run_cycle(
        snapshot(
            slaves=[slave("s1", gpus=1)],
            running=[busy],
            reservations=[res],
            queued=[queued("j", user="me", gpus=1, reservations=("R",))],
            usage={"u": 0.0, "me": 0.0},
        )
    )
    assert result.explanations["j"][0] == (
        "room on s1 from 13:00 UTC: 1 running job there reaches its minDuration then and may "
        "be halted for this job (reservation R)"
    )


def test_a_reservation_that_blocks_the_job_says_when_it_ends():
    """Not entitled, and it would still run when R starts: it waits until R is over."""
    res = reservation("R", start=later(2 * HOUR), end=later(6 * HOUR), slaves=("s1",))
    job = queued("j", gpus=1, max_duration_s=DAY, min_duration_s=DAY)
    result = run_cycle(snapshot(slaves=[slave("s1", gpus=1)], reservations=[res], queued=[job]))
    assert result.explanations["j"] == ("reservation R blocks s1 from 14:00 UTC until 18:00 UTC",)
