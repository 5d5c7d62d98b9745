"""Resubmit a multi-task OpenPAI job as a copy: a new gang from the same config, linked to the
old one (``JobGang.copy_of``), submitted with every check of a new submission (docs/openpai.md,
"Resubmit as a copy")."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.permissions import may_submit_to_any_project
from accounts.selectors import project_ids_of
from gangs.models import JobGang
from jobs.models import Job, JobPullSecret
from jobs.states import JobStatus
from jobs.transitions import job_event_add
from jobs.user_actions.services import job_submit

NAME_MAX = 200  # the job name column


def gang_may_resubmit(*, user, gang_project_id: int) -> bool:
    """Whether ``user`` may submit to the gang's project (the page shows the button then; the
    submit checks it again)."""
    return gang_project_id in project_ids_of(user) or may_submit_to_any_project(user)


def _name_taken(*, user, name: str) -> bool:
    # The submit's own rule (gangs.openpai_submit): a job of the user, or a multi-task job of
    # the user whose tasks are not deleted, with that name.
    return (
        Job.objects.filter(owner=user, name=name).exclude(status=JobStatus.DELETED).exists()
        or JobGang.objects.filter(owner=user, name=name)
        .exclude(tasks__status=JobStatus.DELETED)
        .exists()
    )


def gang_copy_name(*, user, gang: JobGang) -> str:
    """The first free name of ``<jobName>-copy``, ``<jobName>-copy2``, ... among the user's
    jobs (a jobName is unique among a user's jobs)."""
    number = 1
    while True:
        suffix = "-copy" if number == 1 else f"-copy{number}"
        name = gang.name[: NAME_MAX - len(suffix)] + suffix
        if not _name_taken(user=user, name=name):
            return name
        number += 1


def gang_resubmit(
    *, user, gang: JobGang, job_name: str | None = None, now: datetime | None = None
) -> Job:
    """Submit ``gang``'s config again as a new gang named ``job_name`` (default
    ``gang_copy_name``) in the gang's project, owned by ``user``; answer its first task.

    The submit's checks apply (membership of the project: NotAllowed; jobName and the config's
    rules, slaves: SpecError); nothing is written unless all pass. The stored config has the
    image's registry password masked: the image is taken back from the tasks' pull secret.
    """
    now = now or timezone.now()
    image = (
        JobPullSecret.objects.filter(job__gang=gang).values_list("image", flat=True).first()
        or gang.config["image"]
    )
    name = job_name if job_name is not None else gang_copy_name(user=user, gang=gang)
    document = {**gang.config, "image": image, "jobName": name}
    with transaction.atomic():  # the copy, its link and events, or nothing
        first = job_submit(user=user, project=gang.project, document=document, now=now)
        assert first.gang_id is not None  # the first task of the copy
        JobGang.objects.filter(pk=first.gang_id).update(copy_of=gang)
        job_event_add(
            job=first,
            message=f"resubmitted as a copy of OpenPAI job {gang.name} ({gang.uuid})",
            now=now,
        )
        old_first = Job.objects.filter(gang=gang, gang_attempt=gang.attempt).order_by("id").first()
        if old_first is not None:
            job_event_add(
                job=old_first, message=f"resubmitted as a copy: OpenPAI job {name}", now=now
            )
    return first
