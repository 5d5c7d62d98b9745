"""Everything interactive adds to jobs, connected from ``InteractiveConfig.ready`` (jobs never
imports this app).

- the run hook (jobs/execution/run_hooks.py ``container_extras``): a session's container gets its
  app token (``JUPYTER_TOKEN``) in its environment, never in the job's request;
- a receiver of ``job_status_changed`` (jobs/signals.py): a session's upstream ("ip:port" of the
  container on its bridge network) is recorded once its job runs and cleared once it ends;
- the page hooks (jobs/web/page_hooks.py): the session's card on its job page, and the
  "Open port N through the portal" buttons of a running job's declared web ports.
"""

from __future__ import annotations

from dataclasses import replace

from jobs import signals
from jobs.execution.run_hooks import ContainerExtras, run_hooks, run_hooks_register
from jobs.models import Job
from jobs.states import JobStatus
from jobs.web.page_hooks import job_section_register

ENDED = frozenset(
    {
        JobStatus.FINISHED,
        JobStatus.FAILED,
        JobStatus.CANCELLED,
        JobStatus.CANCELLING,
        JobStatus.HALTED,
        JobStatus.DELETED,
    }
)


def session_env(job: Job) -> dict[str, str]:
    """The app's secret in the container's environment: JupyterLab reads JUPYTER_TOKEN, and the
    proxy sends the same token upstream, so only the proxy's users reach the app."""
    from interactive.models import InteractiveSession

    token = (
        InteractiveSession.objects.filter(job_id=job.pk, template__isnull=False)
        .values_list("app_token", flat=True)
        .first()
    )
    return {"JUPYTER_TOKEN": token} if token else {}


def _with_session_env(before):
    def container_extras(job: Job) -> ContainerExtras:
        extras = before(job)
        env = session_env(job) if job.interactive else {}
        return replace(extras, env={**extras.env, **env}) if env else extras

    container_extras.interactive_wrapped = True  # type: ignore[attr-defined]
    return container_extras


def on_job_status_changed(sender, *, job: Job, status: str, **kwargs) -> None:
    """Record a session's upstream when its job runs; clear it when the job ends. Any job's
    web ports (interactive/web_ports.py, any job, interactive or not) are cleared likewise."""
    from interactive.models import InteractiveSession
    from interactive.services import session_upstream_clear, session_upstream_record

    if status == JobStatus.RUNNING and job.interactive:
        for session in InteractiveSession.objects.select_related("job__slave").filter(job=job):
            session_upstream_record(session=session)
    elif status in ENDED:
        session_upstream_clear(job=job)


def interactive_connect() -> None:
    before = run_hooks().container_extras
    if not getattr(before, "interactive_wrapped", False):  # ready() may run twice in tests
        run_hooks_register(container_extras=_with_session_env(before))
    signals.job_status_changed.connect(
        on_job_status_changed, sender=Job, dispatch_uid="interactive-status"
    )
    from interactive.web import SESSION_SECTION, WEB_PORTS_SECTION

    job_section_register(SESSION_SECTION)
    job_section_register(WEB_PORTS_SECTION)
