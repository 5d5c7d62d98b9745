"""Reservations: entitled jobs only during the window, guests before it, halts when it opens."""

import pytest

from jobs.scheduler import HaltReason, run_cycle

from .builders import (
    DAY,
    HOUR,
    WEEK,
    ago,
    halted_ids,
    later,
    queued,
    reservation,
    running,
    slave,
    snapshot,
    started,
)

SLAVES = [slave("gpu1"), slave("gpu2"), slave("gpu3", cluster=2)]
OPEN = reservation("R", cluster=1, start=ago(HOUR), end=later(DAY), projects=("course",))
UPCOMING = reservation("R", cluster=1, start=later(2 * HOUR), end=later(DAY), projects=("course",))


@pytest.mark.parametrize(
    ("res", "job", "expected"),
    [
        # Open window, whole cluster 1: only entitled jobs may use it.
        (OPEN, queued("j", project="course", reservations=("R",)), {"gpu1"}),
        (OPEN, queued("j", project="course"), {"gpu3"}),  # must name it
        (OPEN, queued("j", project="other", reservations=("R",)), {"gpu3"}),  # must be listed
        (OPEN, queued("j", project="other", cluster_id=1), set()),
        # Listed by user instead of project.
        (
            reservation("R", start=ago(HOUR), end=later(DAY), users=("alice",)),
            queued("j", user="alice", reservations=("R",), cluster_id=1),
            {"gpu1"},
        ),
        # Nobody listed: naming the id is enough.
        (
            reservation("R", start=ago(HOUR), end=later(DAY)),
            queued("j", reservations=("R",), cluster_id=1),
            {"gpu1"},
        ),
        # Only some slaves reserved.
        (
            reservation("R", start=ago(HOUR), end=later(DAY), slaves=("gpu1",)),
            queued("j", cluster_id=1),
            {"gpu2"},
        ),
        # Over: no effect.
        (reservation("R", start=ago(DAY), end=ago(HOUR)), queued("j", cluster_id=1), {"gpu1"}),
        # Upcoming: a job that ends (maxDuration) before the start is fine.
        (UPCOMING, queued("j", cluster_id=1, max_duration_s=2 * HOUR), {"gpu1"}),
        # ... one that would still run is not started there ...
        (UPCOMING, queued("j", cluster_id=1, min_duration_s=DAY, max_duration_s=WEEK), set()),
        # ... unless its minDuration ends before the start: then it runs as a guest.
        (UPCOMING, queued("j", cluster_id=1, min_duration_s=HOUR, max_duration_s=WEEK), {"gpu1"}),
    ],
)
def test_who_may_start_where(res, job, expected):
    result = run_cycle(snapshot(slaves=SLAVES, queued=[job], reservations=[res]))
    assert {s.slave for s in result.starts} == expected
    if not expected:
        assert result.explanations["j"]


def test_guest_start_lists_the_reservation_it_ignores():
    job = queued("j", cluster_id=1, min_duration_s=HOUR, max_duration_s=WEEK)
    result = run_cycle(snapshot(slaves=SLAVES, queued=[job], reservations=[UPCOMING]))
    assert started(result)["j"].ignoring_reservation_ids == frozenset({"R"})


def test_long_job_prefers_unreserved_slaves_to_being_a_guest():
    job = queued("j", min_duration_s=HOUR, max_duration_s=WEEK)
    result = run_cycle(snapshot(slaves=SLAVES, queued=[job], reservations=[UPCOMING]))
    assert started(result)["j"].slave == "gpu3"
    assert started(result)["j"].ignoring_reservation_ids == frozenset()


def test_entitled_job_prefers_its_open_reservation():
    slaves = [slave("gpu1"), slave("gpu2", cluster=2)]
    run = running("busy", "gpu2", gpu_ids=(0, 1))  # packing alone would pick gpu2
    job = queued("j", project="course", reservations=("R",))
    result = run_cycle(snapshot(slaves=slaves, running=[run], queued=[job], reservations=[OPEN]))
    assert started(result)["j"].slave == "gpu1"


def test_blocked_explanation_names_reservation_and_slaves():
    job = queued("j", cluster_id=1, min_duration_s=DAY, max_duration_s=WEEK)
    result = run_cycle(snapshot(slaves=SLAVES, queued=[job], reservations=[UPCOMING]))
    # The end too: a job kept off waits for it (issue 26 item 5).
    assert result.explanations["j"] == (
        "reservation R blocks gpu1-gpu2 from 14:00 UTC until 2026-06-02 12:00 UTC",
    )
    result = run_cycle(
        snapshot(slaves=SLAVES, queued=[queued("k", cluster_id=1)], reservations=[OPEN])
    )
    assert result.explanations["k"] == (
        f"reservation R holds gpu1-gpu2 until {'2026-06-02 12:00 UTC'}",
    )


def test_open_window_halts_jobs_not_entitled_past_min_duration():
    runs = [
        running("old", "gpu1", gpu_ids=(0,), started=ago(DAY), min_s=HOUR),
        running("young", "gpu1", gpu_ids=(1,), started=ago(HOUR / 2), min_s=HOUR),
        running("member", "gpu2", gpu_ids=(0,), project="course", reservation_ids=("R",)),
        running("elsewhere", "gpu3", gpu_ids=(0,), started=ago(DAY)),
        running("leaving", "gpu2", gpu_ids=(1,), halting=True),
    ]
    result = run_cycle(snapshot(slaves=SLAVES, running=runs, reservations=[OPEN]))
    assert halted_ids(result) == {"old"}
    (halt,) = result.halts
    assert halt.reason == HaltReason.RESERVATION == "Reservation Priority"
    info = halt.halt_info.to_json()
    assert info["reason"] == "Reservation Priority"
    assert info["haltedJobUuids"] == ["old"]
    assert info["startedJobUuids"] == []
    assert info["slaveName"] == "gpu1"


def test_upcoming_window_halts_nothing():
    runs = [running("old", "gpu1", gpu_ids=(0,), started=ago(DAY), min_s=HOUR)]
    assert not run_cycle(snapshot(slaves=SLAVES, running=runs, reservations=[UPCOMING])).halts


GPU_COUNT = reservation(
    "G", cluster=1, start=ago(HOUR), end=later(DAY), gpu_count=6, projects=("course",)
)  # 8 GPUs on gpu1+gpu2, 6 held: others may use 2


def test_gpu_count_leaves_the_rest_to_others():
    jobs = [queued(f"o{i}", cluster_id=1, gpus=1) for i in range(4)]
    result = run_cycle(snapshot(slaves=SLAVES, queued=jobs, reservations=[GPU_COUNT]))
    assert len(result.starts) == 2
    assert "reservation G holds 6 GPUs of gpu1-gpu2" in result.explanations["o2"][0]


def test_gpu_count_lets_entitled_jobs_use_everything():
    jobs = [
        queued(f"e{i}", cluster_id=1, gpus=2, project="course", reservations=("G",))
        for i in range(4)
    ]
    result = run_cycle(snapshot(slaves=SLAVES, queued=jobs, reservations=[GPU_COUNT]))
    assert len(result.starts) == 4


def test_gpu_count_cpu_only_jobs_are_not_held_back():
    jobs = [queued(f"c{i}", cluster_id=1, gpus=0) for i in range(3)]
    result = run_cycle(snapshot(slaves=SLAVES, queued=jobs, reservations=[GPU_COUNT]))
    assert len(result.starts) == 3


def test_gpu_count_open_window_halts_only_the_excess_guests_first():
    runs = [
        running("a", "gpu1", gpu_ids=(0, 1), started=ago(DAY), user="u1"),
        running("b", "gpu1", gpu_ids=(2,), started=ago(DAY), user="u2", ignoring=("G",)),
        running("c", "gpu2", gpu_ids=(0,), started=ago(DAY), user="u3"),
    ]  # 4 GPUs held by others, only 2 allowed: halt 2 GPUs' worth, guest "b" first
    result = run_cycle(snapshot(slaves=SLAVES, running=runs, reservations=[GPU_COUNT]))
    halted = halted_ids(result)
    assert "b" in halted
    assert sum(len(r.gpu_ids) for r in runs if r.id in halted) >= 2
    assert len(halted) == 2


def test_upcoming_gpu_count_budget_allows_long_jobs_up_to_the_unreserved_part():
    res = reservation("G", cluster=1, start=later(2 * HOUR), end=later(DAY), gpu_count=6)
    jobs = [
        queued(f"l{i}", cluster_id=1, min_duration_s=DAY, max_duration_s=WEEK) for i in range(3)
    ]
    result = run_cycle(snapshot(slaves=SLAVES, queued=jobs, reservations=[res]))
    assert len(result.starts) == 2
    assert all(not s.ignoring_reservation_ids for s in result.starts)
