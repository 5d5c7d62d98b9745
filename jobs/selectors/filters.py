"""The job-list filter, once: the web filter form (``JobFilterForm.job_filter``) and the API's
query parser (``jobs.api.filters.job_filter_from_query``) both build a ``JobFilter``, and its
``apply`` holds the privacy rule.

Privacy rule: a job outside the viewer's projects is shown sanitised (owner, project and name
hidden; see ``jobs.selectors.job_sees_full``). Filters on those hidden fields therefore only
match jobs the viewer sees in full (their projects' jobs; every job for holders of
``jobs.view_job``; the jobs shared with them), so that filtering cannot reveal who owns a sanitised job or what it is
called. Filters on what everybody sees (state, cluster, slave, uuid, interactive, reservation
ids) match every listed job.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast

from accounts.permissions import may_view_all_jobs
from accounts.selectors import project_ids_of
from jobs.selectors import shares_received_by
from jobs.states import DELETED, RUNNING, JobStatus

EVERY_STATE_BUT_DELETED = frozenset(s.value for s in JobStatus) - DELETED


@dataclass(frozen=True)
class JobFilter:
    """What to list. Each ``...s`` field: None means "any"; a set matches any of its values.

    ``usernames`` and ``project_names`` are tuples of sets that must all match (the API accepts
    both ``user_urn`` and ``user_name``, and a job must satisfy both).
    """

    statuses: frozenset[str] = EVERY_STATE_BUT_DELETED
    cluster_ids: frozenset[int] | None = None  # the assigned cluster, else the requested one
    # hidden fields of a sanitised job: only matched on jobs the viewer sees in full
    usernames: tuple[frozenset[str], ...] = ()
    project_names: tuple[frozenset[str], ...] = ()
    project_ids: frozenset[int] | None = None
    name_contains: str = ""
    # seen by everybody
    uuid_prefix: str = ""  # with name_contains: either matches (the web search box)
    slave_names: frozenset[str] | None = None
    interactive: bool | None = None
    reservation_ids: frozenset[str] | None = None
    only_own: bool = False  # the viewer's own jobs ("Only my jobs")
    # gpulab-cli ``jobs -u``: with owner/project filters, also every user's running jobs
    or_running: bool = False

    @property
    def filters_hidden_fields(self) -> bool:
        return bool(self.usernames or self.project_names or self.project_ids is not None)

    def apply(self, queryset: QuerySet, *, viewer) -> QuerySet:
        """``queryset`` narrowed to the jobs this filter selects for ``viewer`` (unordered)."""
        if may_view_all_jobs(viewer):
            seen_in_full = Q()
        else:
            seen_in_full = Q(project_id__in=sorted(project_ids_of(viewer))) | Q(
                pk__in=shares_received_by(viewer).values("job_id")
            )

        left_out = {s.value for s in JobStatus} - self.statuses
        if len(left_out) < len(self.statuses):
            # Name the few states left out (by default only DELETED): "status NOT IN (...)" lets
            # the database walk the created index in list order and stop after one page, where
            # "status IN (twelve states)" makes it sort every matching row first (on SQLite a
            # 100,000-row sort of whole rows for each page).
            queryset = queryset.exclude(status__in=sorted(left_out)) if left_out else queryset
        else:
            queryset = queryset.filter(status__in=sorted(self.statuses))
        if self.cluster_ids is not None:
            ids = sorted(self.cluster_ids)
            queryset = queryset.filter(
                Q(slave__cluster_id__in=ids) | Q(slave__isnull=True, requested_cluster_id__in=ids)
            )
        if self.filters_hidden_fields:
            hidden = Q()
            for names in self.usernames:
                hidden &= Q(owner__username__in=sorted(names))
            for names in self.project_names:
                hidden &= Q(project__name__in=sorted(names))
            if self.project_ids is not None:
                hidden &= Q(project_id__in=sorted(self.project_ids))
            hidden &= seen_in_full
            if self.or_running:
                hidden |= Q(status__in=sorted(RUNNING))
            queryset = queryset.filter(hidden)
        if self.only_own:
            queryset = queryset.filter(owner=viewer)
        if self.slave_names is not None:
            queryset = queryset.filter(slave__name__in=sorted(self.slave_names))
        if self.interactive is not None:
            queryset = queryset.filter(interactive=self.interactive)
        if self.reservation_ids is not None:
            wanted = Q()
            for rid in sorted(self.reservation_ids):
                wanted |= Q(_reservation_ids_text__contains=f'"{rid}"')
            queryset = queryset.annotate(
                _reservation_ids_text=Cast("reservation_ids", TextField())
            ).filter(wanted)
        if self.name_contains or self.uuid_prefix:
            condition = Q(pk__in=[])
            if self.name_contains:
                condition = Q(name__icontains=self.name_contains) & seen_in_full
            if self.uuid_prefix:
                condition |= Q(uuid__istartswith=self.uuid_prefix.lower())
            queryset = queryset.filter(condition)
        return queryset
