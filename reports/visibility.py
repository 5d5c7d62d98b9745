"""Who sees which rows of a report: the one rule the pages, the downloads, the API and the
monthly e-mail follow (views never filter by themselves).

The Usage page shows a user their own GPU-hours and their projects' totals; reports follow it:

* holders of ``jobs.view_job`` (admins; the power that shows every job in full) see everything;
* a project's **managers** (Membership role ``manager``: they may act on every job of it) see
  its per-user rows;
* everyone sees their own per-user row and the totals of their projects (per project, per
  cluster and the sizes table), as the Usage page does.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from accounts.models import Membership
from accounts.permissions import may_view_all_jobs


@dataclass(frozen=True)
class ReportViewer:
    everything: bool
    user_id: int | None
    project_ids: frozenset[int]  # their projects: totals
    managed_ids: frozenset[int]  # the projects they manage: per-user rows


def report_viewer_of(user) -> ReportViewer:
    if may_view_all_jobs(user):
        return ReportViewer(True, user.pk, frozenset(), frozenset())
    if user is None or not user.is_authenticated:
        return ReportViewer(False, None, frozenset(), frozenset())
    roles = Membership.objects.filter(user=user).order_by().values_list("project_id", "role")
    projects = {pid for pid, _ in roles}
    managed = {pid for pid, role in roles if role == Membership.Role.MANAGER}
    return ReportViewer(False, user.pk, frozenset(projects), frozenset(managed))


def report_runs_scope(viewer: ReportViewer, by: str) -> Q | None:
    """The jobs whose runs the viewer's rows may add up for a report ``by`` (None: all).
    Per-user rows (``user``, ``member``): their own jobs and their managed projects'; totals
    (``project``, ``cluster``, sizes): their projects' jobs."""
    if viewer.everything:
        return None
    if viewer.user_id is None:
        return Q(pk__in=[])
    if by in ("user", "member"):
        return Q(owner_id=viewer.user_id) | Q(project_id__in=sorted(viewer.managed_ids))
    return Q(project_id__in=sorted(viewer.project_ids))
