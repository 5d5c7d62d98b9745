"""Start-time estimates and what-if advice: hand-computable cases of the forward simulation."""

from __future__ import annotations

from dataclasses import replace

from jobs.scheduler.estimate import advise, estimate, head_of_queue, simulate

from .builders import DAY, HOUR, NOW, ago, later, queued, reservation, running, slave, snapshot


def one_gpu_slave(**kw):
    return slave("s1", gpus=1, **kw)


def test_job_that_fits_now_starts_now():
    snap = snapshot(slaves=[one_gpu_slave()], queued=[queued("j", gpus=1)])
    found = estimate(snap, "j")
    assert found.start == NOW
    assert found.cycles == 1


def test_job_behind_a_one_gpu_job_with_two_hours_left_starts_in_two_hours():
    # Started 1 h ago with maxDuration 3 h: 2 h left.
    busy = running("r", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=3 * HOUR, min_s=3 * HOUR)
    snap = snapshot(slaves=[one_gpu_slave()], running=[busy], queued=[queued("j", gpus=1)])
    found = estimate(snap, "j")
    assert found.start == later(2 * HOUR)
    assert found.cycles == 2  # now, then the end of r


def test_restarted_job_counts_its_earlier_run_time():
    # 3 h maxDuration, 2 h used before the restart, started 30 min ago: 30 min left.
    busy = running(
        "r", "s1", gpu_ids=(0,), started=ago(HOUR / 2), max_s=3 * HOUR, run_before=2 * HOUR
    )
    snap = snapshot(slaves=[one_gpu_slave()], running=[busy], queued=[queued("j", gpus=1)])
    assert estimate(snap, "j").start == later(HOUR / 2)


def test_queue_order_is_the_schedulers():
    """Two jobs wait for one GPU: the lighter user's goes first, the other after it ends."""
    busy = running("r", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=2 * HOUR, min_s=2 * HOUR)
    first = queued("a", user="light", gpus=1)
    second = queued("b", user="heavy", gpus=1)
    snap = snapshot(
        slaves=[one_gpu_slave()],
        running=[busy],
        queued=[second, first],
        usage={"light": 0.0, "heavy": 100 * HOUR},
    )
    found = simulate(snap, ["a", "b"])
    assert found["a"].start == later(HOUR)
    # a runs for its maxDuration (the default, two weeks) before b gets the GPU.
    assert found["b"].start == later(HOUR + first.max_duration_s)
    assert [j.id for j in head_of_queue(snap, ["a"])] == ["a"]


def test_reservation_window_blocks_until_it_ends():
    res = reservation("R", start=ago(HOUR), end=later(3 * HOUR), slaves=("s1",))
    snap = snapshot(slaves=[one_gpu_slave()], reservations=[res], queued=[queued("j", gpus=1)])
    assert estimate(snap, "j").start == later(3 * HOUR)


def test_never_within_the_horizon_says_why():
    busy = running("r", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=60 * DAY)
    snap = snapshot(slaves=[one_gpu_slave()], running=[busy], queued=[queued("j", gpus=1)])
    found = estimate(snap, "j")
    assert found.start is None
    assert found.reason == "not started within 4 weeks 2 days"


def test_advice_one_gpu_instead_of_two():
    # Two GPUs; one held for 2 more hours: 2 GPUs start in 2 h, 1 GPU starts now.
    busy = running("r", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=3 * HOUR)
    snap = snapshot(slaves=[slave("s1", gpus=2)], running=[busy], queued=[queued("j", gpus=2)])
    assert estimate(snap, "j").start == later(2 * HOUR)
    advice = advise(snap, "j")
    assert [(a.kind, a.change, a.start, a.value) for a in advice] == [
        ("gpus", "1 GPU instead of 2", NOW, 1)
    ]


def test_advice_another_cluster():
    busy = running("r", "v1", gpu_ids=(0,), started=ago(HOUR), max_s=5 * HOUR)
    snap = snapshot(
        slaves=[
            slave("v1", 1, gpus=1),  # V100, busy for 4 more hours
            slave("v2", 2, gpus=1),  # V100, free
            slave("p1", 3, gpus=1, private=True, owners=("lab",)),  # not the job's to ask for
        ],
        running=[busy],
        queued=[queued("j", gpus=1, cluster_id=1, models=("V100",))],
    )
    assert estimate(snap, "j").start == later(4 * HOUR)
    advice = advise(snap, "j")
    # No GPU model advice: cluster 1 has V100s only.
    assert [(a.kind, a.change, a.start, a.value) for a in advice] == [
        ("cluster", "cluster 2 instead of cluster 1", NOW, 2)
    ]


def test_advice_another_gpu_model_without_cluster():
    busy = running("r", "v1", gpu_ids=(0,), started=ago(HOUR), max_s=5 * HOUR)
    snap = snapshot(
        slaves=[slave("v1", gpus=1), slave("a1", gpus=1, model="NVIDIA A100-SXM4-80GB")],
        running=[busy],
        queued=[queued("j", gpus=1, models=("V100",))],
    )
    advice = advise(snap, "j")
    assert [(a.kind, a.change, a.start) for a in advice] == [
        ("gpu_model", "GPU model NVIDIA A100-SXM4-80GB instead of V100", NOW)
    ]


def test_advice_shorter_max_duration_fits_before_a_reservation():
    # The only slave is reserved from 3 h on for 1 day; a 1-day job would run into it, so it
    # waits until the reservation ends; a 3-hour job finishes before it and starts now.
    res = reservation("R", start=later(3 * HOUR), end=later(27 * HOUR), slaves=("s1",))
    job = queued("j", gpus=1, max_duration_s=DAY, min_duration_s=DAY)
    snap = snapshot(slaves=[one_gpu_slave()], reservations=[res], queued=[job])
    assert estimate(snap, "j").start == later(27 * HOUR)
    advice = advise(snap, "j")
    assert [(a.kind, a.start, a.value) for a in advice] == [("max_duration", NOW, 3 * HOUR)]
    # Its minDuration (1 day) is lowered too: maxDuration 3 hours alone would be refused at
    # submit (issue 26 item 6: the advice suggested a maxDuration below the minDuration).
    assert advice[0].change.startswith(
        "maxDuration 3 hours instead of 1 day and minDuration 3 hours instead of 1 day "
        "(ends before reservation R starts at"
    )


def test_fairness_halts_are_part_of_the_simulation():
    """A light user's job halts a heavy user's job past its minDuration: it starts once the
    halted job has left (the halt grace period, 15 s, and a tick later), not at its
    maxDuration."""
    busy = running("r", "s1", user="heavy", gpu_ids=(0,), started=ago(HOUR), max_s=5 * HOUR)
    snap = snapshot(
        slaves=[one_gpu_slave()],
        running=[busy],
        queued=[queued("j", user="light", gpus=1)],
        usage={"light": 0.0, "heavy": 100 * HOUR},
    )
    assert estimate(snap, "j").start == later(20)


def test_no_advice_when_nothing_helps():
    busy = running("r", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=3 * HOUR)
    snap = snapshot(slaves=[one_gpu_slave()], running=[busy], queued=[queued("j", gpus=1)])
    assert advise(snap, "j") == []


def test_the_estimate_is_bounded_by_the_event_budget():
    runs = [
        running(f"r{i}", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=HOUR + (i + 1) * 60)
        for i in range(1)
    ]
    queue = [queued(f"q{i}", gpus=1, submitted=ago(DAY - i)) for i in range(10)]
    snap = snapshot(slaves=[one_gpu_slave()], running=runs, queued=queue)
    snap = replace(snap, queued=tuple(replace(j, max_duration_s=600) for j in queue))
    found = estimate(snap, "q9", max_events=5)
    assert found.start is None
    assert found.cycles == 5
    assert found.reason == "not started within 5 simulated scheduling rounds"
    assert estimate(snap, "q9").start == later(60 + 9 * 600)


def test_gpu_advice_is_the_largest_count_that_helps():
    # 8 GPUs, 4 busy for 2 more hours: 8 wait 2 h; 7 would too; 4 start now (tries 7, 4, 1).
    busy = running("r", "s1", gpu_ids=(0, 1, 2, 3), started=ago(HOUR), max_s=3 * HOUR)
    snap = snapshot(slaves=[slave("s1", gpus=8)], running=[busy], queued=[queued("j", gpus=8)])
    assert [(a.change, a.start) for a in advise(snap, "j")] == [("4 GPUs instead of 8", NOW)]


def test_no_advice_for_a_job_that_starts_now():
    snap = snapshot(slaves=[slave("s1", gpus=2)], queued=[queued("j", gpus=2)])
    assert advise(snap, "j") == []


def test_bucket_counts_follow_the_simulated_jobs():
    """The snapshot counts one active job in bucket b (max 1); when it ends, the job starts."""
    busy = running("r", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=2 * HOUR, bucket="b")
    snap = snapshot(
        slaves=[slave("s1", gpus=2)],
        running=[busy],
        queued=[queued("j", gpus=1, bucket=("b", 1))],
        bucket_counts={"b": 1},
    )
    assert estimate(snap, "j").start == later(HOUR)


def test_jobs_too_far_back_in_the_queue_get_no_estimate():
    queue = [queued(f"q{i}", gpus=1, submitted=ago(DAY - i)) for i in range(4)]
    snap = snapshot(slaves=[one_gpu_slave()], queued=queue)
    found = estimate(snap, "q3", max_position=3)
    assert (found.start, found.cycles) == (None, 0)
    assert found.reason == "at least 3 jobs are ahead of it in the queue"
    assert estimate(snap, "q2", max_position=3).cycles > 0
    assert advise(snap, "q3", max_position=3) == []
