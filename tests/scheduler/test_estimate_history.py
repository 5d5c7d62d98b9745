"""Start estimates from what jobs really do, and advice the portal would accept (issue 26 item 6).

Before, estimates assumed that every running job runs to its maxDuration: two jobs shown for
21:12 started 20 minutes early. Now the history of run times decides (jobs/scheduler/runtimes.py:
the user's runs of the same job name, then of the same image, then the user's, then the
site's), capped at maxDuration, with a range. Also fixed: a waiting interactive job predicted to
fail that started 2 s later; a gang "not started within 4 weeks 2 days" behind a job with a
2-week maxDuration; advice with a maxDuration below the job's minDuration, or citing a
reservation on a slave the job could not use.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from jobs.scheduler import RuntimeHistory
from jobs.scheduler.estimate import _variants, advise, estimate, estimate_range
from jobs.scheduler.runtimes import MIN_SAMPLES, RunTimes, history_from_runs, history_keys, quantile

from .builders import (
    A100,
    DAY,
    HOUR,
    NOW,
    V100,
    WEEK,
    ago,
    later,
    queued,
    reservation,
    running,
    slave,
    snapshot,
)

MINUTE = 60


def keys(user, name="train", image="pytorch"):
    return history_keys(user=user, name=name, image=image)


def history(runs, jobs):
    """``runs``: (user, name, seconds), latest first; ``jobs``: job id -> (user, name)."""
    return history_from_runs(
        ((keys(user, name), seconds) for user, name, seconds in runs),
        {job_id: keys(user, name) for job_id, (user, name) in jobs.items()},
    )


def one_gpu_busy(*, started=None, max_s=5 * HOUR, **kw):
    started = started or ago(HOUR)
    return running("r", "s1", user="heavy", gpu_ids=(0,), started=started, max_s=max_s, **kw)


def test_a_running_job_ends_when_runs_of_its_name_did_not_at_its_max_duration():
    """r (maxDuration 5 h) has run 1 h; its user's runs of the same name took 90-120 min:
    the median of those is 100 min, so the GPU is expected back in 40 min (was: 4 h)."""
    snap = snapshot(
        slaves=[slave("s1", gpus=1)], running=[one_gpu_busy()], queued=[queued("j", gpus=1)]
    )
    assert estimate(snap, "j").start == later(4 * HOUR)  # no history: maxDuration
    past = [("heavy", "train", s * MINUTE) for s in (90, 100, 120)]
    snap = replace(snap, history=history(past, {"r": ("heavy", "train"), "j": ("alice", "x")}))
    assert estimate(snap, "j").start == later(40 * MINUTE)


def test_the_range_comes_from_shorter_and_longer_runs():
    past = [("heavy", "train", s * MINUTE) for s in (70, 80, 100, 160, 200)]
    snap = snapshot(
        slaves=[slave("s1", gpus=1)], running=[one_gpu_busy()], queued=[queued("j", gpus=1)]
    )
    snap = replace(snap, history=history(past, {"r": ("heavy", "train")}))
    found = estimate_range(snap, "j")
    assert found.start == later(40 * MINUTE)  # the median run: 100 min
    # 5th and 95th percentiles of the runs longer than its hour so far: 72 and 192 min.
    assert found.earliest == later(12 * MINUTE)
    assert found.latest == later(132 * MINUTE)
    assert found.earliest < found.start < found.latest


def test_no_history_means_max_duration_and_no_range():
    snap = snapshot(
        slaves=[slave("s1", gpus=1)], running=[one_gpu_busy()], queued=[queued("j", gpus=1)]
    )
    found = estimate_range(snap, "j")
    assert found.start == found.earliest == found.latest == later(4 * HOUR)


def test_a_job_past_every_run_of_its_name_asks_the_next_key():
    """r has run 3 h, longer than any run of its name: its user's other runs (2-6 h) say
    more; the median of those longer than 3 h is 5 h, so it ends in 2 h (not at 10 h)."""
    runs = [("heavy", "train", 60 * MINUTE)] * MIN_SAMPLES + [
        ("heavy", "other", h * HOUR) for h in (2, 4, 5, 6)
    ]
    busy = one_gpu_busy(started=ago(3 * HOUR), max_s=10 * HOUR)
    snap = snapshot(slaves=[slave("s1", gpus=1)], running=[busy], queued=[queued("j", gpus=1)])
    snap = replace(snap, history=history(runs, {"r": ("heavy", "train")}))
    assert estimate(snap, "j").start == later(2 * HOUR)
    # Nobody knows anything longer: maxDuration, the only sure bound.
    long_busy = one_gpu_busy(started=ago(7 * HOUR), max_s=10 * HOUR)
    snap = replace(snap, running=(long_busy,))
    assert estimate(snap, "j").start == later(3 * HOUR)


def test_never_past_max_duration_whatever_the_history():
    runs = [("heavy", "train", 10 * HOUR)] * 3
    snap = snapshot(
        slaves=[slave("s1", gpus=1)], running=[one_gpu_busy()], queued=[queued("j", gpus=1)]
    )
    snap = replace(snap, history=history(runs, {"r": ("heavy", "train")}))
    assert estimate(snap, "j").start == later(4 * HOUR)


def test_jobs_started_in_the_simulation_run_as_long_as_their_history():
    """Two queued jobs for one free GPU: the first (10-minute runs) starts now, the second
    after it, in 10 minutes (was: after its maxDuration of 1 day)."""
    first = queued("a", user="light", gpus=1, max_duration_s=DAY, submitted=ago(2 * HOUR))
    second = queued("b", user="light", gpus=1, max_duration_s=DAY)
    snap = snapshot(slaves=[slave("s1", gpus=1)], queued=[first, second])
    assert estimate(snap, "b").start == later(DAY)
    runs = [("light", "train", 10 * MINUTE)] * 3
    snap = replace(snap, history=history(runs, {"a": ("light", "train")}))
    assert estimate(snap, "b").start == later(10 * MINUTE)


def test_history_keeps_the_latest_runs_per_key_and_sorts_them():
    found = history_from_runs(
        [(keys("u"), 30), (keys("u"), 10), (keys("u"), 20)], {}, max_samples=2
    )
    assert found.samples[("name", "u", "train")] == (10, 30)
    assert found.samples[("site",)] == (10, 30)
    assert quantile((10, 20, 30, 40), 0.5) == 25
    with pytest.raises(ValueError):
        quantile((), 0.5)
    times = RunTimes(RuntimeHistory(found.samples, {"j": keys("u")}), 0.5)
    assert times.seconds("j", limit_s=100) == 100  # 2 runs: fewer than MIN_SAMPLES
    assert RunTimes(None, 0.5).seconds("j", limit_s=100) == 100


# --- the cases the audit found -------------------------------------------------------------------


def test_a_waiting_interactive_job_is_expected_to_start_when_its_halted_jobs_leave():
    """The job it waits for is halting (a tick halted it for it 10 s ago): it leaves within the
    halt grace period, and the job starts then. Before: the halting job was assumed to run to
    its maxDuration, so the interactive job was predicted to fail; it started 2 s later."""
    halting = running(
        "h", "s1", user="heavy", gpu_ids=(0,), started=ago(DAY), max_s=WEEK, halting=True
    )
    job = queued("i", gpus=1, interactive=True, submitted=ago(12), halt_wait_since=ago(10))
    snap = snapshot(slaves=[slave("s1", gpus=1)], running=[halting], queued=[job])
    found = estimate(snap, "i")
    assert found.reason is None
    assert found.start == later(20)  # the halt grace period (15 s) and a tick


def test_an_interactive_job_halting_for_itself_is_expected_to_start():
    """No room: the simulated cycle halts a heavy job for it and it waits, counted from that
    halt (as the tick counts it from the halt events), and starts when the job left."""
    busy = running("h", "s1", user="heavy", gpu_ids=(0,), started=ago(DAY), max_s=WEEK)
    job = queued("i", user="light", gpus=1, interactive=True, submitted=ago(50))
    snap = snapshot(
        slaves=[slave("s1", gpus=1)],
        running=[busy],
        queued=[job],
        usage={"heavy": 100 * HOUR, "light": 0.0},
    )
    found = estimate(snap, "i")
    assert (found.start, found.reason) == (later(20), None)


def test_a_gang_is_estimated_whole():
    """Two tasks need the slave's two GPUs; one is held by a job with a 2-week maxDuration
    that has run a day. Before: "not started within 4 weeks 2 days" (the task behind the
    estimated one in queue order was left out, so the gang never became whole)."""
    busy = running("r", "s1", gpu_ids=(0,), started=ago(DAY), max_s=2 * WEEK)
    tasks = [queued(f"{n}-task", gpus=1, gang="G", gang_size=2) for n in ("a", "b")]
    snap = snapshot(slaves=[slave("s1", gpus=2)], running=[busy], queued=tasks)
    for task in tasks:
        found = estimate(snap, task.id)
        assert (found.start, found.reason) == (later(2 * WEEK - DAY), None)


# --- advice the portal would accept --------------------------------------------------------------


def test_advice_never_cites_a_reservation_on_a_slave_the_job_cannot_use():
    """The job wants A100s: only a1 can run it. R1 (on v1, a V100 slave) starts sooner than R2
    (on a1); a maxDuration fitting before R1 also fits before R2, and was the advice cited:
    "ends before reservation R1", a reservation the job never met."""
    r1 = reservation("R1", start=later(2 * HOUR), end=later(DAY), slaves=("v1",))
    r2 = reservation("R2", start=later(3 * HOUR), end=later(DAY), slaves=("a1",))
    job = queued("j", gpus=1, models=("A100",), max_duration_s=DAY, min_duration_s=DAY)
    snap = snapshot(
        slaves=[slave("v1", gpus=1, model=V100), slave("a1", gpus=1, model=A100)],
        reservations=[r1, r2],
        queued=[job],
    )
    assert estimate(snap, "j").start == r2.end
    advice = advise(snap, "j")
    assert [(a.kind, a.value) for a in advice] == [("max_duration", 3 * HOUR)]
    assert "reservation R2" in advice[0].change
    assert "R1" not in advice[0].change


def test_advice_keeps_the_minduration_at_or_below_the_maxduration():
    res = reservation("R", start=later(3 * HOUR), end=later(27 * HOUR), slaves=("s1",))
    job = queued("j", gpus=1, max_duration_s=2 * DAY, min_duration_s=DAY)
    snap = snapshot(slaves=[slave("s1", gpus=1)], reservations=[res], queued=[job])
    (advice,) = advise(snap, "j")
    assert advice.value == 3 * HOUR
    assert "and minDuration 3 hours instead of 1 day" in advice.change
    assert advice.start == NOW


def test_no_advice_that_no_registered_slave_could_run():
    """Cluster 2 has no GPU model the job asks for: no cluster advice towards it, whatever the
    simulation would say (the submit check refuses such a request)."""
    job = queued("j", gpus=1, cluster_id=1, models=("V100",))
    snap = snapshot(
        slaves=[slave("v1", 1, gpus=1, model=V100), slave("a1", 2, gpus=1, model=A100)],
        running=[running("r", "v1", gpu_ids=(0,), max_s=DAY)],
        queued=[job],
    )
    kinds = [(kind, value) for kind, _, value, _ in _variants(snap, job, None)]
    assert ("cluster", 2) not in kinds
    assert ("gpu_model", A100) not in kinds  # not in its cluster either
