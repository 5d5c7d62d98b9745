"""The user actions on a job, once: cancel, halt, hold, release, delete.

Each entry names its service, the states that allow it, who may take it (``allowed``: the job's
project members, or the admin powers of ``job_can_act``), its label, confirmation question and
done message, the GPULab status that asks for it over the API (``PUT jobs/<id>/state/status``)
and its admin action. The job page, the URL patterns, the API and the admin read this table;
none of them lists the actions itself.

A task of a multi-task OpenPAI job is never acted on alone: the app that owns gangs (gangs/)
registers here, from its ``AppConfig.ready``, the service that takes an action on the whole
gang (``whole_gang_actions_register``) and the sentence pages and the API add after it.
``JobAction.run`` takes that service for a job with ``gang_id`` set. Halting needs no entry: a
halt of one task is a system halt (the scheduler halts tasks too), and the gangs app halts the
rest of the gang on ``jobs.signals.job_halt_requested``.

The jobs table acts on many jobs at once through the same entries (``job_bulk_act``, at the end
of this module): each selected job goes through the service of its own button (cancel, hold,
release, delete), so permission and state checks hold, and every refusal is reported per job
instead of failing the whole batch.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from core.errors import NotAllowed, ServiceError
from jobs.models import Job
from jobs.selectors import job_can_act
from jobs.states import FINISHED, HOLDS_RESOURCES, PENDING, JobStatus
from jobs.user_actions.services import (
    job_cancel,
    job_delete,
    job_halt_request,
    job_hold,
    job_release,
)


def _delete_ended(*, job: Job, user, **options) -> Job | None:
    """A user's delete hides an ended job too (``gpulab-cli rm --finished``); the API passes
    its own flags (``finished``, ``real``, ``force``) in ``options``."""
    return job_delete(job=job, user=user, **{"finished": True, **options})


# Action name -> ``service(job=, user=, **options)`` acting on the whole gang of ``job``
# (permission checked here first), and the sentence said after such an action. Filled by gangs.
_WHOLE_GANG: dict[str, Callable[..., Job | None]] = {}
_WHOLE_GANG_INFO: list[Callable[[Job, str], str]] = []


def whole_gang_actions_register(
    *, services: Mapping[str, Callable[..., Job | None]], info: Callable[[Job, str], str]
) -> None:
    """gangs: the whole-gang service of each action it takes over (by action name), and
    ``info(job, verb)``: what the page and the API's ``X-Portal-Info`` say after it."""
    unknown = set(services) - set(ACTIONS)
    if unknown:
        raise ValueError(f"no such job action: {', '.join(sorted(unknown))}")
    _WHOLE_GANG.clear()
    _WHOLE_GANG.update(services)
    _WHOLE_GANG_INFO[:] = [info]


def whole_gang_info(job: Job, verb: str) -> str | None:
    """What to say after ``verb`` acted on ``job`` when it is a task of a gang (the whole gang
    was acted on), else None."""
    if not job.gang_id or not _WHOLE_GANG_INFO:
        return None
    return _WHOLE_GANG_INFO[0](job, verb)


@dataclass(frozen=True)
class JobAction:
    name: str  # also the URL name (``jobs:<name>``) and the page's button id
    label: str
    style: str  # Bootstrap button style on the job page
    question: str  # the confirmation, with ``{name}`` for the job's name
    done: str  # the message once done, with ``{name}``
    states: Callable[[str], bool]  # whether a job in this state allows the action
    service: Callable[..., Job | None]  # ``service(job=..., user=...)``, checks permission itself
    api_status: str | None  # the GPULab status the API takes for it
    admin_name: str | None  # the admin action (None: not offered there)
    admin_description: str = ""
    admin_verb: str = ""  # "Cancelled 3 job(s)"
    needs_confirmation: bool = True

    @property
    def deletes(self) -> bool:
        return self.service is _delete_ended

    @property
    def admin_permission(self) -> str:
        return "delete" if self.deletes else "change"

    def state_allows(self, job: Job) -> bool:
        return self.states(job.status)

    def allowed(self, job: Job, user) -> bool:
        """The job's state allows it now and ``user`` may act on the job."""
        return self.state_allows(job) and job_can_act(user, job, delete=self.deletes)

    def run(self, *, job: Job, user, **options) -> Job | None:
        """Take the action as ``user`` (permission checked); on a task of a gang, on the whole
        gang. ``options``: what the service takes besides (a cancel's ``reason``, the API
        delete's flags)."""
        whole = _WHOLE_GANG.get(self.name) if job.gang_id else None
        if whole is None:
            return self.service(job=job, user=user, **options)
        if not job_can_act(user, job, delete=self.deletes):
            raise NotAllowed("only members of the job's project may act on it")
        return whole(job=job, user=user, **options)


ACTIONS: dict[str, JobAction] = {
    action.name: action
    for action in (
        JobAction(
            name="cancel",
            label="Cancel",
            style="outline-danger",
            question="Cancel job {name}? A job on a slave is stopped; this cannot be undone.",
            done="Job {name} is being cancelled.",
            states=lambda s: s in PENDING or (s in HOLDS_RESOURCES and s != JobStatus.CANCELLING),
            service=job_cancel,
            api_status=JobStatus.CANCELLED,
            admin_name="cancel",
            admin_description="Cancel selected jobs",
            admin_verb="Cancelled",
        ),
        JobAction(
            name="halt",
            label="Halt",
            style="outline-dark",
            question="Halt job {name}? It gets SIGUSR1 and must exit with status 123 within the "
            "grace period (a restartable job is queued again).",
            done="Halt requested for job {name}.",
            states=lambda s: s == JobStatus.RUNNING,
            service=job_halt_request,
            api_status=JobStatus.MUSTHALT,
            admin_name=None,
        ),
        JobAction(
            name="hold",
            label="Hold",
            style="outline-secondary",
            question="Put job {name} on hold? It stays in the queue but is not started until "
            "released.",
            done="Job {name} is on hold.",
            states=lambda s: s == JobStatus.QUEUED,
            service=job_hold,
            api_status=JobStatus.ONHOLD,
            admin_name="hold",
            admin_description="Put selected jobs on hold",
            admin_verb="Held",
        ),
        JobAction(
            name="release",
            label="Release",
            style="outline-primary",
            question="Release job {name}? It goes back to the queue.",
            done="Job {name} was released to the queue.",
            states=lambda s: s == JobStatus.ONHOLD,
            service=job_release,
            api_status=JobStatus.QUEUED,
            admin_name="release",
            admin_description="Release selected jobs",
            admin_verb="Released",
        ),
        JobAction(
            name="delete",
            label="Delete",
            style="outline-danger",
            question="Delete job {name}? It disappears from the job list (its history is kept).",
            done="Job {name} was deleted.",
            states=lambda s: s in FINISHED,
            service=_delete_ended,
            api_status=None,  # the API deletes with DELETE jobs/<id> and its own flags
            admin_name="delete_jobs",
            admin_description="Delete (hide) selected finished jobs",
            admin_verb="Deleted",
        ),
    )
}
ACTION_BY_API_STATUS: dict[str, JobAction] = {
    a.api_status: a for a in ACTIONS.values() if a.api_status is not None
}


def actions_allowed(job: Job, user) -> list[JobAction]:
    """The actions ``user`` may take on ``job`` now, in the registry's order."""
    return [action for action in ACTIONS.values() if action.allowed(job, user)]


# --- bulk actions from the jobs table ----------------------------------------------------------

BULK_ACTIONS = ("cancel", "hold", "release", "delete")
# At most this many jobs in one bulk request: a page of the jobs table's largest size
# (jobs/web/views/lists.py, PAGE_SIZES).
BULK_LIMIT = 200

# name -> (label, what it does to a job: shown on the confirmation)
BULK_LABELS = {
    "cancel": ("Cancel", "cancelled (a job on a slave is stopped)"),
    "hold": ("Hold", "put on hold"),
    "release": ("Release", "released to the queue"),
    "delete": ("Delete", "deleted from the list (their history is kept)"),
}


def job_act(*, job: Job, user, action: str) -> Job | None:
    """Run one action on one job through its service (ServiceError when refused)."""
    if action not in ACTIONS:
        raise ServiceError(f"action: unknown action {action!r}")
    return ACTIONS[action].run(job=job, user=user)


@dataclass
class BulkOutcome:
    job: Job
    done: bool
    message: str


def job_bulk_preview(*, jobs: list[Job], user, action: str) -> list[BulkOutcome]:
    """What ``job_bulk_act`` would do, for the confirmation: the refusals known beforehand."""
    outcomes = []
    for job in jobs:
        if not job_can_act(user, job):
            outcomes.append(BulkOutcome(job, False, "only members of the job's project may act"))
        elif action not in allowed_for(job):
            outcomes.append(BulkOutcome(job, False, f"not possible while {job.status}"))
        else:
            outcomes.append(BulkOutcome(job, True, BULK_LABELS[action][1]))
    return outcomes


def allowed_for(job: Job) -> set[str]:
    """The actions the job's state allows (the same rule as the job page's buttons)."""
    return {name for name, action in ACTIONS.items() if action.state_allows(job)}


def job_bulk_act(*, jobs: list[Job], user, action: str) -> list[BulkOutcome]:
    """Run ``action`` on each job through its service; one outcome per job, refusals included
    (the service's own message: state, permission)."""
    if action not in BULK_ACTIONS:
        raise ServiceError(f"action: must be one of {', '.join(BULK_ACTIONS)}")
    outcomes = []
    for job in jobs:
        try:
            job_act(job=job, user=user, action=action)
        except ServiceError as error:
            outcomes.append(BulkOutcome(job, False, str(error)))
        else:
            outcomes.append(BulkOutcome(job, True, BULK_LABELS[action][1]))
    return outcomes
