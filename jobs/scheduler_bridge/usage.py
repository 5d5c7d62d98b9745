"""Per-user decayed usage (fair share): the tick accrues it, everything else reads it.

``usage_accrue`` is the one writer of UserUsage; a tick calls it before reading its snapshot
(``jobs.scheduler_bridge.tick``), so reading a snapshot never writes.

Every second a job held its resources counts, however short the run: a tick adds, per user,
what their runs held since the user's row was last brought up to date (``updated_at``), for
the runs holding resources now *and* for the runs that ended since (``runs_ended_since_accrual``).
Before, only the jobs running at the moment of a tick counted: three jobs of a few seconds
between two ticks left no usage, and a run lost its seconds between the last tick and its end.
A run's end is the container's finish time (``Job.run_end_of``); the row's ``updated_at`` is
the watermark that keeps a run from being counted twice. Readers (``usage_now``, the Usage page)
add the same not-yet-stored share, so every figure agrees with the next tick's.
"""

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.db.models import F, Q

from jobs.models import ENDED_RUNS, Job, UserUsage, held_interval
from jobs.scheduler import model as sm
from jobs.scheduler.usage import accrue, decayed, usage_rate
from jobs.scheduler_bridge.bulk_writes import rows_update
from jobs.states import HOLDS_RESOURCES

# Ended runs are looked for among the jobs whose status changed this long ago at most (a
# range of the partial index on status_updated): far more than the time between two ticks,
# which run on every job end and on the periodic safety net.
ENDED_LOOKBACK = timedelta(days=2)
RUN_FIELDS = (
    "owner_id", "owner__username", "gpus", "cpus", "cpu_memory_gb", "tmpfs_gb", "started_at",
    "ended_at", "status", "status_updated",
)  # fmt: skip


def runs_ended_since_accrual(now: datetime) -> list[dict]:
    """Runs that ended after their owner's usage was last brought up to date (one query)."""
    return list(
        Job.objects.filter(
            ENDED_RUNS,
            started_at__isnull=False,
            status_updated__gt=now - ENDED_LOOKBACK,
        )
        .filter(Q(owner__usage__isnull=True) | Q(status_updated__gt=F("owner__usage__updated_at")))
        .order_by()  # any order: no sort of the rows by the model's ordering
        .values(*RUN_FIELDS)
    )


def run_usage(run: dict, *, since: datetime | None, now: datetime, config) -> float:
    """What one run added to its owner's usage after ``since`` (None: ever), decayed to ``now``.

    ``run``: a row with RUN_FIELDS (``running_rows`` carries them but ``ended_at``)."""
    interval = held_interval(run, start=since, end=now, now=now)
    if interval is None:
        return 0.0
    begin, end = interval
    half_life = config.usage_half_life_s
    rate = usage_rate(
        gpus=run["gpus"],
        cpus=run["cpus"],
        memory_gb=Job.held_memory_of(run["cpu_memory_gb"], run["tmpfs_gb"]),
        config=config,
    )
    held = accrue(0.0, (end - begin).total_seconds(), rate=rate, half_life_s=half_life)
    return decayed(held, (now - end).total_seconds(), half_life)


def usage_accrue(*, now: datetime, running: list[dict], config: sm.SchedulerConfig) -> dict:
    """Every user's decayed usage at ``now``; rows of users whose jobs held resources since
    their last update are brought up to date, the others are decayed in memory only (their
    stored value and time already determine it), so an idle user costs the tick no write.

    Each run (running now, or ended since) adds what it held over the part of the interval it
    actually ran.
    """
    half_life = config.usage_half_life_s
    runs = [*running, *runs_ended_since_accrual(now)]
    rows = {u.user.username: u for u in UserUsage.objects.select_related("user")}
    # Per user, the moment after which their runs are not in their row yet (None: none is).
    since: dict[str, datetime | None] = {name: row.updated_at for name, row in rows.items()}
    holders = {r["owner__username"] for r in runs if r["started_at"] is not None}
    missing = holders - set(rows)
    if missing:
        users = list(get_user_model().objects.filter(username__in=missing))
        UserUsage.objects.bulk_create(
            [UserUsage(user=user, value=0.0, updated_at=now) for user in users],
            ignore_conflicts=True,  # a concurrent reader (pages) never writes; be safe anyway
        )
        for row in UserUsage.objects.select_related("user").filter(user__in=users):
            rows[row.user.username] = row
            since[row.user.username] = None  # a new row: every run of its user counts
    usage = {
        name: row.value
        if since[name] is None
        else decayed(row.value, (now - row.updated_at).total_seconds(), half_life)
        for name, row in rows.items()
    }
    for run in runs:
        name = run["owner__username"]
        if name in rows:
            usage[name] += run_usage(run, since=since[name], now=now, config=config)
    changed = [rows[name] for name in holders if name in rows]
    for row in changed:
        row.value, row.updated_at = usage[row.user.username], now
    # One UPDATE ... FROM for all holders (bulk_update's CASE per row cost 0.2 s for 600 users).
    rows_update(
        UserUsage,
        key="id",
        names=["value", "updated_at"],
        rows=[[row.pk, row.value, row.updated_at] for row in changed],
    )
    return usage


def usage_pending(
    *,
    now: datetime,
    config,
    stored: Iterable[tuple[object, float, datetime]],
    runs: list[dict],
    key: str,
) -> dict:
    """Decayed usage per user at ``now`` without writing: the stored ``(user, value, updated_at)``
    decayed, plus what ``runs`` (running now or ended since) held after each row's update, as
    ``usage_accrue`` would add it. ``key``: the run field naming the user (as ``stored`` does)."""
    updated: dict[object, datetime] = {}
    values: dict[object, float] = {}
    for user, value, updated_at in stored:
        values[user] = decayed(value, (now - updated_at).total_seconds(), config.usage_half_life_s)
        updated[user] = updated_at
    for run in runs:
        user = run[key]
        added = run_usage(run, since=updated.get(user), now=now, config=config)
        if added or user in values:
            values[user] = values.get(user, 0.0) + added
    return values


def usage_now(*, now: datetime, config: sm.SchedulerConfig) -> dict[str, float]:
    """Decayed usage per user without writing (for estimates and the submit check): what a tick
    at ``now`` would store, runs since the last one included."""
    stored = UserUsage.objects.values_list("user__username", "value", "updated_at")
    running = Job.objects.filter(status__in=HOLDS_RESOURCES, started_at__isnull=False).values(
        *RUN_FIELDS
    )
    return usage_pending(
        now=now,
        config=config,
        stored=stored,
        runs=[*running, *runs_ended_since_accrual(now)],
        key="owner__username",
    )
