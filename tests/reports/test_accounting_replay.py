"""Accounting that adds up (issue 29 item 5): a month of jobs replayed with fixed times, with the
scheduler's fair-share accrual run as ticks would run it, and three readings compared to the
second: fair share's accrued seconds, the quota usage of the month (what limits read) and the
report's CSV export. A hand count of each run's seconds is the fourth, independent, witness.

The month is October 2026 (UTC). The replay has a run crossing each edge of it, a restart after
a halt (MUSTHALT, then a row of its own), a gang of two tasks, an array of three short runs
between two ticks, a run cancelled while running, one cancelled before it started, one that
failed without a recorded container end, a run later deleted, a borrowed run, and an 8-day run
across many ticks.
"""

import csv
import io
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from gangs.models import JobGang
from jobs.models import Job
from jobs.scheduler_bridge.quota_usage import quota_limits, runs_overlapping, usage_by_scope
from jobs.scheduler_bridge.snapshot import running_rows, scheduler_config
from jobs.scheduler_bridge.usage import usage_accrue
from quotas.models import Quota
from reports.accounting import usage_report
from reports.periods import month_period
from tests.web.factories import make_job

T0 = datetime(2026, 10, 1, tzinfo=UTC)
T1 = datetime(2026, 11, 1, tzinfo=UTC)
END = datetime(2026, 11, 2, 12, tzinfo=UTC)
WEIGHTS = {"gpu": 1.0, "cpu": 0.5, "mem_gb": 0.25}


def at(day, hour=0, minute=0, second=0, month=10):
    return datetime(2026, month, day, hour, minute, second, tzinfo=UTC)


@dataclass
class Run:
    """One Job row: its status moves at ``events``; its container ran [started, ended)."""

    key: str
    owner: str
    project: str
    gpus: int
    events: list  # [(time, status)], the first one QUEUED at its creation
    started: datetime | None = None
    ended: datetime | None = None  # the container's finish time (None: never recorded)
    cpus: int = 2
    memory: int = 4
    tmpfs: int = 0
    extra: dict = field(default_factory=dict)

    def state(self, t: datetime) -> dict:
        past = [(when, status) for when, status in self.events if when <= t] or self.events[:1]
        when, status = past[-1]
        final = status in ("FINISHED", "FAILED", "CANCELLED", "HALTED", "DELETED")
        return {
            "status": status,
            "status_updated": when,
            "started_at": self.started if self.started and self.started <= t else None,
            "ended_at": self.ended if final else None,
        }

    def seconds_in(self, start: datetime, end: datetime) -> float:
        """The hand count: the run's container time inside [start, end)."""
        if self.started is None:
            return 0.0
        stop = self.ended or self.events[-1][0]
        return max(0.0, (min(stop, end) - max(self.started, start)).total_seconds())


def month_of_runs() -> list[Run]:
    q = "QUEUED"
    return [
        Run("edge-start", "alice", "vision", 1, [(at(30, 22, month=9), q), (at(30, 23, month=9), "RUNNING"), (at(1, 1, 0, 2), "FINISHED")],
            started=at(30, 23, month=9), ended=at(1, 1)),
        Run("plain", "alice", "vision", 2, [(at(2, 7), q), (at(2, 7, 59, 50), "ASSIGNED"), (at(2, 8), "RUNNING"), (at(2, 10, 30, 19), "FINISHED")],
            started=at(2, 8), ended=at(2, 10, 30, 17), cpus=4, memory=8, tmpfs=2),
        Run("halted", "bob", "speech", 1, [(at(2, 23), q), (at(3), "RUNNING"), (at(3, 5), "MUSTHALT"), (at(3, 5, 2, 14), "HALTED")],
            started=at(3), ended=at(3, 5, 2, 13)),
        Run("restart", "bob", "speech", 1, [(at(3, 5, 2, 14), q), (at(3, 7), "RUNNING"), (at(3, 9, 15, 44), "FINISHED")],
            started=at(3, 7), ended=at(3, 9, 15, 42), extra={"restart_of": "halted", "restart_count": 1}),
        Run("gang-0", "alice", "vision", 2, [(at(5, 11), q), (at(5, 12), "RUNNING"), (at(5, 14, 0, 7), "FINISHED")],
            started=at(5, 12), ended=at(5, 14, 0, 5), extra={"gang": True, "task_index": 0}),
        Run("gang-1", "alice", "vision", 2, [(at(5, 11), q), (at(5, 12), "RUNNING"), (at(5, 14, 0, 11), "FINISHED")],
            started=at(5, 12), ended=at(5, 14, 0, 9), extra={"gang": True, "task_index": 1}),
        Run("array-0", "bob", "speech", 1, [(at(6, 10), q), (at(6, 10, 0, 1), "RUNNING"), (at(6, 10, 0, 22), "FINISHED")],
            started=at(6, 10, 0, 1), ended=at(6, 10, 0, 21), extra={"array": True}),
        Run("array-1", "bob", "speech", 1, [(at(6, 10), q), (at(6, 10, 0, 2), "RUNNING"), (at(6, 10, 0, 48), "FAILED")],
            started=at(6, 10, 0, 2), ended=at(6, 10, 0, 47), extra={"array": True}),
        Run("array-2", "bob", "speech", 1, [(at(6, 10), q), (at(6, 10, 0, 3), "RUNNING"), (at(6, 10, 0, 11), "FINISHED")],
            started=at(6, 10, 0, 3), ended=at(6, 10, 0, 10), extra={"array": True}),
        Run("cancelled-running", "alice", "vision", 1, [(at(7, 23), q), (at(8), "RUNNING"), (at(8, 3), "CANCELLING"), (at(8, 3, 0, 31), "CANCELLED")],
            started=at(8), ended=at(8, 3, 0, 30)),
        Run("cancelled-queued", "alice", "vision", 1, [(at(9), q), (at(9, 2), "CANCELLED")]),
        Run("failed-no-end", "bob", "speech", 1, [(at(9, 23), q), (at(10), "RUNNING"), (at(10, 0, 0, 12), "FAILED")],
            started=at(10)),
        Run("long", "carol", "vision", 1, [(at(11, 23), q), (at(12), "RUNNING"), (at(20, 0, 0, 33), "FINISHED")],
            started=at(12), ended=at(20, 0, 0, 30), cpus=8, memory=32),
        Run("deleted", "alice", "vision", 1, [(at(14, 9), q), (at(14, 10), "RUNNING"), (at(14, 11, 0, 2), "FINISHED"), (at(15), "DELETED")],
            started=at(14, 10), ended=at(14, 11)),
        Run("borrowed", "bob", "speech", 2, [(at(16, 1), q), (at(16, 2), "RUNNING"), (at(16, 4, 30, 2), "FINISHED")],
            started=at(16, 2), ended=at(16, 4, 30), extra={"borrowed": True}),
        Run("edge-end", "carol", "vision", 4, [(at(31, 21), q), (at(31, 22), "RUNNING"), (at(1, 2, 0, 3, month=11), "FINISHED")],
            started=at(31, 22), ended=at(1, 2, month=11)),
    ]  # fmt: skip


@pytest.fixture
def replay(settings, make_user, slave):
    from accounts.models import Membership, Project

    settings.PORTAL_USAGE_WEIGHTS = WEIGHTS
    settings.PORTAL_USAGE_HALF_LIFE_S = 1e14  # no decay to speak of: usage is plain seconds
    users = {name: make_user(name) for name in ("alice", "bob", "carol")}
    projects = {
        "vision": Project.objects.create(name="vision", gid=6001),
        "speech": Project.objects.create(name="speech", gid=6002),
    }
    for user, project in (("alice", "vision"), ("carol", "vision"), ("bob", "speech")):
        Membership.objects.create(user=users[user], project=projects[project])
    gang = JobGang.objects.create(
        name="gang", owner=users["alice"], project=projects["vision"], config={},
        status="FINISHED", created=at(5, 11), status_updated=at(5, 14, 0, 11),
    )  # fmt: skip
    array_id = uuid.uuid4()
    runs = month_of_runs()
    rows: dict[str, Job] = {}
    for run in runs:
        extra = dict(run.extra)
        if extra.pop("gang", False):
            extra.update(gang=gang, task_role="worker", gang_attempt=1)
        if extra.pop("array", False):
            extra["array_id"] = array_id
        if "restart_of" in extra:
            extra["restart_of"] = rows[extra["restart_of"]]
        job = make_job(
            owner=users[run.owner],
            project=projects[run.project],
            status="QUEUED",
            slave=slave,
            gpus=run.gpus,
            created=run.events[0][0],
            name=run.key,
            **extra,
        )
        Job.objects.filter(pk=job.pk).update(
            slave=slave, cpus=run.cpus, cpu_memory_gb=run.memory, tmpfs_gb=run.tmpfs, **run.state(T0 - timedelta(days=9))
        )  # fmt: skip
        rows[run.key] = job

    # Ticks every 12 hours from before the first run to after the last, the month's two edges
    # among them; no tick falls between a container's end and its recorded end.
    ticks = [at(29, month=9) + timedelta(hours=12 * i) for i in range(2 * 35)]
    ticks = [t for t in ticks if t <= END]
    assert T0 in ticks and T1 in ticks and END in ticks
    config, states, fair = scheduler_config(), {}, {}
    for t in ticks:
        for run in runs:
            state = run.state(t)
            if states.get(run.key) != state:
                Job.objects.filter(pk=rows[run.key].pk).update(**state)
                states[run.key] = state
        fair[t] = usage_accrue(now=t, running=running_rows(), config=config)
        if t == T1:
            # What the limits read in the month's last instant: the snapshot's QuotaLimit.
            Quota.objects.create(project=projects["vision"], gpu_hours_hard=1e6)
            Quota.objects.create(user=users["bob"], gpu_hours_hard=1e6)
            limits = quota_limits(now=T1 - timedelta(microseconds=1), projects=["vision", "speech"], users=["alice", "bob", "carol"])  # fmt: skip
            fair["limits"] = {(q.scope, q.project or q.user): q for q in limits}
    return runs, fair


def weighted(gpu_s, cpu_s, mem_s):
    return WEIGHTS["gpu"] * gpu_s + WEIGHTS["cpu"] * cpu_s + WEIGHTS["mem_gb"] * mem_s


def hand_count(runs, start, end, who):
    """[GPU-s, CPU-s, memory-GB-s] per ``who(run)`` from the replay's own times."""
    totals: dict[str, list[float]] = {}
    for run in runs:
        seconds = run.seconds_in(start, end)
        row = totals.setdefault(who(run), [0.0, 0.0, 0.0])
        row[0] += run.gpus * seconds
        row[1] += run.cpus * seconds
        row[2] += (run.memory + run.tmpfs) * seconds
    return totals


def csv_rows(client, query):
    response = client.get(f"/reports/usage.csv?{query}")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_fair_share_limits_and_the_report_agree_to_the_second(replay, client, make_user):
    runs, fair = replay
    admin = make_user("root", admin=True)
    client.force_login(admin)
    october = "from=2026-10-01&to=2026-10-31"
    exported = {
        by: {tuple(line[c] for c in cols): line for line in csv_rows(client, f"by={by}&{october}")}
        for by, cols in (("user", ["user"]), ("project", ["project"]))
    }
    figures = ("gpu_seconds", "cpu_seconds", "mem_gb_seconds")

    by_user = hand_count(runs, T0, T1, lambda r: r.owner)
    by_project = hand_count(runs, T0, T1, lambda r: r.project)
    # The month edges cut both edge runs: 1 h of edge-start and 2 h of edge-end are October's.
    assert by_project["vision"][0] == pytest.approx(
        3600 + 2 * 9017 + 2 * (7205 + 7209) + 10830 + 3600 + 8 * 86400 + 30 + 4 * 7200
    )

    # 1. The report's CSV against the hand count, per user and per project.
    for name, amounts in by_user.items():
        line = exported["user"][(name,)]
        assert [float(line[f]) for f in figures] == pytest.approx(amounts, abs=1e-3), name
    for name, amounts in by_project.items():
        line = exported["project"][(name,)]
        assert [float(line[f]) for f in figures] == pytest.approx(amounts, abs=1e-3), name
    assert float(exported["user"][("total",)]["gpu_seconds"]) == pytest.approx(
        sum(a[0] for a in by_user.values()), abs=1e-3
    )

    # 2. Fair share: what October's ticks accrued (the value at T1 less the value at T0).
    for name, amounts in by_user.items():
        accrued = fair[T1].get(name, 0.0) - fair[T0].get(name, 0.0)
        assert accrued == pytest.approx(weighted(*amounts), abs=1.0), name

    # 3. The quota usage of the month: the limits' own reading at its last instant, and the
    #    reading of the whole month once it is over.
    limits = fair["limits"]
    vision, bob = limits[("project", "vision")], limits[("user", "bob")]
    assert [vision.used_gpu_s, vision.used_cpu_s, vision.used_mem_gb_s] == pytest.approx(
        by_project["vision"], abs=1.0
    )
    assert [bob.used_gpu_s, bob.used_cpu_s, bob.used_mem_gb_s] == pytest.approx(
        by_user["bob"], abs=1e-3
    )
    used = usage_by_scope(runs_overlapping(T0, T1), start=T0, end=T1, now=END)
    for name, amounts in by_user.items():
        assert used[("user", name)] == pytest.approx(amounts, abs=1e-3), name
        line = exported["user"][(name,)]
        assert [float(line[f]) for f in figures] == pytest.approx(used[("user", name)], abs=1e-3)

    # Borrowed GPU-hours: bob's borrowed run, 2 GPUs for 2 h 30 min.
    assert float(exported["user"][("bob",)]["borrowed_gpu_seconds"]) == 2 * 9000
    # Jobs by end state in October (the deleted run's end state is gone: not counted).
    vision_line = exported["project"][("vision",)]
    assert (vision_line["jobs_finished"], vision_line["jobs_cancelled"]) == ("5", "2")
    speech_line = exported["project"][("speech",)]
    assert (speech_line["jobs_finished"], speech_line["jobs_failed"]) == ("4", "2")
    assert speech_line["jobs_halted"] == "1"

    # November so far: the rest of edge-end, in the three readings again.
    november = usage_report(
        by="user", period=month_period("2026-11", zone=UTC), now=END, scope=None
    )
    carol = next(row for row in november.rows if row["user"] == "carol")
    assert carol["gpu_seconds"] == 4 * 7200
    accrued = fair[END]["carol"] - fair[T1]["carol"]
    assert accrued == pytest.approx(weighted(4 * 7200, 2 * 7200, 4 * 7200), abs=1.0)
