"""When a run held its resources: the one interval fair share (``usage.run_usage``), limits
(``quota_usage.held_seconds``) and the reports (reports/usage.py) all read.

A run is a Job row that started: it held its GPUs, CPUs and memory from ``started_at`` to its
end (``Job.run_end_of``: the container's finish time, ``now`` while it still holds its room,
else its last status change). Restarts are rows of their own; a row that never started held
nothing. Each reader clips the interval to its own window, here, so the three cannot drift
apart by a second.
"""

from __future__ import annotations

from datetime import datetime

from jobs.models import Job

# The fields of a run row this module reads (``values()`` rows carry at least these).
INTERVAL_FIELDS = ("started_at", "ended_at", "status", "status_updated")


def held_interval(
    run: dict, *, start: datetime | None, end: datetime, now: datetime
) -> tuple[datetime, datetime] | None:
    """The part of ``[start, min(end, now))`` the run held its resources (``start`` None: from
    its start), or None when it held nothing in it."""
    started = run["started_at"]
    if started is None:
        return None  # ASSIGNED: holds room but runs nothing yet
    run_end = Job.run_end_of(
        status=run["status"],
        ended_at=run.get("ended_at"),
        status_updated=run["status_updated"],
        now=now,
    )
    begin = started if start is None else max(start, started)
    stop = min(end, now, run_end)
    if stop <= begin:
        return None
    return begin, stop


def held_seconds(run: dict, *, start: datetime | None, end: datetime, now: datetime) -> float:
    """How many seconds of ``[start, min(end, now))`` the run held its resources."""
    interval = held_interval(run, start=start, end=end, now=now)
    return 0.0 if interval is None else (interval[1] - interval[0]).total_seconds()
