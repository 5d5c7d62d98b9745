"""Soft quota levels and borrowing (jobs/scheduler/quota_borrowing.py, the borrowing parts of
halts.py and quota_ledger.py): a job above a soft level starts only on room no in-limit job of
the cycle could use, marked borrowed, and borrowed jobs are the first halted for in-limit jobs."""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduler import run_cycle
from jobs.scheduler.model import HaltReason, QuotaLimit, SchedulerConfig
from jobs.scheduler.quota_ledger import QuotaLedger, scope_keys

from .builders import HOUR, NOW, ago, halted_ids, queued, running, slave, snapshot, started

SOFT_LINE = (
    "above the soft level of user alice: it holds 2 GPUs at once, soft level 2, this job needs "
    "1; may borrow idle GPUs"
)
ALICE = QuotaLimit(scope="user", user="alice", gpus=8, gpus_soft=2)


def _with(snap, *quotas):
    return replace(snap, quotas=tuple(quotas))


def lent(job_id: str, on: str, **kw):
    """A running job that started by borrowing."""
    return replace(running(job_id, on, **kw), borrowed=True)


def test_above_the_soft_level_a_job_borrows_an_idle_gpu_and_is_marked():
    held = running("r", "s1", user="alice", gpu_ids=(0, 1))
    job = queued("j", user="alice", gpus=1)
    inside = queued("b", user="bob", gpus=1)
    result = run_cycle(
        _with(snapshot(slaves=[slave("s1", gpus=4)], running=[held], queued=[job, inside]), ALICE)
    )
    starts = started(result)
    assert starts["j"].borrowed and not starts["b"].borrowed
    # The in-limit job was placed first, the borrower after it.
    assert [s.job_id for s in result.starts] == ["b", "j"]


def test_a_borrower_waits_when_an_in_limit_job_takes_the_room_and_says_why():
    held = running("r", "s1", user="alice", gpu_ids=(0, 1))
    # alice is lighter (first in fair-share order), yet bob's in-limit job gets the room.
    job = queued("j", user="alice", gpus=2)
    inside = queued("b", user="bob", gpus=2)
    snap = snapshot(
        slaves=[slave("s1", gpus=4)],
        running=[held],
        queued=[job, inside],
        usage={"alice": 0.0, "bob": 100 * HOUR},
    )
    result = run_cycle(_with(snap, ALICE))
    assert set(started(result)) == {"b"}
    lines = result.explanations["j"]
    assert lines[0] == (
        "above the soft level of user alice: it holds 2 GPUs at once, soft level 2, this job "
        "needs 2; may borrow idle GPUs"
    )
    assert len(lines) > 1  # then where it found no room
    # Without the soft level alice's job goes first (the room was the in-limit job's).
    plain = run_cycle(_with(snap, replace(ALICE, gpus_soft=None)))
    assert set(started(plain)) == {"j"}


def test_in_limit_jobs_halt_borrowed_jobs_first_and_hold_the_room_from_borrowers():
    # s1: a borrowed job (past minDuration) holds 6 of 8 GPUs; a heavy user's job runs on s2.
    borrowed = lent("l", "s1", user="alice", gpu_ids=tuple(range(6)), started=ago(2 * HOUR))
    heavy = running("h", "s2", user="heavy", gpu_ids=tuple(range(8)), started=ago(2 * HOUR))
    need = queued("j", user="bob", gpus=8)
    borrower = queued("k", user="alice", gpus=2)
    snap = snapshot(
        slaves=[slave("s1", gpus=8), slave("s2", gpus=8)],
        running=[borrowed, heavy],
        queued=[need, borrower],
        usage={"bob": 0.0, "heavy": 1000 * HOUR, "alice": 10 * HOUR},
    )
    result = run_cycle(_with(snap, ALICE))
    # The borrowed job goes, not the much heavier user's (whom fairness would also allow).
    assert halted_ids(result) == {"l"}
    assert result.halts[0].reason == HaltReason.SCORE
    assert result.explanations["j"] == ("waiting for 1 halted job(s) on s1 to free room",)
    # The 2 free GPUs of s1 are part of the room j waits for: the borrower may not take them.
    assert result.starts == ()
    assert result.explanations["k"][0].startswith("above the soft level of user alice")


def test_a_borrowed_job_younger_than_its_min_duration_is_not_halted():
    young = lent("l", "s1", user="alice", gpu_ids=(0, 1, 2, 3), started=ago(60), min_s=HOUR)
    need = queued("j", user="bob", gpus=4)
    config = SchedulerConfig(fairness_halts=False)
    result = run_cycle(
        _with(
            snapshot(slaves=[slave("s1", gpus=4)], running=[young], queued=[need], config=config),
            ALICE,
        )
    )
    assert result.halts == () and result.starts == ()
    old = replace(young, started_at=ago(2 * HOUR))
    result = run_cycle(
        _with(
            snapshot(slaves=[slave("s1", gpus=4)], running=[old], queued=[need], config=config),
            ALICE,
        )
    )
    assert halted_ids(result) == {"l"}


def test_a_borrower_never_halts_anything():
    other = running("o", "s1", user="heavy", gpu_ids=(0, 1, 2, 3), started=ago(2 * HOUR))
    job = queued("j", user="alice", gpus=1)
    result = run_cycle(
        _with(
            snapshot(
                slaves=[slave("s1", gpus=4)],
                running=[other, running("a", "s9", user="alice", gpu_ids=(0, 1))],
                queued=[job],
                usage={"heavy": 1000 * HOUR},
            ),
            ALICE,
        )
    )
    assert result.halts == () and result.starts == ()
    assert result.explanations["j"][0] == SOFT_LINE


def test_running_jobs_are_never_stopped_by_a_soft_level():
    held = running("r", "s1", user="alice", gpu_ids=(0, 1, 2))
    lowered = replace(ALICE, gpus_soft=0, jobs_soft=0, gpu_hours_soft=0.0)
    result = run_cycle(_with(snapshot(slaves=[slave("s1")], running=[held]), lowered))
    assert result.decisions == ()


def test_soft_budget_and_jobs_lines():
    nlp = QuotaLimit(
        scope="project", project="nlp", gpu_hours=100, gpu_hours_soft=90, used_gpu_s=85 * HOUR
    )
    job = queued("j", project="nlp", gpus=1, max_duration_s=8 * HOUR)
    ledger = QuotaLedger(NOW, [nlp], [])
    assert ledger.blocked(job) is None
    assert ledger.above_soft(job) == (
        "above the soft level of project nlp: 85 GPU-hours used this month, soft level 90, "
        "this job may use 8; may borrow idle GPUs"
    )
    assert ledger.above_soft(replace(job, max_duration_s=5 * HOUR)) is None
    team = QuotaLimit(scope="member", user="alice", project="nlp", jobs=3, jobs_soft=1)
    ledger = QuotaLedger(NOW, [team], [running("r", "s1", user="alice", project="nlp")])
    assert ledger.above_soft(replace(job, gpus=0)) == (
        "above the soft level of user alice in project nlp: it runs 1 jobs at once, soft level "
        "1; may borrow idle GPUs"
    )


def test_an_interactive_borrower_fails_with_the_soft_line_when_nothing_is_idle():
    full = running("o", "s1", user="bob", gpu_ids=(0, 1, 2, 3), started=ago(60), min_s=HOUR)
    job = queued("j", user="alice", gpus=1, interactive=True)
    result = run_cycle(
        _with(
            snapshot(
                slaves=[slave("s1", gpus=4)],
                running=[full, running("a", "s9", user="alice", gpu_ids=(0, 1))],
                queued=[job],
            ),
            ALICE,
        )
    )
    (fail,) = result.fails
    assert fail.reason.startswith("interactive job could not start at once: " + SOFT_LINE)


def test_a_gang_above_the_soft_level_borrows_whole():
    tasks = [
        queued(f"t{i}", user="alice", gpus=2, gang="g", gang_size=2, submitted=ago(HOUR))
        for i in range(2)
    ]
    result = run_cycle(_with(snapshot(slaves=[slave("s1", gpus=4)], queued=tasks), ALICE))
    starts = started(result)
    assert set(starts) == {"t0", "t1"} and all(s.borrowed for s in starts.values())
    # An in-limit job takes half the slave first: the gang waits whole, saying why first.
    inside = queued("b", user="bob", gpus=2, submitted=ago(60))
    result = run_cycle(
        _with(
            snapshot(slaves=[slave("s1", gpus=4)], queued=[*tasks, inside], usage={"bob": HOUR}),
            ALICE,
        )
    )
    assert set(started(result)) == {"b"}
    for task in ("t0", "t1"):
        first, second, *_ = result.explanations[task]
        assert first == (
            "above the soft level of user alice: it holds 0 GPUs at once, soft level 2, this job "
            "needs 4; may borrow idle GPUs"
        )
        assert second.startswith("gang of 2 tasks waits whole")


# --- properties -------------------------------------------------------------------------------

USERS = ("alice", "bob", "carol")
PROJECTS = ("nlp", "vision")


@st.composite
def soft_snapshots(draw):
    """One cluster, GPUs, CPUs and memory only (no reservations, private clusters, gangs or
    interactive jobs), fairness halts off: every halt is a borrowed job's."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    slaves = [
        slave(f"s{i}", gpus=rng.randint(1, 8), cpus=rng.randint(4, 16), memory=64)
        for i in range(rng.randint(1, 4))
    ]
    runs = []
    for host in slaves:
        gpus = list(range(len(host.gpus)))
        cpus = list(range(len(host.cpu_ids)))
        for n in range(rng.randint(0, 3)):
            take = min(len(gpus), rng.randint(0, 3))
            if not cpus:
                break
            runs.append(
                running(
                    f"r{host.name}{n}",
                    host.name,
                    user=rng.choice(USERS),
                    project=rng.choice(PROJECTS),
                    gpu_ids=tuple(gpus[:take]),
                    cpu_ids=(cpus[0],),
                    memory=4.0,
                    started=ago(rng.choice((60, 2 * HOUR))),
                    min_s=HOUR,
                    max_s=rng.randint(3, 30) * HOUR,
                )
            )
            if rng.random() < 0.5:
                runs[-1] = replace(runs[-1], borrowed=True)
            gpus, cpus = gpus[take:], cpus[1:]
    jobs = [
        queued(
            f"q{i:02d}",
            user=rng.choice(USERS),
            project=rng.choice(PROJECTS),
            gpus=rng.randint(0, 4),
            cpus=rng.randint(1, 3),
            memory=rng.choice((1.0, 8.0)),
            max_duration_s=rng.randint(1, 20) * HOUR,
            submitted=ago(rng.randint(1, 100) * 60),
        )
        for i in range(rng.randint(1, 12))
    ]
    quotas = []
    for scope, names in (("project", PROJECTS), ("user", USERS)):
        for name in names:
            if rng.random() < 0.7:
                hard_g = rng.choice((None, rng.randint(2, 12)))
                hard_h = rng.choice((None, float(rng.randint(20, 120))))
                quotas.append(
                    QuotaLimit(
                        scope=scope,
                        project=name if scope == "project" else "",
                        user=name if scope == "user" else "",
                        gpus=hard_g,
                        gpus_soft=rng.choice((None, rng.randint(0, hard_g or 6))),
                        jobs=rng.choice((None, 6)),
                        jobs_soft=rng.choice((None, rng.randint(0, 3))),
                        gpu_hours=hard_h,
                        gpu_hours_soft=rng.choice((None, float(rng.randint(0, int(hard_h or 60))))),
                        used_gpu_s=rng.randint(0, 20) * HOUR,
                    )
                )
    usage = {user: float(rng.randint(0, 50) * HOUR) for user in USERS}
    config = SchedulerConfig(fairness_halts=False)
    snap = snapshot(slaves=slaves, running=runs, queued=jobs, usage=usage, config=config)
    return _with(snap, *quotas)


def _free_after(snap, result):
    """Per slave: [GPUs, CPUs, memory] free after the cycle's starts, and what its borrowers
    took (so the room in-limit jobs saw is the sum of the two)."""
    free = {
        s.name: [len(s.gpus), len(s.cpu_ids), s.memory_gb] for s in snap.slaves
    }  # fmt: skip
    taken = {s.name: [0, 0, 0.0] for s in snap.slaves}
    for r in snap.running:
        free[r.slave][0] -= len(r.gpu_ids)
        free[r.slave][1] -= len(r.cpu_ids)
        free[r.slave][2] -= r.memory_gb
    by_id = {j.id: j for j in snap.queued}
    for start in result.starts:
        job = by_id[start.job_id]
        for room in (free[start.slave], *((taken[start.slave],) if start.borrowed else ())):
            sign = -1 if room is free[start.slave] else 1
            room[0] += sign * job.gpus
            room[1] += sign * job.cpus
            room[2] += sign * job.memory_gb
    return free, taken


def _fits(job, room):
    return job.gpus <= room[0] and job.cpus <= room[1] and job.memory_gb <= room[2] + 1e-9


def _waiting_for_room(snap, result):
    """In-limit queued jobs left waiting for room: not borrowers (their first line says so),
    not held by a hard level, not holding room behind halted jobs."""
    out = []
    for job in snap.queued:
        lines = result.explanations.get(job.id)
        if lines is None or lines[0].startswith(("above the soft level", "waiting for ")):
            continue
        if lines[0].startswith(("project ", "user ")):
            continue  # held by a hard level (its line names the scope)
        out.append(job)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(soft_snapshots())
def test_borrowing_properties(snap):
    result = run_cycle(snap)
    by_id = {j.id: j for j in snap.queued}
    # Replay the starts in decision order: an in-limit start is within every soft level when
    # it is decided, a borrowed one above some soft level, none over a hard one; every
    # in-limit start comes before every borrowed one.
    ledger = QuotaLedger.of(snap)
    seen_borrowed = False
    for start in result.starts:
        job = by_id[start.job_id]
        assert ledger.blocked(job) is None
        if start.borrowed:
            seen_borrowed = True
            assert ledger.above_soft(job) is not None
        else:
            assert not seen_borrowed
            assert ledger.above_soft(job) is None
        ledger.record_start(job)
    # Only borrowed jobs past their minDuration are ever halted (fairness halts are off).
    running_by_id = {r.id: r for r in snap.running}
    for halt in result.halts:
        victim = running_by_id[halt.job_id]
        assert victim.borrowed
        assert (NOW - victim.started_at).total_seconds() >= victim.min_duration_s
    free, taken = _free_after(snap, result)
    waiting = _waiting_for_room(snap, result)
    halted = halted_ids(result)
    for job in waiting:
        for name, room in free.items():
            # A borrower never starts while an in-limit job that fits that slave waits.
            seen = [room[i] + taken[name][i] for i in range(3)]
            assert not _fits(job, seen), (job.id, name)
            # An in-limit job never waits while borrowed jobs past their minDuration hold
            # room it could use.
            lendable = [
                r
                for r in snap.running
                if r.slave == name
                and r.borrowed
                and r.id not in halted
                and (NOW - r.started_at).total_seconds() >= r.min_duration_s
            ]
            behind = [
                seen[0] + sum(len(r.gpu_ids) for r in lendable),
                seen[1] + sum(len(r.cpu_ids) for r in lendable),
                seen[2] + sum(r.memory_gb for r in lendable),
            ]
            assert not _fits(job, behind), (job.id, name)
    # A borrower left waiting says so first.
    for job in snap.queued:
        lines = result.explanations.get(job.id)
        if lines and lines[0].startswith("above the soft level of "):
            assert lines[0].endswith("; may borrow idle GPUs")
            assert job.id not in {s.job_id for s in result.starts}


@settings(max_examples=60, deadline=None)
@given(soft_snapshots())
def test_without_soft_levels_nothing_is_borrowed_nor_halted(snap):
    """Soft levels and borrowed marks are all the borrowing reads: without them no start is
    borrowed and (fairness halts off) nothing is halted; the cycle stays deterministic."""
    hard_only = replace(
        snap,
        quotas=tuple(
            replace(q, gpus_soft=None, jobs_soft=None, gpu_hours_soft=None) for q in snap.quotas
        ),
        running=tuple(replace(r, borrowed=False) for r in snap.running),
    )
    result = run_cycle(hard_only)
    assert not any(s.borrowed for s in result.starts)
    assert result.halts == ()
    assert run_cycle(snap) == run_cycle(snap)


def test_scope_keys_cover_what_the_properties_assume():
    assert ("member", "alice", "nlp") in scope_keys("alice", "nlp")
