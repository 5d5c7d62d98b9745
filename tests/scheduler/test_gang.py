"""Gang placement in the pure scheduler: all tasks of a gang in one cycle or none, never a GPU
held for a gang that waits, smaller jobs run meanwhile (jobs/scheduler/gang.py)."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduler import GpuInfo, QueuedJob, SchedulerConfig, SlaveState, Snapshot, run_cycle

from .builders import NOW, queued, slave, snapshot, started
from .test_properties import (
    check_host_ports_are_never_shared,
    check_never_over_allocates,
    check_reservations_are_respected,
    check_starts_respect_the_request_and_the_slave,
    snapshots,
)


def gang(name: str, sizes: list[int], *, user="alice", cluster=None, **extra) -> list[QueuedJob]:
    return [
        queued(
            f"{name}-{i}",
            user=user,
            gpus=g,
            gang=name,
            gang_size=len(sizes),
            cluster_id=cluster,
            submitted=NOW - timedelta(hours=2),
            **extra,
        )
        for i, g in enumerate(sizes)
    ]


def test_gang_spread_over_slaves_starts_whole():
    # 4 tasks of 2 GPUs: no slave holds two of them with the others, so they spread.
    snap = snapshot(slaves=[slave("a", gpus=4), slave("b", gpus=4)], queued=gang("g", [2, 2, 2, 2]))
    result = run_cycle(snap)
    starts = started(result)
    assert set(starts) == {"g-0", "g-1", "g-2", "g-3"}
    per_slave = defaultdict(set)
    for start in starts.values():
        assert not per_slave[start.slave] & set(start.gpu_ids)
        per_slave[start.slave] |= set(start.gpu_ids)
    assert {name: len(ids) for name, ids in per_slave.items()} == {"a": 4, "b": 4}


def test_gang_that_does_not_fit_waits_whole_while_smaller_jobs_run():
    # 3 tasks of 3 GPUs on two 4-GPU slaves: only two fit. The gang holds nothing, and the
    # later one-GPU jobs use the room.
    jobs = gang("big", [3, 3, 3]) + [
        queued("small1", gpus=1, submitted=NOW - timedelta(minutes=5)),
        queued("small2", gpus=1, submitted=NOW - timedelta(minutes=4)),
    ]
    result = run_cycle(snapshot(slaves=[slave("a", gpus=4), slave("b", gpus=4)], queued=jobs))
    starts = started(result)
    assert set(starts) == {"small1", "small2"}
    for task in ("big-0", "big-1", "big-2"):
        lines = result.explanations[task]
        assert lines[0].startswith(
            "gang of 3 tasks waits whole: needs 3 task(s) of 3 GPU(s), 1 CPU(s), 1 GB; 2 of them "
            "could be placed now"
        )
        # The small jobs were packed on one slave: only the other can take a 3-GPU task now.
        assert "1 slave(s) can take one such task now" in lines[0]
    # The small jobs got the lowest ids: nothing was left taken by the rolled-back tasks.
    assert {(s.slave, s.gpu_ids) for s in starts.values()} <= {("a", (0,)), ("b", (0,))} | {
        ("a", (1,)),
        ("b", (1,)),
    }


def test_incomplete_gang_waits():
    tasks = gang("g", [1, 1, 1])[:2]  # the third is on hold: not in the queue
    result = run_cycle(snapshot(slaves=[slave("a", gpus=4)], queued=tasks))
    assert not result.starts
    assert result.explanations["g-0"] == (
        "gang of 2 tasks waits whole: 2 of its 3 tasks are queued",
    )


def test_rollback_restores_room_for_the_same_shape():
    # The gang's first task shape fits alone; after the rollback a lone job of that shape,
    # later in the queue, still starts (no failure memo written while placing tentatively).
    jobs = gang("g", [2, 4]) + [queued("solo", gpus=2, submitted=NOW - timedelta(minutes=1))]
    result = run_cycle(snapshot(slaves=[slave("a", gpus=2), slave("b", gpus=2)], queued=jobs))
    assert set(started(result)) == {"solo"}


def test_second_identical_gang_fails_fast_and_explained():
    jobs = gang("g1", [4, 4]) + gang("g2", [4, 4])
    result = run_cycle(snapshot(slaves=[slave("a", gpus=4)], queued=jobs))
    assert not result.starts
    assert result.explanations["g2-0"][0].startswith("gang of 2 tasks waits whole")


# --- properties ------------------------------------------------------------------------------


@st.composite
def gang_snapshots(draw) -> Snapshot:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    slaves = [
        SlaveState(
            name=f"s{i}",
            cluster_id=rng.choice((1, 2)),
            gpus=tuple(GpuInfo(j, "V100") for j in range(rng.randint(0, 8))),
            cpu_ids=tuple(range(rng.randint(1, 16))),
            memory_gb=float(rng.randint(4, 64)),
        )
        for i in range(draw(st.integers(1, 6)))
    ]
    jobs = []
    for g in range(draw(st.integers(0, 6))):
        size = rng.randint(1, 6)
        cluster = rng.choice((None, 1, 2))
        # Now and then a task of the gang is not queued (on hold): the gang must wait.
        declared = size if rng.random() < 0.9 else size + 1
        for t in range(size):
            jobs.append(
                QueuedJob(
                    id=f"g{g}-{t}",
                    user=rng.choice(("u1", "u2")),
                    project="p",
                    submitted_at=NOW - timedelta(seconds=rng.randint(0, 3600)),
                    gpus=rng.randint(0, 4),
                    cpus=rng.randint(1, 4),
                    memory_gb=float(rng.randint(1, 16)),
                    cluster_id=cluster,
                    gang=f"g{g}",
                    gang_size=declared,
                )
            )
    for j in range(draw(st.integers(0, 10))):
        jobs.append(
            QueuedJob(
                id=f"j{j}",
                user=rng.choice(("u1", "u2")),
                project="p",
                submitted_at=NOW - timedelta(seconds=rng.randint(0, 3600)),
                gpus=rng.randint(0, 4),
                cpus=rng.randint(1, 4),
                memory_gb=float(rng.randint(1, 16)),
            )
        )
    return Snapshot(now=NOW, slaves=tuple(slaves), queued=tuple(jobs))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gang_snapshots())
def test_gang_never_partially_placed_and_no_gpu_given_twice(snap):
    result = run_cycle(snap)
    jobs = {j.id: j for j in snap.queued}
    starts = started(result)
    members = defaultdict(set)
    for job in snap.queued:
        if job.gang is not None:
            members[job.gang].add(job.id)
    for name, ids in members.items():
        placed = ids & set(starts)
        assert placed in (set(), ids), f"gang {name} partly placed: {sorted(placed)}"
        if placed:
            assert len(ids) == jobs[next(iter(ids))].gang_size
    by_slave = {s.name: s for s in snap.slaves}
    gpus, cpus, mem = defaultdict(list), defaultdict(list), defaultdict(float)
    for start in result.starts:
        job = jobs[start.job_id]
        assert len(start.gpu_ids) == job.gpus
        gpus[start.slave] += start.gpu_ids
        cpus[start.slave] += start.cpu_ids
        mem[start.slave] += job.memory_gb
    for name, ids in gpus.items():
        assert len(ids) == len(set(ids)), f"a GPU of {name} given twice"
        assert set(ids) <= {g.index for g in by_slave[name].gpus}
    for ids in cpus.values():
        assert len(ids) == len(set(ids))
    for name, used in mem.items():
        assert used <= by_slave[name].memory_gb + 1e-9


def test_gang_result_is_the_same_as_without_the_rolled_back_attempt():
    # The failing gang must leave the cycle exactly as if it had not been tried: the other
    # jobs get the same starts with or without it.
    slaves = [slave("a", gpus=4), slave("b", gpus=2)]
    others = [queued(f"j{i}", gpus=i % 3, submitted=NOW - timedelta(minutes=i)) for i in range(6)]
    big = gang("big", [4, 4, 4])
    with_gang = run_cycle(snapshot(slaves=slaves, queued=big + others))
    without = run_cycle(snapshot(slaves=slaves, queued=others))
    assert started(with_gang) == started(without)
    assert replace(with_gang, explanations={}, next_wakeup=None).starts == without.starts


# --- gangs under the full random load of test_properties --------------------------------------


@st.composite
def loaded_gang_snapshots(draw) -> Snapshot:
    """test_properties' random snapshots (reservations, private clusters, running jobs, halts,
    buckets, limits, host ports) with runs of consecutive queued jobs turned into gangs."""
    snap = draw(snapshots())
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    queued, out, number = list(snap.queued), [], 0
    while queued:
        size = rng.randint(1, 4)
        group, queued = queued[:size], queued[size:]
        if size > 1 and rng.random() < 0.6:
            lead = group[0]
            for job in group:
                out.append(
                    replace(
                        job,
                        user=lead.user,
                        project=lead.project,
                        submitted_at=lead.submitted_at,
                        interactive=False,
                        halt_wait_since=None,
                        gang=f"G{number}",
                        gang_size=len(group),
                    )
                )
            number += 1
        else:
            out.extend(group)
    return replace(snap, queued=tuple(out))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_gang_snapshots())
def test_gangs_under_random_load_keep_every_cycle_invariant(snap):
    result = run_cycle(snap)
    check_never_over_allocates(snap, result)
    check_starts_respect_the_request_and_the_slave(snap, result)
    check_reservations_are_respected(snap, result)
    check_host_ports_are_never_shared(snap, result)
    starts = started(result)
    members = defaultdict(set)
    for job in snap.queued:
        if job.gang is not None:
            members[job.gang].add(job.id)
    for name, ids in members.items():
        placed = ids & set(starts)
        assert placed in (set(), ids), f"gang {name} partly placed: {sorted(placed)}"
        fails = {d.job_id for d in result.fails} & ids
        if not placed and not fails:
            # A waiting gang's tasks are all explained.
            assert all(result.explanations.get(i) for i in ids), name


def test_per_user_gpu_cap_counts_the_whole_gang():
    config = SchedulerConfig(per_user_max_gpus=3)
    result = run_cycle(
        snapshot(slaves=[slave("a", gpus=8)], queued=gang("g", [2, 2]), config=config)
    )
    assert not result.starts
    assert "user limit" in result.explanations["g-0"][0]


def test_big_tasks_are_placed_first():
    # Two 2-CPU slaves with 4 GPUs each; two CPU-only tasks queued before two 4-GPU tasks.
    # Placed in queue order, both small tasks would pack onto one slave and leave a big task
    # without a CPU there; largest first, each slave takes one big and one small task.
    slaves = [slave("a", gpus=4, cpus=2), slave("b", gpus=4, cpus=2)]
    tasks = gang("g", [0, 0, 4, 4])
    result = run_cycle(snapshot(slaves=slaves, queued=tasks))
    starts = started(result)
    assert set(starts) == {"g-0", "g-1", "g-2", "g-3"}
    assert {starts["g-2"].slave, starts["g-3"].slave} == {"a", "b"}
