"""Helpers shared by the job pages: loading a visible job, sanitised display values."""

from django.http import Http404
from django.utils import timezone

from jobs.api.gpulab_json import job_sanitised_name
from jobs.models import Job
from jobs.selectors import job_list_visible_to, job_sees_full
from jobs.states import ACTIVE
from jobs.user_actions.registry import actions_allowed

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
    job.ui_run_seconds = job.run_seconds(now or timezone.now())
    return job


def action_buttons(job: Job, user) -> list[dict]:
    """The job page's buttons: the registry's actions ``user`` may take on ``job`` now."""
    return [
        {
            "name": action.name,
            "label": action.label,
            "style": action.style,
            "question": action.question.format(name=job.name),
        }
        for action in actions_allowed(job, user)
    ]
