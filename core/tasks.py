"""Firing background tasks after the current transaction commits.

Every task is named by its dotted path (stored in django-q2's queue: don't rename lightly).
``PORTAL_TASK_MODE`` picks what "fire" means: hand it to django-q2 (``queue``), run it in this
process right after commit (``inline``), or only record it (``record``, for unit tests).
"""

import json
import logging
from collections.abc import Callable
from importlib import import_module
from typing import Any

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)

# Tasks recorded in "record" mode, as (dotted_path, args) tuples; tests read and clear it.
recorded: list[tuple[str, tuple[Any, ...]]] = []


class UnknownTask(LookupError):
    """A task path that names no function (a typo: see jobs.task_names)."""


def resolve(dotted_path: str) -> Callable[..., Any]:
    module_name, _, attr = dotted_path.rpartition(".")
    try:
        task: object = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as error:
        raise UnknownTask(f"task {dotted_path!r} does not resolve: {error}") from None
    if not callable(task):
        raise UnknownTask(f"task {dotted_path!r} is not callable")
    return task


def task_timeout(dotted_path: str) -> int | None:
    """The time limit of tasks that may outlast Q_CLUSTER's 60 s (None: the cluster's)."""
    return task_timeouts().get(dotted_path)


def task_timeouts() -> dict[str, int]:
    """Tasks with their own time limit. A launch may pull a big image; a stop and a halt wait
    their grace period and then read the log; reconcile visits every slave, each engine call
    bounded by its 30 s client timeout. (Paths as in jobs/task_names.py; a test holds them to
    it: this kernel module imports no app.)"""
    return {
        "jobs.tasks.job_launch": settings.PORTAL_LAUNCH_TIMEOUT_S,
        "jobs.tasks.job_stop": settings.PORTAL_STOP_GRACE_S + 120,
        "jobs.tasks.job_halt": 2 * settings.PORTAL_HALT_GRACE_S + 120,
        "jobs.tasks.job_finish": 300,
        "jobs.tasks.reconcile": 600,
        "jobs.tasks.recover": 600,
    }


def fire(dotted_path: str, *args: Any, group: str | None = None) -> None:
    """Run ``dotted_path(*args)`` in the background once the current transaction commits.

    The path is resolved now, in every mode: a misspelt task fails the caller (and the fast
    tests, which only record tasks) instead of a worker later."""
    resolve(dotted_path)
    plain = plain_args(args)
    transaction.on_commit(lambda: _dispatch(dotted_path, plain, group))


def plain_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` as plain JSON values (an enum becomes its value, a tuple a list).

    Whatever waits in the queue is read back by another process, perhaps another release:
    only plain data can be read there. (An enum stored by its repr once made every periodic
    schedule of a site fail.) Anything JSON cannot carry is the caller's bug: TypeError now."""
    try:
        return tuple(json.loads(json.dumps(list(args), allow_nan=False)))
    except (TypeError, ValueError) as error:
        raise TypeError(f"task arguments must be plain JSON values: {error}") from None


def _dispatch(dotted_path: str, args: tuple[Any, ...], group: str | None) -> None:
    mode = settings.PORTAL_TASK_MODE
    if mode == "record":
        recorded.append((dotted_path, args))
    elif mode == "inline":
        try:
            resolve(dotted_path)(*args)
        except Exception:  # an inline task failing must not break the request that fired it
            log.exception("inline task %s%r failed", dotted_path, args)
    else:
        from django_q.tasks import async_task

        options: dict[str, str | int] = {"group": group or dotted_path.rsplit(".", 1)[-1]}
        timeout = task_timeout(dotted_path)
        if timeout is not None:
            options["timeout"] = timeout
        async_task(dotted_path, *args, **options)
