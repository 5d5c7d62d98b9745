"""Everything gangs adds to jobs, connected from ``GangsConfig.ready`` (jobs never imports gangs).

- the "openpai" document kind (jobs/spec/document.py): how jobs' submit, convert and Create Job
  page recognise, validate, submit and show an OpenPAI config;
- the whole-gang user actions (jobs/user_actions/registry.py): cancel, hold, release and delete of a
  task act on its gang, and the sentence that says so;
- the run hooks (jobs/execution/run_hooks.py): shm size and read-only codeDir, authFile
  credentials, isDebug containers kept, ports the portal chose for a gang, a gang's containers
  created first and started together;
- the page hooks (jobs/web/page_hooks.py): a gang's row in the jobs list, its section on the job
  page;
- receivers of jobs' signals (jobs/signals.py): a task ended (completion and retry), tasks
  assigned (launch whole), a halt (halt the whole gang), reconcile done (the safety net).
"""

from __future__ import annotations

from datetime import datetime

from gangs import completion, launch, whole
from gangs.authfile import authfile_credentials
from gangs.debug import debug_keep_message, debug_keep_until
from gangs.listing import gang_rows_annotate
from gangs.openpai_config import (
    OPENPAI,
    normalize_openpai,
    read_only_paths,
    role_summaries,
    shm_bytes,
    task_count,
)
from gangs.openpai_submit import openpai_submit
from gangs.ports import port_clash_reason, portal_chosen_ports
from gangs.resubmit import gang_may_resubmit
from gangs.summary import gang_summary
from jobs import signals
from jobs.execution.run_hooks import (
    ContainerExtras,
    KeptContainer,
    PullCredentials,
    run_hooks_register,
)
from jobs.models import Job
from jobs.spec import DocumentKind, SpecDefaults, document_kind_register, redact_image
from jobs.user_actions.registry import whole_gang_actions_register
from jobs.web.page_hooks import JobSection, job_rows_annotate_register, job_section_register

# --- the OpenPAI document kind ----------------------------------------------------------------


def _normalize(doc: object, *, defaults: SpecDefaults) -> dict:
    return normalize_openpai(
        doc, allowed_registries=defaults.allowed_private_registries, limits=defaults.limits
    )


def openpai_summary(config: dict) -> dict:
    """What the Create Job page and its convert answer say of a valid config: its task roles,
    ``runnable`` (one task: it runs as one job) and a ``notice``."""
    count = task_count(config)
    return {
        "taskRoles": role_summaries(config),
        # True: one task, an ordinary job; false: a gang of tasks (both run).
        "runnable": count == 1,
        "notice": (
            "OpenPAI config: runs as one job."
            if count == 1 and not config["retryCount"]
            else f"OpenPAI config: runs as one job of {count} task(s), started together."
        ),
    }


def openpai_submitted(job: Job) -> str:
    """What the Create Job page says of a job submitted from an OpenPAI config: its name, and
    its task roles and tasks as submitted (the config stored with the first task)."""
    config = job.openpai_config or {}
    name = config.get("jobName") or job.name
    roles = config.get("taskRoles") or []
    count = sum(role["taskNumber"] for role in roles)
    if job.gang_id is None:
        role = roles[0]["name"] if roles else job.task_role
        return f"OpenPAI job {name} submitted: one task of task role {role}, as one job"
    each = ", ".join(f"{role['name']} ×{role['taskNumber']}" for role in roles)
    many = f"{len(roles)} task roles" if len(roles) != 1 else "1 task role"
    return f"OpenPAI job {name} submitted: {count} tasks in {many} ({each}), started together"


def _shown(config: dict) -> dict:
    return {**config, "image": redact_image(config["image"], member=True)}


OPENPAI_KIND = DocumentKind(
    name=OPENPAI,
    # Either key makes an OpenPAI config (the seed requires both): a config missing one of them
    # then hears "jobName: is required" rather than that it is no job document at all.
    keys=("jobName", "taskRoles"),
    title="an OpenPAI job config",
    keys_hint='"jobName" and "taskRoles" (OpenPAI)',
    normalize=_normalize,
    submit=openpai_submit,
    summary=openpai_summary,
    create_template="gangs/_create_roles.html",
    shown=_shown,
    submitted=openpai_submitted,
)

# --- the run of an OpenPAI job ------------------------------------------------------------------


def container_extras(job: Job) -> ContainerExtras:
    """A task's shm size (its role's shmMB) and codeDir read-only (docs/openpai.md)."""
    config = job.openpai_config
    if not config:
        return ContainerExtras()
    return ContainerExtras(
        shm_size_bytes=shm_bytes(config, job.task_role),
        read_only_paths=frozenset(read_only_paths(config)),
    )


def pull_credentials(job: Job) -> PullCredentials | None:
    auth = authfile_credentials(job)
    if auth is None:
        return None
    source = f"registry credentials of authFile {(job.openpai_config or {}).get('authFile')}"
    return PullCredentials(auth.username, auth.password, source)


def kept_container(job: Job) -> KeptContainer | None:
    until = debug_keep_until(job)
    if until is None:
        return None
    return KeptContainer(
        until=until,
        kept=debug_keep_message(until),
        removed="debug container removed (jobEnvs.isDebug time is over)",
    )


# --- pages ------------------------------------------------------------------------------------


def job_gang_section(job: Job, user, full: bool) -> dict | None:
    """The job page's gang card: a task's gang (roles x tasks, attempts), to who sees it in
    full."""
    if not full or job.gang is None:
        return None
    return {
        "gang": gang_summary(job.gang),
        "can_resubmit": gang_may_resubmit(user=user, gang_project_id=job.project_id),
    }


# --- jobs' signals ------------------------------------------------------------------------------
# Each calls its service through its module, so a test that replaces one replaces it here too.


def _gang_task_ended(sender, *, gang_id: int, **kwargs) -> None:
    completion.gang_update(gang_id=gang_id)


def _gang_tasks_assigned(sender, *, job_pks: list[int], now: datetime, **kwargs) -> None:
    launch.gang_tasks_assigned(job_pks=job_pks, now=now)


def _job_halt_requested(sender, *, job: Job, halt_info: dict, now: datetime, **kwargs) -> None:
    if job.gang_id:  # halting one task halts its whole gang
        whole.gang_halt(job=job, halt_info=halt_info, now=now)


def _starts_together(job: Job) -> bool:
    return launch.gang_starts_together(job)


def _container_created(job: Job) -> None:
    if job.gang_id:  # every container of the gang created: start them all at once
        launch.gang_task_created(job)


def _reconcile_finished(sender, *, now: datetime | None = None, **kwargs) -> None:
    # Multi-task jobs whose policy update was lost with a worker.
    completion.gang_recheck_all(now=now)


def gangs_connect() -> None:
    """Register everything above with jobs (idempotent: a second call replaces each entry)."""
    document_kind_register(OPENPAI_KIND)
    whole_gang_actions_register(
        services={
            "cancel": whole.gang_cancel_by_user,
            "hold": whole.gang_hold_by_user,
            "release": whole.gang_release_by_user,
            "delete": whole.gang_delete_by_user,
        },
        info=whole.gang_info,
    )
    run_hooks_register(
        container_extras=container_extras,
        pull_credentials=pull_credentials,
        kept_container=kept_container,
        portal_chosen_ports=portal_chosen_ports,
        port_clash_reason=port_clash_reason,
        starts_together=_starts_together,
        container_created=_container_created,
    )
    job_rows_annotate_register("gangs", gang_rows_annotate)
    job_section_register(
        JobSection(name="gangs", template="gangs/_gang.html", context=job_gang_section)
    )
    for signal, receiver in (
        (signals.gang_task_ended, _gang_task_ended),
        (signals.gang_tasks_assigned, _gang_tasks_assigned),
        (signals.job_halt_requested, _job_halt_requested),
        (signals.reconcile_finished, _reconcile_finished),
    ):
        signal.connect(receiver, dispatch_uid=f"gangs.{receiver.__name__}")
