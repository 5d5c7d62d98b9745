"""Quotas: the JOB stage of the pipeline (jobs/scheduler/filters.py QUOTA, quota_ledger.py)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduler import run_cycle
from jobs.scheduler.filters import QUOTA, Stage
from jobs.scheduler.model import QuotaLimit
from jobs.scheduler.pipeline import PIPELINE
from jobs.scheduler.quota_ledger import quota_impossible, scope_keys

from .builders import HOUR, NOW, queued, running, slave, snapshot, started

SLAVES = [slave("s1", gpus=8, cpus=32, memory=256), slave("s2", gpus=8, cpus=32, memory=256)]
DECEMBER = datetime(2026, 12, 1, tzinfo=UTC)


def _with(snap, *quotas):
    return replace(snap, quotas=tuple(quotas))


def test_the_quota_filter_is_the_first_of_the_pipeline_and_asked_per_job():
    assert PIPELINE[0] is QUOTA and QUOTA.stage == Stage.JOB
    assert all(f.stage > Stage.JOB for f in PIPELINE[1:])


def test_gpu_hours_budget_line_names_limit_usage_job_and_renewal():
    """The issue's example, word for word."""
    nlp = QuotaLimit(
        scope="project",
        project="nlp",
        gpu_hours=100,
        used_gpu_s=96.4 * HOUR,
        renews_at=DECEMBER,
    )
    job = queued("j", project="nlp", gpus=1, max_duration_s=8 * HOUR)
    result = run_cycle(_with(snapshot(slaves=SLAVES, queued=[job]), nlp))
    assert result.starts == ()
    assert result.explanations["j"] == (
        "project nlp has used 96.4 of 100 GPU-hours this month; this job may run up to 8 h on "
        "1 GPU; the budget renews on 1 December",
    )
    # A shorter job fits the 3.6 GPU-hours left.
    short = replace(job, max_duration_s=3 * HOUR)
    assert "j" in started(run_cycle(_with(snapshot(slaves=SLAVES, queued=[short]), nlp)))


def test_running_jobs_count_what_they_may_still_use():
    nlp = QuotaLimit(scope="project", project="nlp", gpu_hours=100, used_gpu_s=50 * HOUR)
    # Two GPUs running with 20 h of maxDuration left: 40 GPU-hours committed, 10 left.
    run = running("r", "s1", project="nlp", gpu_ids=(0, 1), started=NOW, max_s=20 * HOUR)
    job = queued("j", project="nlp", gpus=1, max_duration_s=12 * HOUR)
    result = run_cycle(_with(snapshot(slaves=SLAVES, running=[run], queued=[job]), nlp))
    assert result.explanations["j"] == (
        "project nlp has used 50 of 100 GPU-hours this month and its running jobs may use 40 "
        "more; this job may run up to 12 h on 1 GPU",
    )
    ok = replace(job, max_duration_s=10 * HOUR)
    assert "j" in started(
        run_cycle(_with(snapshot(slaves=SLAVES, running=[run], queued=[ok]), nlp))
    )


def test_gpus_at_once_per_user_counts_starts_of_the_cycle():
    alice = QuotaLimit(scope="user", user="alice", gpus=3)
    jobs = [queued(f"j{i}", user="alice", gpus=2) for i in range(3)]
    other = queued("b", user="bob", gpus=2)
    result = run_cycle(_with(snapshot(slaves=SLAVES, queued=[*jobs, other]), alice))
    assert set(started(result)) == {"j0", "b"}
    assert result.explanations["j1"] == (
        "user alice holds 2 of its 3 GPUs at once; this job needs 2; GPUs free up as its "
        "running jobs end",
    )


def test_jobs_at_once_for_a_user_within_a_project():
    member = QuotaLimit(scope="member", user="alice", project="nlp", jobs=1)
    run = running("r", "s1", user="alice", project="nlp", gpu_ids=(0,))
    in_nlp = queued("a", user="alice", project="nlp")
    elsewhere = queued("b", user="alice", project="vision")
    result = run_cycle(
        _with(snapshot(slaves=SLAVES, running=[run], queued=[in_nlp, elsewhere]), member)
    )
    assert set(started(result)) == {"b"}
    assert result.explanations["a"] == (
        "user alice in project nlp runs 1 of its 1 jobs at once; this job starts when one of "
        "them ends",
    )


def test_a_running_job_over_a_lowered_limit_is_never_stopped():
    alice = QuotaLimit(scope="user", user="alice", gpus=1)
    run = running("r", "s1", user="alice", gpu_ids=(0, 1, 2))
    result = run_cycle(_with(snapshot(slaves=SLAVES, running=[run], queued=[]), alice))
    assert result.decisions == ()


def test_impossible_at_submit():
    limits = [
        QuotaLimit(scope="project", project="nlp", gpus=2),
        QuotaLimit(scope="user", user="alice", gpu_hours=10),
    ]
    assert quota_impossible(queued("j", project="nlp", gpus=4, max_duration_s=HOUR), limits) == (
        "project nlp may hold at most 2 GPUs at once, this job asks for 4"
    )
    assert quota_impossible(queued("j", gpus=1, max_duration_s=11 * HOUR), limits) == (
        "user alice has 10 GPU-hours a month; this job may use 11 (11 h maxDuration): ask for "
        "less time or fewer resources"
    )
    assert quota_impossible(queued("j", gpus=1, max_duration_s=10 * HOUR), limits) is None


# --- properties -------------------------------------------------------------------------------

USERS = ("alice", "bob", "carol")
PROJECTS = ("nlp", "vision")


@st.composite
def limited_snapshots(draw):
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    slaves = [slave(f"s{i}", gpus=rng.randint(1, 8), cpus=32, memory=256) for i in range(3)]
    runs = []
    for i in range(rng.randint(0, 4)):
        host = slaves[i % len(slaves)]
        gpus = tuple(range(min(len(host.gpus), rng.randint(0, 2))))
        if any(r.slave == host.name for r in runs):
            continue
        runs.append(
            running(
                f"r{i}",
                host.name,
                user=rng.choice(USERS),
                project=rng.choice(PROJECTS),
                gpu_ids=gpus,
                started=NOW,
                max_s=rng.randint(1, 30) * HOUR,
            )
        )
    jobs = [
        queued(
            f"q{i}",
            user=rng.choice(USERS),
            project=rng.choice(PROJECTS),
            gpus=rng.randint(0, 3),
            max_duration_s=rng.randint(1, 30) * HOUR,
        )
        for i in range(rng.randint(1, 12))
    ]
    quotas = []
    for scope, names in (("project", PROJECTS), ("user", USERS)):
        for name in names:
            if rng.random() < 0.6:
                quotas.append(
                    QuotaLimit(
                        scope=scope,
                        project=name if scope == "project" else "",
                        user=name if scope == "user" else "",
                        gpus=rng.choice((None, rng.randint(0, 6))),
                        jobs=rng.choice((None, rng.randint(0, 4))),
                        gpu_hours=rng.choice((None, float(rng.randint(0, 80)))),
                        used_gpu_s=rng.randint(0, 40) * HOUR,
                    )
                )
    return _with(snapshot(slaves=slaves, running=runs, queued=jobs), *quotas)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limited_snapshots())
def test_no_start_takes_a_scope_over_a_hard_limit(snap):
    result = run_cycle(snap)
    by_id = {j.id: j for j in snap.queued}
    starts = [by_id[s.job_id] for s in result.starts]
    for limit in snap.quotas:
        mine = [j for j in starts if limit.key in scope_keys(j.user, j.project)]
        if not mine:
            continue
        holders = [r for r in snap.running if limit.key in scope_keys(r.user, r.project)]
        if limit.gpus is not None:
            held = sum(len(r.gpu_ids) for r in holders)
            added = sum(j.gpus for j in mine)
            if added:  # jobs without GPUs hold none
                assert held + added <= limit.gpus
        if limit.jobs is not None:
            assert len(holders) + len(mine) <= limit.jobs
        if limit.gpu_hours is not None:
            committed = sum(len(r.gpu_ids) * r.max_duration_s for r in holders)
            need = sum(j.gpus * j.max_duration_s for j in mine)
            if need:  # jobs without GPUs use no GPU-hours
                assert limit.used_gpu_s + committed + need <= limit.gpu_hours * HOUR + 1e-6
    # Every job a quota holds back says which limit.
    for job in snap.queued:
        lines = result.explanations.get(job.id, ())
        if any(" of its " in line or "GPU-hours this month" in line for line in lines):
            assert len(lines) == 1


@settings(max_examples=60, deadline=None)
@given(limited_snapshots())
def test_quotas_are_deterministic_and_do_nothing_when_absent(snap):
    assert run_cycle(snap) == run_cycle(snap)
    unlimited = replace(snap, quotas=())
    relaxed = replace(
        snap, quotas=tuple(replace(q, gpus=None, jobs=None, gpu_hours=None) for q in snap.quotas)
    )
    assert run_cycle(relaxed).decisions == run_cycle(unlimited).decisions
