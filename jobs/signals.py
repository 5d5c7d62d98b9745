"""The job domain's events, for the apps one floor above ``jobs`` (gangs, notifications, the
SSH gateway) to act on without ``jobs`` importing them: ``jobs`` sends, they connect receivers
in their ``AppConfig.ready``. One signal per event; each says who sends it, when, and with
which keyword arguments."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import Signal

# --- gangs (multi-task OpenPAI jobs; the gangs app receives them) ----------------------------

# A task of a gang ended. Sent by the ``jobs.tasks.gang_update`` task, which ``job_transition``
# fires on commit when a job with ``gang_id`` reaches an ended state. Kwargs: ``gang_id``.
gang_task_ended = Signal()

# The scheduler assigned tasks of gangs to slaves. Sent by jobs.scheduler_bridge.apply inside
# the tick's transaction that assigned them (the slaves locked), instead of firing their
# launches: a gang launches whole, once its ports and peers are known. Kwargs: ``job_pks``
# (sorted), ``now``.
gang_tasks_assigned = Signal()

# A running job was asked to halt (by its user or the scheduler). Sent by
# jobs.system_actions.job_halt_by_system inside the transaction that moved it to MUSTHALT,
# before its halt procedure is fired (on commit). Kwargs: ``job``, ``halt_info`` (the halt
# event recorded on it), ``now``.
job_halt_requested = Signal()

# The periodic reconcile went over every slave. Sent by jobs.execution.reconcile.reconcile_all,
# outside any transaction: the place for safety nets of work whose task may have been lost.
# Kwargs: ``now`` (None: the current time).
reconcile_finished = Signal()

# --- a job's life and the watcher process (the notifications app receives them) ---------------

# A job entered a status. Sent once per change, after the transaction that made it commits
# (never for a change rolled back), with signal_send_after_commit below: by
# ``jobs.transitions.job_transition`` for each change it wins, by the submit services
# (jobs.user_actions.services) for each job they create QUEUED, and by the scheduler's apply step for
# each job it fails (the jobs it assigns, thousands a tick, are not announced: nobody is told of
# ASSIGNED). Sender ``Job``. Kwargs: ``job`` (as written; its request may be deferred),
# ``status`` (the status it entered).
job_status_changed = Signal()

# A halted job was continued by a new job (jobs.execution.runs.job_restart_create). Sent
# after commit. Sender ``Job``. Kwargs: ``job`` (the old job), ``follow`` (its continuation).
job_restarted = Signal()

# The slave watcher process starts (jobs.execution.watcher.watch_forever, `manage.py
# watch_slaves`): the one process that runs continuously wherever jobs run, so the home of
# timers. Sender ``"watcher"``. Kwargs: ``stop`` (a threading.Event set when the watcher
# stops). A receiver starts its own daemon thread, which ends once ``stop`` is set, and returns.
watcher_started = Signal()


def signal_send_after_commit(signal: Signal, *, sender: Any, calls: list[dict[str, Any]]) -> None:
    """``signal.send(sender, **kwargs)`` for each of ``calls`` once the current transaction
    commits (at once outside one), in one callback for them all. Robust: a receiver that raises
    is logged by Django and never stops the rest of the work waiting for the same commit (a
    launch fired in that transaction is not lost to a failing e-mail)."""
    if not calls or not signal.has_listeners(sender):
        return

    def send() -> None:
        for kwargs in calls:
            signal.send(sender, **kwargs)

    transaction.on_commit(send, robust=True)
