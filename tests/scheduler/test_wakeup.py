"""``CycleResult.next_wakeup``: the earliest later moment a cycle could decide differently."""

from jobs.scheduler import SchedulerConfig, run_cycle

from .builders import (
    DAY,
    HOUR,
    NOW,
    WEEK,
    ago,
    later,
    queued,
    reservation,
    running,
    slave,
    snapshot,
)


def wakeup(**parts):
    return run_cycle(snapshot(slaves=parts.pop("slaves", [slave("s1")]), **parts)).next_wakeup


def test_nothing_time_driven_means_no_wakeup():
    # A running job under the defaults still has a maxDuration deadline; a bare queue has none.
    assert wakeup(queued=[queued("q", gpus=99)]) is None


def test_not_before_wakes_the_scheduler_when_it_passes():
    job = queued("q", not_before=later(90))
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[job]))
    assert not result.starts
    assert result.next_wakeup == later(90)


def test_a_passed_not_before_is_no_wakeup():
    # The moment is not in the future any more (the job waits for room, not for time).
    assert wakeup(queued=[queued("q", gpus=99, not_before=ago(5))]) is None


def test_not_after_of_a_waiting_job():
    job = queued("q", gpus=99, not_after=later(300))
    assert wakeup(queued=[job]) == later(300)


def test_earliest_of_several_moments_wins():
    jobs = [
        queued("a", gpus=99, not_after=later(300)),
        queued("b", not_before=later(200)),
        queued("c", not_before=later(400)),
    ]
    assert wakeup(queued=jobs) == later(200)


def test_reservation_start_then_end():
    window = reservation("r", start=later(120), end=later(3600), slaves=("s1",))
    assert wakeup(reservations=[window]) == later(120)
    opened = reservation("r", start=ago(60), end=later(3600), slaves=("s1",))
    assert wakeup(reservations=[opened]) == later(3600)


def test_max_duration_deadline_of_a_running_job():
    job = running("r", "s1", gpu_ids=(0,), started=ago(HOUR), max_s=2 * HOUR, min_s=WEEK)
    assert wakeup(running=[job]) == later(HOUR)


def test_max_duration_counts_earlier_runs():
    job = running("r", "s1", started=ago(HOUR), max_s=3 * HOUR, run_before=HOUR, min_s=WEEK)
    assert wakeup(running=[job]) == later(HOUR)


def test_halting_and_cancelled_jobs_have_no_deadline():
    halting = running("h", "s1", started=ago(HOUR), max_s=2 * HOUR, halting=True)
    overdue = running("o", "s1", started=ago(3 * HOUR), max_s=2 * HOUR)
    result = run_cycle(snapshot(slaves=[slave("s1")], running=[halting, overdue]))
    assert [c.job_id for c in result.cancels] == ["o"]
    assert result.next_wakeup is None


def test_min_duration_end_matters_only_while_a_job_waits():
    busy = running("r", "s1", gpu_ids=(0, 1, 2, 3), started=ago(HOUR), min_s=2 * HOUR, max_s=DAY)
    # Nobody waits: only the maxDuration deadline.
    assert wakeup(running=[busy]) == later(DAY - HOUR)
    # A job waits for the GPUs: the moment the running job becomes haltable counts.
    assert wakeup(running=[busy], queued=[queued("q", gpus=4)]) == later(HOUR)


def test_fairness_patience_ends_while_waiting():
    busy = running("r", "s1", gpu_ids=(0, 1, 2, 3), started=ago(DAY), min_s=HOUR, max_s=WEEK)
    config = SchedulerConfig(fairness_halt_min_queued_s=2 * HOUR, fairness_halts=False)
    job = queued("q", gpus=4, submitted=ago(HOUR))
    got = wakeup(running=[busy], queued=[job], config=config)
    assert got == later(HOUR)


def test_wakeup_is_always_after_now():
    jobs = [queued(f"q{i}", gpus=99, not_before=NOW, not_after=ago(i)) for i in range(3)]
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=jobs))
    assert result.next_wakeup is None


def test_a_job_started_now_wakes_at_its_max_duration_at_the_earliest():
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[queued("q", max_duration_s=600)]))
    assert [s.job_id for s in result.starts] == ["q"]
    assert result.next_wakeup == later(600)
