"""Per-user decayed usage (fair share): the tick accrues it, everything else reads it.

``usage_accrue`` is the one writer of UserUsage; a tick calls it before reading its snapshot
(``jobs.scheduler_bridge.tick``), so reading a snapshot never writes.
"""

from datetime import datetime

from django.contrib.auth import get_user_model

from jobs.models import Job, UserUsage
from jobs.scheduler import model as sm
from jobs.scheduler.usage import accrue, decayed, usage_rate
from jobs.scheduler_bridge.bulk_writes import rows_update


def usage_accrue(*, now: datetime, running: list[dict], config: sm.SchedulerConfig) -> dict:
    """Every user's decayed usage at ``now``; rows of users whose jobs hold resources are
    brought up to date, the others are decayed in memory only (their stored value and time
    already determine it), so an idle user costs the tick no write.

    Each running job adds what it held over the part of the interval it actually ran.
    """
    half_life = config.usage_half_life_s
    rows = {u.user.username: u for u in UserUsage.objects.select_related("user")}
    holders = {r["owner__username"] for r in running if r["started_at"] is not None}
    missing = holders - set(rows)
    if missing:
        users = list(get_user_model().objects.filter(username__in=missing))
        UserUsage.objects.bulk_create(
            [UserUsage(user=user, value=0.0, updated_at=now) for user in users],
            ignore_conflicts=True,  # a concurrent reader (pages) never writes; be safe anyway
        )
        for row in UserUsage.objects.select_related("user").filter(user__in=users):
            rows[row.user.username] = row
    usage = {
        name: decayed(row.value, (now - row.updated_at).total_seconds(), half_life)
        for name, row in rows.items()
    }
    for job in running:
        if job["started_at"] is None:
            continue  # ASSIGNED: holds room but runs nothing yet
        row = rows[job["owner__username"]]
        ran = (now - max(row.updated_at, job["started_at"])).total_seconds()
        rate = usage_rate(
            gpus=job["gpus"],
            cpus=job["cpus"],
            memory_gb=Job.held_memory_of(job["cpu_memory_gb"], job["tmpfs_gb"]),
            config=config,
        )
        usage[job["owner__username"]] += accrue(0.0, ran, rate=rate, half_life_s=half_life)
    changed = [rows[name] for name in holders]
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


def usage_now(*, now: datetime, config: sm.SchedulerConfig) -> dict[str, float]:
    """Decayed usage per user without writing (for pages and the submit check)."""
    return {
        username: decayed(value, (now - updated).total_seconds(), config.usage_half_life_s)
        for username, value, updated in UserUsage.objects.values_list(
            "user__username", "value", "updated_at"
        )
    }
