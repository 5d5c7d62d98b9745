"""Interactive jobs start in this cycle, make room by halting jobs past their minDuration and
wait a bounded time for them, or fail with the reason."""

from datetime import timedelta

from jobs.scheduler import HaltReason, SchedulerConfig, run_cycle

from .builders import (
    DAY,
    HOUR,
    NOW,
    WEEK,
    ago,
    failed,
    halted_ids,
    queued,
    reservation,
    running,
    slave,
    snapshot,
    started,
)

FULL = (0, 1, 2, 3)


def busy(job_id="r", on="s1", *, min_s=2 * DAY, **extra):
    """A running job holding every GPU of a 4-GPU slave, not haltable unless ``min_s`` allows."""
    return running(job_id, on, gpu_ids=FULL, cpu_ids=(0,), min_s=min_s, **extra)


def test_interactive_starts_when_room():
    result = run_cycle(
        snapshot(slaves=[slave("s1")], queued=[queued("i", interactive=True, submitted=NOW)])
    )
    assert "i" in started(result)
    assert "i" not in result.explanations


def test_interactive_fails_with_reason_when_no_room():
    result = run_cycle(
        snapshot(
            slaves=[slave("s1")],
            running=[busy()],
            queued=[queued("i", interactive=True, submitted=NOW)],
        )
    )
    reasons = failed(result)
    assert reasons["i"].startswith("interactive job could not start at once: ")
    assert "cluster 1: no free GPUs, job needs 1" in reasons["i"]
    assert "i" not in result.explanations
    assert halted_ids(result) == set()


def test_interactive_fails_when_bucket_full():
    job = queued("i", interactive=True, bucket=("b", 1))
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[job], bucket_counts={"b": 1}))
    assert failed(result) == {"i": "interactive job could not start at once: bucket b full (1/1)"}


def test_interactive_fails_when_request_impossible():
    result = run_cycle(
        snapshot(slaves=[slave("s1")], queued=[queued("i", interactive=True, gpus=9)])
    )
    assert "no slave has 9 GPUs (largest: 4 on s1)" in failed(result)["i"]


def test_interactive_halts_jobs_past_min_duration_and_waits():
    """Whatever the users' usage: the interactive job of a heavy user halts a light user's job."""
    victim = busy(user="light", started=ago(WEEK), min_s=HOUR)
    job = queued("i", user="heavy", interactive=True, submitted=NOW)
    result = run_cycle(
        snapshot(
            slaves=[slave("s1")], running=[victim], queued=[job], usage={"heavy": 1e9, "light": 0}
        )
    )
    assert halted_ids(result) == {"r"}
    (halt,) = result.halts
    assert halt.reason == HaltReason.SCORE
    assert halt.halt_info.started_job_uuids == ("i",)
    assert failed(result) == {} and started(result) == {}
    assert result.explanations["i"] == (
        "waiting for 1 halted job(s) on s1 to free room",
        "interactive job: starts when they end, fails if not started by 2026-06-01T12:01:00Z",
    )


def test_interactive_halts_the_fewest_jobs_preferring_restartable():
    jobs = [
        running("a", "s1", gpu_ids=(0, 1), cpu_ids=(0,), min_s=HOUR, restartable=False),
        running("b", "s1", gpu_ids=(2,), cpu_ids=(1,), min_s=HOUR, restartable=True),
        running("c", "s1", gpu_ids=(3,), cpu_ids=(2,), min_s=2 * DAY),  # protected
    ]
    result = run_cycle(
        snapshot(
            slaves=[slave("s1")],
            running=jobs,
            queued=[queued("i", interactive=True, submitted=NOW)],
        )
    )
    assert halted_ids(result) == {"b"}


def test_interactive_waiting_for_halted_jobs_does_not_halt_again_and_starts_when_they_end():
    since = NOW - timedelta(seconds=20)
    job = queued("i", interactive=True, halt_wait_since=since)
    leaving = busy(started=ago(WEEK), min_s=HOUR, halting=True)
    result = run_cycle(snapshot(slaves=[slave("s1")], running=[leaving], queued=[job]))
    assert halted_ids(result) == set() and failed(result) == {}
    assert result.explanations["i"][0] == "waiting for 1 halted job(s) on s1 to free room"
    assert "2026-06-01T12:00:40Z" in result.explanations["i"][1]
    # The halted job ended: the interactive job starts.
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[job]))
    assert "i" in started(result)


def test_interactive_fails_when_halted_jobs_outlast_the_wait():
    config = SchedulerConfig(interactive_halt_wait_s=60)
    job = queued("i", interactive=True, halt_wait_since=NOW - timedelta(seconds=61))
    leaving = busy(started=ago(WEEK), min_s=HOUR, halting=True)
    result = run_cycle(
        snapshot(slaves=[slave("s1")], running=[leaving], queued=[job], config=config)
    )
    assert failed(result) == {
        "i": "interactive job could not start at once: "
        "the jobs halted for it did not free room within 1 minute"
    }


def test_interactive_may_wait_behind_jobs_already_halting_only_shortly_after_submit():
    leaving = busy(started=ago(WEEK), halting=True)
    fresh = queued("fresh", interactive=True, submitted=NOW - timedelta(seconds=5))
    old = queued("old", interactive=True, submitted=ago(HOUR), gpus=4)
    result = run_cycle(snapshot(slaves=[slave("s1")], running=[leaving], queued=[fresh, old]))
    assert set(failed(result)) == {"old"}
    assert result.explanations["fresh"][0] == "waiting for 1 halted job(s) on s1 to free room"


def test_interactive_job_whose_first_cycle_comes_too_late_does_not_halt():
    victim = busy(started=ago(WEEK), min_s=HOUR)
    job = queued("i", interactive=True, submitted=NOW - timedelta(seconds=61))
    config = SchedulerConfig(interactive_halt_wait_s=60)
    result = run_cycle(
        snapshot(slaves=[slave("s1")], running=[victim], queued=[job], config=config)
    )
    assert halted_ids(result) == set()
    assert "cluster 1: no free GPUs, job needs 1" in failed(result)["i"]


def test_interactive_does_not_halt_when_disabled():
    victim = busy(started=ago(WEEK), min_s=HOUR)
    result = run_cycle(
        snapshot(
            slaves=[slave("s1")],
            running=[victim],
            queued=[queued("i", interactive=True, submitted=NOW)],
            config=SchedulerConfig(interactive_halts=False),
        )
    )
    assert halted_ids(result) == set() and "i" in failed(result)


def test_interactive_never_halts_owners_on_a_private_cluster_or_entitled_jobs():
    owner_job = busy("own", "p1", project="lab", started=ago(WEEK), min_s=HOUR)
    entitled = busy("ent", "s1", started=ago(WEEK), min_s=HOUR, reservation_ids=("R",))
    res = reservation("R", start=ago(HOUR), end=NOW + timedelta(hours=2), slaves=("s1",))
    result = run_cycle(
        snapshot(
            slaves=[slave("s1"), slave("p1", cluster=2, private=True, owners=("lab",))],
            running=[owner_job, entitled],
            reservations=[res],
            queued=[queued("i", interactive=True, submitted=NOW, min_duration_s=HOUR)],
        )
    )
    assert halted_ids(result) == set()
    assert "i" in failed(result)


def test_interactive_halts_are_capped_per_cycle():
    slaves = [slave(f"s{n}") for n in range(3)]
    victims = [busy(f"r{n}", f"s{n}", started=ago(WEEK), min_s=HOUR) for n in range(3)]
    jobs = [queued(f"i{n}", interactive=True, submitted=NOW, gpus=4) for n in range(3)]
    config = SchedulerConfig(max_interactive_halts_per_cycle=2)
    result = run_cycle(snapshot(slaves=slaves, running=victims, queued=jobs, config=config))
    assert len(result.halts) == 2
    assert len(failed(result)) == 1


def test_interactive_before_a_lighter_users_batch_job():
    """Issue 15 item 7: the batch job of a lighter user no longer takes the last GPU first."""
    jobs = [queued("batch", user="light"), queued("inter", user="heavy", interactive=True)]
    result = run_cycle(
        snapshot(slaves=[slave("s1", gpus=1)], queued=jobs, usage={"heavy": 10.0, "light": 0})
    )
    assert set(started(result)) == {"inter"}
    assert failed(result) == {}
    assert result.explanations["batch"]


def test_the_scheduler_wakes_at_an_interactive_jobs_deadline():
    """A waiting interactive job fails at its deadline, not at the next periodic tick."""
    since = NOW - timedelta(seconds=20)
    job = queued("i", interactive=True, halt_wait_since=since)
    leaving = busy(started=ago(WEEK), min_s=HOUR, halting=True)
    config = SchedulerConfig(interactive_halt_wait_s=60)
    result = run_cycle(
        snapshot(slaves=[slave("s1")], running=[leaving], queued=[job], config=config)
    )
    assert result.next_wakeup == since + timedelta(seconds=60)
