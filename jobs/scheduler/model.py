"""What the pure scheduler receives and returns: frozen dataclasses, nothing else.

The bridge (``jobs/scheduler_bridge/``) turns database rows into a :class:`Snapshot`, calls
``run_cycle`` and applies the returned decisions. Nothing in here reads the clock or the database:
``Snapshot.now`` is the only notion of time, so a cycle can be replayed exactly.

Units: durations are whole seconds, memory is GB (1024^3 bytes, as in GPULab's ``cpuMemoryGb``),
times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

HOUR = 3600
DAY = 24 * HOUR
WEEK = 7 * DAY

# GPULab's defaults for request.scheduling; used as dataclass defaults so hand-built snapshots
# behave like jobs submitted without scheduling options.
DEFAULT_MIN_DURATION_S = WEEK
DEFAULT_MAX_DURATION_S = 2 * WEEK

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Site policy knobs. Every field has a default that matches GPULab's documented behaviour."""

    # Fair share: usage decays with this half-life and is weighted per resource-second.
    usage_half_life_s: float = WEEK
    gpu_weight: float = 1.0
    cpu_weight: float = 0.05
    mem_gb_weight: float = 0.01
    # A job that is not an owner's may run on a private cluster only when it names no clusterId
    # and accepts to be halted this soon (its minDuration is at most this).
    private_guest_max_min_duration_s: int = HOUR
    # Per-user caps on what is active at once (None = unlimited).
    per_user_max_running_jobs: int | None = None
    per_user_max_gpus: int | None = None
    # Fairness halts ("Score"): a queued job may halt running jobs (past their minDuration) of a
    # user whose usage is at least 1/ratio times its own user's AND more than the gap above it.
    fairness_halts: bool = True
    fairness_halt_usage_ratio: float = 0.5
    fairness_halt_min_usage_gap: float = float(HOUR)  # one GPU-hour of weighted usage
    # A queued job must have waited this long before it may halt others (0 = at once).
    fairness_halt_min_queued_s: int = 0
    # At most this many new "Score" halts per cycle, so one tick never empties a cluster.
    max_fairness_halts_per_cycle: int = 16
    # Explanations per queued job (the most specific first).
    max_explanations: int = 6
    # Interactive jobs ("start now or fail") that find no room may halt running jobs past their
    # minDuration; they then wait for those jobs to end, counted from the first halt made for
    # them, at most this long (the halt grace period plus a margin) before they fail.
    interactive_halts: bool = True
    interactive_halt_wait_s: int = 60
    max_interactive_halts_per_cycle: int = 16
    # A halted job is stopped this long after the signal at the latest (GPULab: 15 seconds);
    # start estimates count it gone then (plus a tick).
    halt_grace_s: int = 15
    # Score plugins (``scorers.SCORERS``) and their weights, added up in this order: best fit
    # first, then owners on their private cluster and entitled jobs on their reservation.
    scorer_weights: tuple[tuple[str, float], ...] = (
        ("packing", 1.0),
        ("private_preference", 2.0),
        ("reservation_affinity", 2.0),
    )


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One GPU of a slave, as discovered by the probe or declared by an admin."""

    index: int
    model: str
    memory_mb: int = 0


@dataclass(frozen=True, slots=True)
class SlaveState:
    """A registered slave. ``gpus``/``cpu_ids``/``memory_gb`` are what the portal may use of it
    ("acquired"); what is free is derived from :class:`RunningJob` rows on it."""

    name: str
    cluster_id: int
    cluster_private: bool = False
    cluster_owner_projects: frozenset[str] = frozenset()
    online: bool = True
    accepting_jobs: bool = True
    gpus: tuple[GpuInfo, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory_gb: float = 0.0
    cuda_major: int | None = None
    features: frozenset[str] = frozenset()
    # GPULab's HaltInfo names the slave instance; the slave name is used when this is unset.
    instance_id: str | None = None
    # Fixed host ports (``portMappings[].hostPort``) held by the jobs on it: one job per port.
    ports_in_use: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job holding resources on a slave: ASSIGNED, STARTING, RUNNING, MUSTHALT or HALTING.

    ``max_duration_s`` is compared with ``run_seconds_before + (now - started_at)``: the bridge
    passes either the original maxDuration with the run time of earlier restarts, or the remaining
    maxDuration with ``run_seconds_before=0``. ``min_duration_s`` counts from ``started_at``.
    """

    id: str
    user: str
    project: str
    slave: str
    gpu_ids: tuple[int, ...]
    cpu_ids: tuple[int, ...]
    memory_gb: float  # cpuMemoryGb plus tmpfs
    started_at: datetime
    run_seconds_before: int = 0
    min_duration_s: int = DEFAULT_MIN_DURATION_S
    max_duration_s: int = DEFAULT_MAX_DURATION_S
    restartable: bool = False
    reservation_ids: frozenset[str] = frozenset()
    bucket: str | None = None
    ignoring_reservation_ids: frozenset[str] = frozenset()
    # MUSTHALT/HALTING: still holds its resources, will free them soon, never halted again.
    halting: bool = False
    # Started above a soft quota level (``Start.borrowed``): the first halted for in-limit jobs.
    borrowed: bool = False


@dataclass(frozen=True, slots=True)
class QueuedJob:
    """A QUEUED job and the parts of its request that scheduling looks at."""

    id: str
    user: str
    project: str
    submitted_at: datetime
    gpus: int = 0
    cpus: int = 1
    memory_gb: float = 1.0  # cpuMemoryGb plus tmpfs
    gpu_models: tuple[str, ...] = ()  # any may match, case-insensitive substring
    features: frozenset[str] = frozenset()
    min_cuda: int | None = None
    cluster_id: int | None = None
    slave_name: str | None = None
    interactive: bool = False
    restartable: bool = False
    min_duration_s: int = DEFAULT_MIN_DURATION_S
    max_duration_s: int = DEFAULT_MAX_DURATION_S  # remaining: already reduced for restarts
    not_before: datetime | None = None
    not_after: datetime | None = None
    bucket: tuple[str, int] | None = None  # (bucketName, bucketMax)
    reservation_ids: frozenset[str] = frozenset()
    # Fixed host ports it asks for (``portMappings[].hostPort``; ports Docker picks are left out).
    host_ports: frozenset[int] = frozenset()
    # Interactive jobs: when running jobs were first halted to make room for it (None: never).
    halt_wait_since: datetime | None = None
    # A task of a multi-task job: its gang's id and how many tasks the gang has; all of them
    # start in one cycle or none does (gang.py).
    gang: str | None = None
    gang_size: int = 0


@dataclass(frozen=True, slots=True)
class ReservationWindow:
    """Resources held for entitled jobs during ``[start, end)``.

    ``slave_names`` empty means the whole cluster; ``gpu_count`` None means every GPU (and
    everything else) of those slaves, otherwise only that many of their GPUs are held back.
    A job is entitled when it names the reservation and its user or project is listed; a
    reservation that lists nobody admits every job that names it (the UUID is the ticket, as in
    GPULab). ``reservations.models.Reservation`` states the same rule for the database; a property
    test (tests/reservations/test_rules.py) keeps the two in agreement.
    """

    id: str
    name: str
    cluster_id: int
    start: datetime
    end: datetime
    slave_names: frozenset[str] = frozenset()
    gpu_count: int | None = None
    entitled_projects: frozenset[str] = frozenset()
    entitled_users: frozenset[str] = frozenset()

    def admits(self, *, user: str, project: str, reservation_ids: frozenset[str]) -> bool:
        """Whether a job with this owner and these reservation ids is entitled to this window."""
        if self.id not in reservation_ids:
            return False
        if not self.entitled_users and not self.entitled_projects:
            return True
        return user in self.entitled_users or project in self.entitled_projects

    def covers(self, slave: SlaveState) -> bool:
        """Whether the window holds (part of) this slave: its cluster, and listed or none listed."""
        if slave.cluster_id != self.cluster_id:
            return False
        return not self.slave_names or slave.name in self.slave_names


# A key of the run-time history: ("name", user, job name), ("image", user, image), ("user",
# user) or ("site",) -- see ``runtimes.history_keys``.
HistoryKey = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RuntimeHistory:
    """How long past runs lasted, for start estimates (``runtimes.py``; the tick needs none).

    ``samples``: per key, the run times in seconds of the latest runs that ended, ascending.
    ``job_keys``: per running or queued job id, its keys, most specific first.
    """

    samples: Mapping[HistoryKey, tuple[int, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    job_keys: Mapping[str, tuple[HistoryKey, ...]] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class QuotaLimit:
    """The limits of one scope and what it used this month (``filters.QUOTA``).

    ``scope`` is ``project`` (``project`` set), ``user`` (``user`` set) or ``member`` (a user
    within a project: both set). None: no limit at that level. Hour budgets are per calendar
    month; ``used_*_s`` is what the scope's runs held since the month began, up to ``now``
    (running jobs included), and ``renews_at`` the next month's first moment. The filter
    enforces the hard levels; a job within every hard level but above a soft one starts only
    by borrowing (``quota_borrowing.py``).
    """

    scope: str
    project: str = ""
    user: str = ""
    gpus: int | None = None
    gpus_soft: int | None = None
    jobs: int | None = None
    jobs_soft: int | None = None
    gpu_hours: float | None = None
    gpu_hours_soft: float | None = None
    cpu_hours: float | None = None
    cpu_hours_soft: float | None = None
    mem_gb_hours: float | None = None
    mem_gb_hours_soft: float | None = None
    used_gpu_s: float = 0.0
    used_cpu_s: float = 0.0
    used_mem_gb_s: float = 0.0
    renews_at: datetime | None = None

    @property
    def key(self) -> tuple[str, ...]:
        if self.scope == "member":
            return ("member", self.user, self.project)
        return (self.scope, self.project if self.scope == "project" else self.user)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one scheduling cycle may look at. ``now`` must be timezone-aware."""

    now: datetime
    slaves: tuple[SlaveState, ...] = ()
    running: tuple[RunningJob, ...] = ()
    queued: tuple[QueuedJob, ...] = ()
    reservations: tuple[ReservationWindow, ...] = ()
    usage: Mapping[str, float] = field(default_factory=lambda: _EMPTY)  # decayed, per user
    # Active jobs per bucket name; names missing here are counted from ``running``.
    bucket_counts: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    # Past run times, for start estimates only (None: every job is assumed to run to its
    # maxDuration). Scheduling decisions never read it.
    history: RuntimeHistory | None = None
    # Limits of projects, users and users within projects (empty: nobody is limited).
    quotas: tuple[QuotaLimit, ...] = ()


# --- decisions -------------------------------------------------------------------------------


class HaltReason(StrEnum):
    """GPULab's HaltReason values, spelled exactly as GPULab serialises them."""

    UNKNOWN = "Unknown"
    USER = "User requested fallback manually"
    ADMIN = "Admin requested fallback"
    SCORE = "Score"
    RESERVATION = "Reservation Priority"
    CLUSTER = "Private Cluster Priority"


def format_utc(moment: datetime) -> str:
    """GPULab's time format: ``YYYY-MM-DDTHH:MM:SSZ``.

    The same as ``core.timefmt.utc_z(moment, timespec="seconds")``, which every other module
    uses; the pure scheduler imports only the standard library, so it keeps this copy."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class HaltInfo:
    """One halt event, as GPULab records it in ``state.scheduling.haltEvents``.

    Scores are the decayed usage used for ranking, in the same order as the uuids.
    """

    reason: str
    time: datetime
    started_job_uuids: tuple[str, ...]
    halted_job_uuids: tuple[str, ...]
    slave_name: str
    slave_instance: str
    started_job_scores: tuple[float, ...]
    halted_job_scores: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        """GPULab's camelCase HaltInfo object (JSON-ready: str, lists, floats)."""
        return {
            "reason": str(self.reason),
            "time": format_utc(self.time),
            "startedJobUuids": list(self.started_job_uuids),
            "haltedJobUuids": list(self.halted_job_uuids),
            "slaveName": self.slave_name,
            "slaveInstance": self.slave_instance,
            "startedJobScores": [float(s) for s in self.started_job_scores],
            "haltedJobScores": [float(s) for s in self.halted_job_scores],
        }


@dataclass(frozen=True, slots=True)
class Start:
    """Assign a queued job to a slave with these GPU and CPU ids.

    ``ignoring_reservation_ids`` lists upcoming reservations the job runs into as a guest: it
    will be halted ("Reservation Priority") when they begin.
    """

    job_id: str
    slave: str
    gpu_ids: tuple[int, ...]
    cpu_ids: tuple[int, ...]
    ignoring_reservation_ids: frozenset[str] = frozenset()
    # Above a soft quota level: started on room no in-limit job of the cycle could use.
    borrowed: bool = False


@dataclass(frozen=True, slots=True)
class Halt:
    """Ask a running job to halt (MUSTHALT); ``halt_info`` goes into its haltEvents."""

    job_id: str
    reason: str
    halt_info: HaltInfo


@dataclass(frozen=True, slots=True)
class Fail:
    """A queued job becomes FAILED (interactive job that cannot start, notAfter passed)."""

    job_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Cancel:
    """A running job becomes CANCELLED (maxDuration reached)."""

    job_id: str
    reason: str


Decision = Start | Halt | Fail | Cancel


@dataclass(frozen=True, slots=True)
class CycleResult:
    """Decisions in the order they were taken, and why every job left queued is still waiting."""

    decisions: tuple[Decision, ...]
    explanations: Mapping[str, tuple[str, ...]]
    # The earliest later moment at which a cycle could decide differently on its own (a
    # notBefore, a reservation's start, a maxDuration deadline...); None: only events matter.
    next_wakeup: datetime | None = None

    @property
    def starts(self) -> tuple[Start, ...]:
        return tuple(d for d in self.decisions if isinstance(d, Start))

    @property
    def halts(self) -> tuple[Halt, ...]:
        return tuple(d for d in self.decisions if isinstance(d, Halt))

    @property
    def fails(self) -> tuple[Fail, ...]:
        return tuple(d for d in self.decisions if isinstance(d, Fail))

    @property
    def cancels(self) -> tuple[Cancel, ...]:
        return tuple(d for d in self.decisions if isinstance(d, Cancel))
