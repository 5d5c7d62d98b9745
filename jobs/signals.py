"""The job domain's events, for the apps one floor above ``jobs`` (gangs, notifications, the
SSH gateway) to act on without ``jobs`` importing them: ``jobs`` sends, they connect receivers
in their ``AppConfig.ready``. One signal per event; each says who sends it, when, and with
which keyword arguments."""

from __future__ import annotations

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
# jobs.lifecycle.actions.job_halt_by_system inside the transaction that moved it to MUSTHALT,
# before its halt procedure is fired (on commit). Kwargs: ``job``, ``halt_info`` (the halt
# event recorded on it), ``now``.
job_halt_requested = Signal()

# The periodic reconcile went over every slave. Sent by jobs.runtime.reconcile.reconcile_all,
# outside any transaction: the place for safety nets of work whose task may have been lost.
# Kwargs: ``now`` (None: the current time).
reconcile_finished = Signal()
