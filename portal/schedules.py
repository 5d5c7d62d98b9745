"""The periodic django-q2 schedules: safety nets behind the event-driven work.

Made (or updated) after every ``migrate`` (portal/apps.py), so a deployment that runs only
``migrate``, ``qcluster`` and ``watch_slaves`` has them too; run_portal makes sure as well.
"""

import ast
import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connections
from django.utils import timezone

from accounts import task_names as accounts_task_names
from core.tasks import task_timeout
from interactive import task_names as interactive_task_names
from jobs import task_names
from reports import task_names as reports_task_names

log = logging.getLogger(__name__)

PERIODIC = {
    # name: (task path, minutes)
    "scheduler tick (safety net)": (task_names.SCHEDULER_TICK, None),
    # Reconcile probes every slave first (online state, engine info), then repairs drift.
    "reconcile slaves": (task_names.RECONCILE, 1),
    # Archived outputs past PORTAL_OUTPUT_RETENTION_DAYS (jobs/execution/outputs.py).
    "purge old job outputs": (task_names.OUTPUTS_PURGE, 60),
    # Directory users the directory no longer vouches for are disabled (accounts/directory/sync.py;
    # nothing to do unless OIDC or LDAP sign-in is configured).
    "sync directory users": (accounts_task_names.DIRECTORY_SYNC, 15),
    # Interactive sessions' warnings, idle culls and time boxes (interactive/lifecycle.py).
    "police interactive sessions": (interactive_task_names.SESSIONS_SWEEP, 1),
}

# name: (task path, hour of the 1st of each month, UTC)
MONTHLY = {
    # Each project's usage report of the month before, to its managers (reports/mail.py).
    "monthly usage reports": (reports_task_names.REPORTS_MAIL_MONTHLY, 6),
}


def first_of_next_month(now: datetime, hour: int) -> datetime:
    """The first run of a monthly schedule: ``hour`` UTC on the 1st of the month after ``now``."""
    following = (now.astimezone(UTC).replace(day=28) + timedelta(days=4)).replace(day=1)
    return following.replace(hour=hour, minute=0, second=0, microsecond=0)


def schedules_ensure(*, using: str = "default") -> None:
    from django_q.models import Schedule

    # `migrate` of a single app may run before django-q2's own tables exist.
    if Schedule._meta.db_table not in connections[using].introspection.table_names():
        return
    for name, (func, minutes) in PERIODIC.items():
        if minutes is None:
            defaults = {
                "func": func,
                "schedule_type": Schedule.MINUTES,
                "minutes": max(1, settings.PORTAL_TICK_INTERVAL_S // 60),
            }
        else:
            defaults = {"func": func, "schedule_type": Schedule.MINUTES, "minutes": minutes}
        timeout = task_timeout(func)
        # Above Q_CLUSTER's 60 s: reconcile visits every slave (see core.tasks.task_timeout).
        defaults["kwargs"] = repr({"q_options": {"timeout": timeout}}) if timeout else None
        Schedule.objects.using(using).update_or_create(
            name=name, defaults={**defaults, "repeats": -1}
        )
    for name, (func, hour) in MONTHLY.items():
        # django-q2 moves next_run on by a month after each run: set only when made.
        Schedule.objects.using(using).update_or_create(
            name=name,
            defaults={"func": func, "schedule_type": Schedule.MONTHLY, "repeats": -1},
            create_defaults={
                "func": func,
                "schedule_type": Schedule.MONTHLY,
                "repeats": -1,
                "next_run": first_of_next_month(timezone.now(), hour),
            },
        )


def _readable(text: str | None) -> bool:
    """Whether django-q2's scheduler can read a schedule's args or kwargs (it uses
    ``ast.literal_eval``, falling back for kwargs to ``f(...)`` keyword syntax)."""
    if not text:
        return True
    try:
        ast.literal_eval(text)
        return True
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        pass
    try:
        call = ast.parse(f"f({text})", mode="eval").body
        for keyword in getattr(call, "keywords", []):
            ast.literal_eval(keyword.value)
        return isinstance(call, ast.Call) and not call.args
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return False


def schedule_unreadable_reason(schedule) -> str | None:
    """Why django-q2 could not run ``schedule`` (None: it can)."""
    if not _readable(schedule.args):
        return f"args {schedule.args[:200]!r} are not plain literals"
    if not _readable(schedule.kwargs):
        return f"kwargs {schedule.kwargs[:200]!r} are not plain literals"
    return None


def schedules_set_aside_unreadable(*, using: str = "default") -> int:
    """Stop every schedule django-q2 could not read, with a logged reason; returns how many.

    django-q2 reads all due schedules in one transaction: one it cannot parse rolls back the
    whole pass, every 30 s, and no periodic task of the site runs again. Such a row is kept
    (an admin may want to read it) but set to ``repeats=0``, which the scheduler skips, and
    renamed to say why. The q cluster runs this at start and then every minute."""
    from django_q.models import Schedule

    if Schedule._meta.db_table not in connections[using].introspection.table_names():
        return 0
    set_aside = 0
    for schedule in Schedule.objects.using(using).exclude(repeats=0):
        reason = schedule_unreadable_reason(schedule)
        if reason is None:
            continue
        log.error("schedule %s (%s) set aside: %s", schedule.pk, schedule.func, reason)
        name = f"UNREADABLE, set aside: {schedule.name or schedule.func}"[:100]
        Schedule.objects.using(using).filter(pk=schedule.pk).update(repeats=0, name=name)
        set_aside += 1
    return set_aside


def schedule_refuse_unreadable(sender, instance, **kwargs) -> None:
    """pre_save of django-q2's Schedule: nothing the scheduler cannot read is ever stored."""
    reason = schedule_unreadable_reason(instance)
    if reason is not None:
        raise ValueError(f"schedule {instance.name or instance.func!r}: {reason}")
