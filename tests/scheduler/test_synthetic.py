"""The benchmark snapshot builder: deterministic, realistic, and schedulable (not timed)."""

from bench.synthetic import build_synthetic_snapshot
from jobs.scheduler import run_cycle

from .builders import NOW
from .test_properties import (
    check_buckets_never_overflow,
    check_every_waiting_job_is_explained,
    check_halts_and_cancels_are_legitimate,
    check_host_ports_are_never_shared,
    check_never_over_allocates,
    check_no_idle_room_for_waiting_jobs,
    check_reservations_are_respected,
    check_starts_respect_the_request_and_the_slave,
)


def test_deterministic_for_a_seed():
    assert build_synthetic_snapshot(50, 20, 4, seed=3, now=NOW) == build_synthetic_snapshot(
        50, 20, 4, seed=3, now=NOW
    )
    assert build_synthetic_snapshot(50, 20, 4, seed=3) != build_synthetic_snapshot(
        50, 20, 4, seed=4
    )


def test_shape_of_the_fleet():
    snap = build_synthetic_snapshot(300, 100, 8, seed=0, now=NOW)
    assert len(snap.queued) == 300 and len(snap.slaves) == 100
    total = sum(len(s.gpus) for s in snap.slaves)
    used = sum(len(r.gpu_ids) for r in snap.running)
    assert 0.35 * total <= used <= 0.65 * total
    assert len({s.cluster_id for s in snap.slaves}) >= 4
    assert any(s.cluster_private for s in snap.slaves)
    assert len(snap.reservations) == 2
    models = {g.model for s in snap.slaves for g in s.gpus}
    assert {"Tesla V100-PCIE-32GB", "NVIDIA A100-SXM4-80GB", "GeForce GTX 1080 Ti"} <= models


def test_a_cycle_on_it_keeps_every_invariant():
    snap = build_synthetic_snapshot(2000, 200, 8, seed=1, now=NOW)
    result = run_cycle(snap)
    assert result.starts and result.explanations
    for check in (
        check_never_over_allocates,
        check_starts_respect_the_request_and_the_slave,
        check_reservations_are_respected,
        check_halts_and_cancels_are_legitimate,
        check_every_waiting_job_is_explained,
        check_buckets_never_overflow,
        check_no_idle_room_for_waiting_jobs,
        check_host_ports_are_never_shared,
    ):
        check(snap, result)
