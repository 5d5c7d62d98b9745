"""The quota filter: the ``JOB`` stage of ``pipeline.PIPELINE`` (``quota_ledger.py`` counts).

A limit is the same on every slave, so the filter is asked once per job, before any slave is
looked at; its line is the job's explanation, as a full bucket's is.
"""

from __future__ import annotations

from typing import Any

from .filters import BaseFilter, Env, Stage
from .model import QueuedJob
from .shape import Shape


class QuotaFilter(BaseFilter):
    """The hard levels of the quotas that apply to a job (``QuotaLedger.blocked``)."""

    name = "quota"
    stage = Stage.JOB

    def rejects(self, shape: Shape | None, target: Any, env: Env) -> str | None:
        ledger = env.ctx.quotas if env.ctx is not None else None
        if ledger is None:
            return None
        assert isinstance(target, QueuedJob)
        return ledger.blocked(target)

    def summarize(
        self, shape: Shape, rejected: Any, env: Env, *args: Any, **kwargs: Any
    ) -> list[str]:
        return []


QUOTA = QuotaFilter()
