"""Helpers shared by the job pages: loading a visible job, sanitised display values."""

from django.http import Http404
from django.utils import timezone

from jobs.gpulab_json import job_sanitised_name
from jobs.job_table import allowed_actions
from jobs.models import Job
from jobs.selectors import job_list_visible_to, job_sees_full
from jobs.states import ACTIVE, HOLDS_RESOURCES, JobStatus

S = JobStatus
HIDDEN = "hidden"


def visible_job(user, uuid, *, related=()) -> Job:
    """The job with this uuid if ``user`` may see it (in full or sanitised), else 404."""
    job = job_list_visible_to(user).select_related(*related).filter(uuid=uuid).first()
    if job is None:
        raise Http404("no such job")
    return job


def present(job: Job, user, *, now=None) -> Job:
    """Attach what a page shows of ``job`` to ``user``: ``ui_full``, ``ui_name``,
    ``ui_owner``, ``ui_project``, ``ui_image``, ``ui_run_seconds``, ``ui_active``.

    People outside the job's project see it as GPULab's API shows it: ``job-<6 chars>``, owner,
    project and image hidden.
    """
    full = job_sees_full(user, job)
    job.ui_full = full
    job.ui_name = job.name if full else job_sanitised_name(job)
    job.ui_owner = job.owner.username if full else HIDDEN
    job.ui_project = job.project.name if full else HIDDEN
    image = ((job.request or {}).get("docker") or {}).get("image") or ""
    job.ui_image = image if full else HIDDEN
    job.ui_active = job.status in ACTIVE
    job.ui_run_seconds = run_seconds(job, now=now)
    return job


def run_seconds(job: Job, *, now=None) -> int | None:
    """How long this job (not its restart chain) has run, or None when it never started."""
    if job.started_at is None:
        return None
    end = job.ended_at
    if end is None:
        if job.status in HOLDS_RESOURCES:
            end = now or timezone.now()
        else:
            end = job.status_updated
    return max(0, int((end - job.started_at).total_seconds()))


# Actions a member can take, per state: name -> (label, button style, question, done message).
ACTIONS = {
    "cancel": (
        "Cancel",
        "outline-danger",
        "Cancel job {name}? A job on a slave is stopped; this cannot be undone.",
        "Job {name} is being cancelled.",
    ),
    "halt": (
        "Halt",
        "outline-dark",
        "Halt job {name}? It gets SIGUSR1 and must exit with status 123 within the grace "
        "period (a restartable job is queued again).",
        "Halt requested for job {name}.",
    ),
    "hold": (
        "Hold",
        "outline-secondary",
        "Put job {name} on hold? It stays in the queue but is not started until released.",
        "Job {name} is on hold.",
    ),
    "release": (
        "Release",
        "outline-primary",
        "Release job {name}? It goes back to the queue.",
        "Job {name} was released to the queue.",
    ),
    "delete": (
        "Delete",
        "outline-danger",
        "Delete job {name}? It disappears from the job list (its history is kept).",
        "Job {name} was deleted.",
    ),
}


def action_buttons(job: Job) -> list[dict]:
    result = []
    for name in allowed_actions(job):
        label, style, question, _done = ACTIONS[name]
        result.append(
            {
                "name": name,
                "label": label,
                "style": style,
                "question": question.format(name=job.name),
            }
        )
    return result
