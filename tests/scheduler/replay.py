"""Replays a recorded week of jobs (tests/fixtures/week_of_jobs.json) through the pure scheduler
and measures how far each queued job's first start estimate was from its real start.

No database: the week's jobs are submitted at their recorded times, every cycle is the
scheduler's own ``run_cycle``, and a started job ends after its recorded run time (a halted
one after the halt grace period). Each job is estimated once, at its submission (the portal
keeps a job's first estimate as made); its error is ``real start - estimate``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from jobs.scheduler import (
    GpuInfo,
    QueuedJob,
    RunningJob,
    SchedulerConfig,
    SlaveState,
    Snapshot,
    run_cycle,
)
from jobs.scheduler.estimate import estimate, estimate_range
from jobs.scheduler.model import Cancel, Fail, Halt, Start
from jobs.scheduler.runtimes import history_from_runs, history_keys
from jobs.scheduler.usage import accrue, usage_rate

WEEK_OF_JOBS = Path(__file__).parent.parent / "fixtures" / "week_of_jobs.json"
HALT_LEAVE_S = 20  # a halted job leaves after the halt grace period (15 s) and a tick


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Run:
    """A job that ended during the replay: what the portal knows of it afterwards."""

    job: dict
    started: datetime
    ended: datetime

    @property
    def seconds(self) -> int:
        return int((self.ended - self.started).total_seconds())


# (snapshot at the submission, the job's id, the runs that ended before) -> (estimate, range)
Estimator = Callable[[Snapshot, str, list[Run]], tuple[datetime | None, tuple | None]]


@dataclass
class Outcome:
    submitted: dict[str, datetime] = field(default_factory=dict)
    estimated: dict[str, datetime | None] = field(default_factory=dict)
    ranges: dict[str, tuple | None] = field(default_factory=dict)
    started: dict[str, datetime] = field(default_factory=dict)

    def waited(self) -> list[str]:
        """Jobs that did not start in the cycle of their submission."""
        return [j for j, t in self.started.items() if t > self.submitted[j]]

    def errors(self, jobs: list[str]) -> list[float]:
        """|real start - estimate| in seconds, for the jobs that got an estimate."""
        return sorted(
            abs((self.started[j] - est).total_seconds())
            for j in jobs
            if (est := self.estimated.get(j)) is not None
        )

    def summary(self) -> dict:
        waited = self.waited()
        errors = self.errors(waited)
        late = [
            (self.started[j] - est).total_seconds()
            for j in waited
            if (est := self.estimated.get(j)) is not None
        ]
        in_range = [
            rng[0] <= self.started[j] <= rng[1]
            for j in waited
            if (rng := self.ranges.get(j)) is not None and None not in rng
        ]
        return {
            "jobs": len(self.started),
            "waited": len(waited),
            "estimated": len(errors),
            "p50_error_s": round(percentile(errors, 0.5)) if errors else None,
            "p90_error_s": round(percentile(errors, 0.9)) if errors else None,
            # > 0: the job started after its estimate (the estimate was early)
            "median_signed_s": round(statistics.median(late)) if late else None,
            "in_range": round(sum(in_range) / len(in_range), 2) if in_range else None,
        }


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile (the one jobs/submit/estimates.py publishes)."""
    rank = max(1, -(-len(ordered) * q // 1))
    return ordered[int(rank) - 1]


def load_week() -> dict:
    return json.loads(WEEK_OF_JOBS.read_text())


def slave_states(week: dict) -> tuple[SlaveState, ...]:
    return tuple(
        SlaveState(
            name=s["name"],
            cluster_id=s["cluster"],
            gpus=tuple(GpuInfo(i, "Tesla V100-PCIE-32GB", 32000) for i in range(s["gpus"])),
            cpu_ids=tuple(range(s["cpus"])),
            memory_gb=float(s["memory_gb"]),
            cuda_major=12,
        )
        for s in week["slaves"]
    )


def queued_job(job: dict) -> QueuedJob:
    return QueuedJob(
        id=job["id"],
        user=job["user"],
        project=job["project"],
        submitted_at=parse_time(job["submitted"]),
        gpus=job["gpus"],
        cpus=job["cpus"],
        memory_gb=float(job["memory_gb"]),
        min_duration_s=job["min_duration_s"],
        max_duration_s=job["max_duration_s"],
    )


def replay(
    week: dict,
    estimator: Estimator,
    *,
    config: SchedulerConfig | None = None,
    limit: int | None = None,
) -> Outcome:
    """Run the week; ``estimator`` is asked once per job, at its submission."""
    config = config or SchedulerConfig()
    slaves = slave_states(week)
    todo = list(week["jobs"])[:limit]
    by_id = {job["id"]: job for job in todo}
    outcome = Outcome()
    queued: dict[str, QueuedJob] = {}
    running: dict[str, RunningJob] = {}
    ends: dict[str, datetime] = {}
    runs: list[Run] = []
    usage: dict[str, float] = {}
    wakeup: datetime | None = None
    last = parse_time(todo[0]["submitted"])
    position = 0
    while position < len(todo) or queued or running:
        moments = [t for t in ends.values()]
        if position < len(todo):
            moments.append(parse_time(todo[position]["submitted"]))
        if wakeup is not None:
            moments.append(wakeup)
        now = max(last, min(moments))
        # Usage accrues for what ran since the last moment (as the tick does).
        elapsed = (now - last).total_seconds()
        usage = {user: accrue(v, elapsed, rate=0.0, half_life_s=config.usage_half_life_s)
                 for user, v in usage.items()}  # fmt: skip
        for job in running.values():
            end = min(now, ends[job.id])
            ran = (end - max(last, job.started_at)).total_seconds()
            rate = usage_rate(
                gpus=len(job.gpu_ids), cpus=len(job.cpu_ids), memory_gb=job.memory_gb,
                config=config,
            )  # fmt: skip
            usage[job.user] = usage.get(job.user, 0.0) + accrue(
                0.0, ran, rate=rate, half_life_s=config.usage_half_life_s
            )
        last = now
        for job_id in [j for j, t in ends.items() if t <= now]:
            job = running.pop(job_id)
            runs.append(Run(by_id[job_id], job.started_at, ends.pop(job_id)))
        new = []
        while position < len(todo) and parse_time(todo[position]["submitted"]) <= now:
            job = todo[position]
            position += 1
            queued[job["id"]] = queued_job(job)
            outcome.submitted[job["id"]] = queued[job["id"]].submitted_at
            new.append(job["id"])
        snapshot = Snapshot(
            now=now,
            slaves=slaves,
            running=tuple(running.values()),
            queued=tuple(queued.values()),
            usage=dict(usage),
            config=config,
        )
        for job_id in new:
            outcome.estimated[job_id], outcome.ranges[job_id] = estimator(
                snapshot, job_id, list(runs)
            )
        result = run_cycle(snapshot)
        wakeup = result.next_wakeup
        for decision in result.decisions:
            if isinstance(decision, Start):
                job = queued.pop(decision.job_id)
                record = by_id[job.id]
                running[job.id] = RunningJob(
                    id=job.id,
                    user=job.user,
                    project=job.project,
                    slave=decision.slave,
                    gpu_ids=decision.gpu_ids,
                    cpu_ids=decision.cpu_ids,
                    memory_gb=job.memory_gb,
                    started_at=now,
                    min_duration_s=job.min_duration_s,
                    max_duration_s=job.max_duration_s,
                )
                ends[job.id] = now + timedelta(seconds=record["runtime_s"])
                outcome.started[job.id] = now
            elif isinstance(decision, Halt):
                running[decision.job_id] = replace(running[decision.job_id], halting=True)
                ends[decision.job_id] = min(
                    ends[decision.job_id], now + timedelta(seconds=HALT_LEAVE_S)
                )
            elif isinstance(decision, Cancel):
                ends[decision.job_id] = now
            elif isinstance(decision, Fail):
                queued.pop(decision.job_id, None)
        if wakeup is not None and wakeup <= now:
            wakeup = None
    return outcome


def keys_of(job: dict) -> tuple:
    return history_keys(user=job["user"], name=job["name"], image=job["image"])


def with_history(snapshot: Snapshot, runs: list[Run], jobs: dict[str, dict]) -> Snapshot:
    """The snapshot with the run times the portal knows at its moment (as the bridge reads
    them: the runs that ended, latest first) and the keys of its jobs."""
    ended = sorted(runs, key=lambda run: run.ended, reverse=True)
    ids = [job.id for job in snapshot.running] + [job.id for job in snapshot.queued]
    history = history_from_runs(
        ((keys_of(run.job), run.seconds) for run in ended),
        {job_id: keys_of(jobs[job_id]) for job_id in ids},
    )
    return replace(snapshot, history=history)


def estimator_before(snapshot: Snapshot, job_id: str, runs: list[Run]):
    """Every job assumed to run to its maxDuration (the estimate before issue 26 item 6)."""
    return estimate(snapshot, job_id).start, None


def estimator_after(jobs: dict[str, dict]) -> Estimator:
    """Run times from the history of the runs that ended before the estimate was made."""

    def made(snapshot: Snapshot, job_id: str, runs: list[Run]):
        found = estimate_range(with_history(snapshot, runs, jobs), job_id)
        return found.start, (found.earliest, found.latest)

    return made
