"""The dashboard's card "Your limits this month": per scope that limits the viewer (theirs, each
of their projects', theirs within a project), one bar per limit that is set, drawn against the
hard level with the soft level marked (issue 29 item 3; docs/quotas.md).

The numbers are the standing's (``jobs.scheduler_bridge.quota_usage.quota_standing``, the one
the REST endpoint and Create Job answer with), so the card, the endpoint and the scheduler agree.
"""

from __future__ import annotations

from datetime import datetime

from accounts.selectors import projects_of
from jobs.scheduler_bridge.quota_usage import quota_standing
from quotas.selectors import month_end, quotas_in_force

# Projects looked at per render (the dashboard is polled): three queries each.
MAX_PROJECTS = 10
# (standing key, label, unit after the numbers, what is counted)
LIMIT_ROWS = (
    ("gpus", "GPUs at once", "", "held"),
    ("jobs", "Jobs at once", "", "running"),
    ("gpu_hours", "GPU-hours this month", " h", "used"),
    ("cpu_hours", "CPU-hours this month", " h", "used"),
    ("mem_gb_hours", "Memory GB-hours this month", " GB·h", "used"),
)


def scope_title(row: dict, user: str) -> str:
    if row["scope"] == "member":
        return f"You ({user}) in project {row['project']}"
    if row["scope"] == "user":
        return f"You ({user}), in every project"
    return f"Project {row['project']} (all its members)"


def _number(value: float) -> str:
    return f"{round(value, 1):g}"


def limit_bars(row: dict) -> list[dict]:
    """One bar per limit of a standing row that has a hard or a soft level: the value against
    the hard level (the soft one when there is no hard), the soft level as a mark, and the
    state: ``over`` (at or past the hard level), ``soft`` (past the soft), ``ok``."""
    bars = []
    for name, label, unit, counted in LIMIT_ROWS:
        level = row[name]
        hard, soft = level["hard"], level["soft"]
        if hard is None and soft is None:
            continue
        value = float(level[counted])
        scale = hard if hard is not None else soft
        percent = 100.0 if not scale else min(100.0, 100.0 * value / scale)
        state = "ok"
        if hard is not None and value >= hard:
            state = "over"
        elif soft is not None and value > soft:
            state = "soft"
        text = f"{_number(value)}{unit} {counted}"
        if hard is not None:
            text += f" of {_number(hard)}"
        if soft is not None:
            text += f" (soft {_number(soft)})"
        may_use = level.get("running_may_use") or 0.0
        bars.append(
            {
                "name": name,
                "label": label,
                "text": text,
                "running_may_use": _number(may_use) if may_use else "",
                "percent": round(percent, 1),
                "soft_percent": (
                    round(min(100.0, 100.0 * soft / scale), 1)
                    if soft is not None and scale
                    else None
                ),
                "state": state,
            }
        )
    return bars


def limits_card(user, *, now: datetime) -> dict | None:
    """The card's scopes and when the hour budgets renew; None when no limit applies to the
    viewer (one query then). A scope met in several projects (the viewer's own) is shown once."""
    names = list(projects_of(user).values_list("name", flat=True)[:MAX_PROJECTS])
    if not quotas_in_force(projects=names, users=[user.username]):
        return None
    scopes: dict[tuple, dict] = {}
    for name in names:
        standing = quota_standing(user=user.username, project=name, now=now)
        for row in standing["limits"]:
            key = (row["scope"], row["project"], row["user"])
            bars = limit_bars(row)
            if key in scopes or not bars:
                continue
            scopes[key] = {
                "key": "-".join(part or "" for part in key),
                "title": scope_title(row, user.username),
                "bars": bars,
            }
    if not scopes:
        return None
    # The viewer's own limits first, then per project (the project's, then theirs within it).
    order = {"user": 0, "project": 1, "member": 2}
    ordered = sorted(
        scopes.items(), key=lambda item: (item[0][0] != "user", item[0][1] or "", order[item[0][0]])
    )
    return {"scopes": [scope for _, scope in ordered], "renews_at": month_end(now)}
