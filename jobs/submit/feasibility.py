"""Feasibility at submit: could any registered slave ever run this request?

The same rules the scheduler explains a queued job with (``jobs.scheduler.explain``), applied
to the request as if it were queued now, on the registered slaves as the bridge sees them.
"""

from django.utils import timezone

from clusters.models import Slave
from jobs.scheduler.explain import gang_impossible_reasons, impossible_reason
from jobs.scheduler.quota_ledger import quota_impossible
from jobs.scheduler_bridge.quota_usage import quota_limit
from jobs.scheduler_bridge.snapshot import (
    PORT_MAPPINGS,
    QUEUED_FIELDS,
    queued_job,
    scheduler_config,
    slave_state,
)
from jobs.submit.request_columns import columns_from_request
from quotas.selectors import month_end, quotas_in_force


def impossible_reason_for_request(
    *, request: dict, project, slaves: list[Slave] | None = None, states=None
) -> str | None:
    """Why no registered slave could ever run this request (None when some could).

    Pass the slaves, or their ``slave_state``s (the submit check keeps those cached).
    """
    if states is None:
        states = [slave_state(s) for s in slaves or ()]
    if not states:
        return None  # an empty portal accepts jobs: slaves may be registered later
    job = _checked_job(request, project)
    return impossible_reason(job, list(states), config=scheduler_config())


def quota_refusal_for_request(*, request: dict, project, user: str) -> str | None:
    """Why a hard limit of the project, the user or the user within the project could never
    let this request run (more GPUs than it may hold at once, more hours than a month's
    budget), or None. Usage does not matter here: the budget renews every month."""
    limits = quotas_in_force(projects=[project.name], users=[user] if user else [])
    if not limits:
        return None
    renews = month_end(timezone.now())
    job = _checked_job(request, project, owner__username=user)
    return quota_impossible(job, [quota_limit(q, None, renews) for q in limits])


def _checked_job(request: dict, project, **extra):
    """The scheduler's view of a job of ``request`` that is being submitted."""
    columns = columns_from_request(request)
    row = {
        "uuid": "submit-check",
        "owner__username": "",
        "project__name": project.name,
        "created": timezone.now(),
        "queued_explanations": [],
        **extra,
        **{k: columns[k] for k in columns if k in QUEUED_FIELDS},
    }
    return queued_job(row)


def gang_impossible_reasons_for_requests(
    *, roles: list[tuple[dict, int]], project, states
) -> list[tuple[int | None, str]]:
    """Why the registered slaves could never hold every task of a gang at once
    (``jobs.scheduler.explain.gang_impossible_reasons``). ``roles``: one canonical v2 request
    of each role and its number of tasks; ``states``: the slaves' ``slave_state``s."""
    jobs = []
    for request, count in roles:
        ports = {PORT_MAPPINGS: request["docker"].get("portMappings")}
        jobs.append((_checked_job(request, project, **ports), count))
    return gang_impossible_reasons(jobs, list(states), config=scheduler_config())
