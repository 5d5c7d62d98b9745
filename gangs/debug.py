"""OpenPAI's ``jobEnvs.isDebug: true``: a failed task's container is kept for inspection for
``PORTAL_OPENPAI_DEBUG_KEEP_S`` seconds after it ended, then removed by the periodic reconcile
(docs/openpai.md, "isDebug"). The container has exited: it holds no GPU, CPU or memory, and
the task's slot is freed as for any ended job; only its file system and log stay on the slave.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from core.timefmt import utc_z
from jobs.models import Job
from jobs.states import JobStatus


def debug_keep_until(job: Job) -> datetime | None:
    """Until when the ended ``job``'s container is kept: a FAILED task of an OpenPAI config
    with ``jobEnvs.isDebug`` true, ``PORTAL_OPENPAI_DEBUG_KEEP_S`` after it ended; else None."""
    config = job.openpai_config or {}
    if job.status != JobStatus.FAILED or not (config.get("jobEnvs") or {}).get("isDebug"):
        return None
    if job.ended_at is None:
        return None
    return job.ended_at + timedelta(seconds=settings.PORTAL_OPENPAI_DEBUG_KEEP_S)


def debug_keep_message(until: datetime) -> str:
    return (
        f"container kept for inspection until {utc_z(until, timespec='seconds')} "
        "(jobEnvs.isDebug), then removed"
    )
