"""Start estimates and what-if advice with quotas (issue 29 item 3): a job held back by a limit
gets the limit's line and a start the limit allows; the advice proposes a shape within it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from jobs.scheduler.estimate import advise, budget_fit_s, estimate, holding_quota
from jobs.scheduler.model import QuotaLimit

from .builders import HOUR, NOW, later, queued, running, slave, snapshot

SLAVES = [slave("s1", gpus=8, cpus=32, memory=256)]
JULY = datetime(2026, 7, 1, tzinfo=UTC)  # NOW is 1 June 2026: the budgets renew then
NLP_LINE = (
    "project nlp has used 96.4 of 100 GPU-hours this month; this job may run up to 8 h on "
    "1 GPU; the budget renews on 1 July"
)


def _nlp(**kw) -> QuotaLimit:
    return QuotaLimit(scope="project", project="nlp", renews_at=JULY, **kw)


def _snap(*quotas, running_jobs=(), queued_jobs=()):
    snap = snapshot(slaves=SLAVES, running=running_jobs, queued=queued_jobs)
    return replace(snap, quotas=tuple(quotas))


def test_a_budget_held_job_gets_the_quota_line_and_starts_when_the_budget_renews():
    job = queued("j", project="nlp", gpus=1, max_duration_s=8 * HOUR)
    snap = _snap(_nlp(gpu_hours=100, used_gpu_s=96.4 * HOUR), queued_jobs=[job])
    found = estimate(snap, "j")
    assert found.quota == NLP_LINE
    # Free GPUs all along: without the limit it would start now.
    assert found.start == JULY
    free = estimate(replace(snap, quotas=()), "j")
    assert free.start == NOW and free.quota is None


def test_what_running_jobs_hold_adds_to_the_usage_as_the_simulation_goes_on():
    """2 GPUs for 4 h commit 8 of 10 GPU-hours: when they end, the 8 are used, not freed, so
    a job of 4 GPU-hours still waits for the renewal (not for the end of the running job)."""
    busy = running("r", "s1", project="nlp", gpu_ids=(0, 1), started=NOW, max_s=4 * HOUR)
    job = queued("j", project="nlp", gpus=1, max_duration_s=4 * HOUR)
    snap = _snap(_nlp(gpu_hours=10), running_jobs=[busy], queued_jobs=[job])
    found = estimate(snap, "j")
    assert found.quota is not None and "running jobs may use 8 more" in found.quota
    assert found.start == JULY
    # 2 GPU-hours fit beside the 8 the running job may use: now.
    short = replace(job, max_duration_s=2 * HOUR)
    assert estimate(replace(snap, queued=(short,)), "j").start == NOW


def test_a_gpus_at_once_limit_frees_up_as_the_scopes_running_jobs_end():
    alice = QuotaLimit(scope="user", user="alice", gpus=2)
    mine = running("r", "s1", user="alice", gpu_ids=(0, 1), started=NOW, max_s=2 * HOUR)
    job = queued("j", user="alice", gpus=1)
    found = estimate(_snap(alice, running_jobs=[mine], queued_jobs=[job]), "j")
    assert found.quota == (
        "user alice holds 2 of its 2 GPUs at once; this job needs 1; GPUs free up as its "
        "running jobs end"
    )
    assert found.start == later(2 * HOUR)


def test_advice_proposes_the_max_duration_that_fits_the_budget():
    job = queued("j", project="nlp", gpus=1, max_duration_s=8 * HOUR, min_duration_s=HOUR)
    snap = _snap(_nlp(gpu_hours=100, used_gpu_s=96.4 * HOUR), queued_jobs=[job])
    assert budget_fit_s(snap, job) == (3 * HOUR, snap.quotas[0], "GPU-hours")
    advice = advise(snap, "j")
    assert [(a.kind, a.value, a.start) for a in advice] == [("max_duration", 3 * HOUR, NOW)]
    assert advice[0].change == (
        "maxDuration 3 hours instead of 8 hours (fits the GPU-hours budget of project nlp)"
    )


def test_advice_lowers_min_duration_with_a_budget_fitting_max_duration():
    job = queued("j", project="nlp", gpus=1, max_duration_s=8 * HOUR, min_duration_s=5 * HOUR)
    snap = _snap(_nlp(gpu_hours=100, used_gpu_s=96.4 * HOUR), queued_jobs=[job])
    (advice,) = advise(snap, "j")
    assert "and minDuration 3 hours instead of 5 hours" in advice.change


def test_advice_with_fewer_gpus_says_it_is_within_the_limit():
    alice = QuotaLimit(scope="user", user="alice", gpus=2)
    mine = running("r", "s1", user="alice", gpu_ids=(0,), started=NOW, max_s=10 * HOUR)
    job = queued("j", user="alice", gpus=2)
    snap = _snap(alice, running_jobs=[mine], queued_jobs=[job])
    assert holding_quota(snap, job) == alice
    gpus = [a for a in advise(snap, "j") if a.kind == "gpus"]
    assert [(a.change, a.start, a.value) for a in gpus] == [
        ("1 GPU instead of 2 (within the limits of user alice)", NOW, 1)
    ]


def test_no_budget_advice_when_no_shape_fits_or_nothing_holds_the_job():
    # Used up: not even ten minutes fit.
    job = queued("j", project="nlp", gpus=1, max_duration_s=8 * HOUR)
    spent = _snap(_nlp(gpu_hours=100, used_gpu_s=100 * HOUR), queued_jobs=[job])
    assert budget_fit_s(spent, job) == (0, spent.quotas[0], "GPU-hours")
    assert [a for a in advise(spent, "j") if a.kind == "max_duration"] == []
    # Room enough: the job starts now and needs no advice.
    roomy = _snap(_nlp(gpu_hours=100), queued_jobs=[job])
    assert budget_fit_s(roomy, job) is None
    assert estimate(roomy, "j").quota is None and advise(roomy, "j") == []
