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

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Case, F, OuterRef, Q, QuerySet, Subquery, TextField, Value, When
from django.db.models.functions import Cast, Coalesce

from accounts.permissions import may_view_all_jobs
from accounts.selectors import project_ids_of
from jobs.models import Job, UserUsage
from jobs.selectors import shares_received_by
from jobs.state_counts import job_count_in_states
from jobs.states import DELETED, EVERY_STATE, RUNNING, JobStatus

EVERY_STATE_BUT_DELETED = EVERY_STATE - DELETED


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
    # The web table's order (``SORTS``: "created", "-gpus", ...); "" is newest first.
    sort: str = ""
    # The web table: a multi-task OpenPAI job is one row, its first task of the current
    # attempt (gangs.listing adds the task counts); the GPULab API lists every task.
    one_row_per_gang: bool = False

    @property
    def filters_hidden_fields(self) -> bool:
        return bool(self.usernames or self.project_names or self.project_ids is not None)

    @property
    def narrows_by_state_only(self) -> bool:
        """Nothing but ``statuses`` (and the order) differs from the defaults."""
        return self == JobFilter(statuses=self.statuses, sort=self.sort)

    def count(self, filtered: Callable[[], QuerySet], *, of_every_job: bool) -> int:
        """How many jobs ``filtered()`` (``apply`` of this filter) holds. ``of_every_job``: it
        was applied to every job (the API's list: every logged-in user lists every job); a
        filter by state only is then answered without counting jobs (jobs.state_counts), and
        without building the query."""
        if not (of_every_job and self.narrows_by_state_only):
            return filtered().count()
        return job_count_in_states(self.statuses)

    def apply(self, queryset: QuerySet, *, viewer) -> QuerySet:
        """``queryset`` narrowed to the jobs this filter selects for ``viewer`` (unordered)."""

        def seen_in_full() -> Q:
            # Only filters on hidden fields need it: building the shares subquery for every
            # list page cost 1 ms of CPU.
            if may_view_all_jobs(viewer):
                return Q()
            return Q(project_id__in=sorted(project_ids_of(viewer))) | Q(
                pk__in=shares_received_by(viewer).values("job_id")
            )

        left_out = EVERY_STATE - self.statuses
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
            hidden &= seen_in_full()
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
                condition = Q(name__icontains=self.name_contains) & seen_in_full()
            if self.uuid_prefix:
                condition |= Q(uuid__istartswith=self.uuid_prefix.lower())
            queryset = queryset.filter(condition)
        if self.one_row_per_gang:
            queryset = queryset.filter(gang_row_only())
        return queryset

    def order(self, queryset: QuerySet, *, viewer) -> QuerySet:
        """``queryset`` in the order ``sort`` names (unknown keys: newest first).

        The privacy rule holds for the order too: sorting by name, owner or project compares
        those values only among jobs the viewer sees in full; sanitised jobs sort after them
        as if the value were unknown, so their place reveals nothing.
        """
        key = self.sort.lstrip("-")
        if key not in SORTS:
            return queryset.order_by("-created", "-id")
        descending = self.sort.startswith("-")
        fields = SORTS[key]
        if key in HIDDEN_SORTS and not may_view_all_jobs(viewer):
            seen = Q(project_id__in=sorted(project_ids_of(viewer)))
            queryset = queryset.annotate(
                _sort_hidden=Case(When(seen, then=F(fields[0])), default=Value(None))
            )
            fields = ("_sort_hidden",)
        if key == "queue":
            queryset = annotate_queue_key(queryset)
        order = []
        for field in fields:
            flip = descending != field.startswith("-")
            expression = F(field.lstrip("-"))
            order.append(
                expression.desc(nulls_last=True) if flip else expression.asc(nulls_last=True)
            )
        return queryset.order_by(*order, "-id" if descending else "id")


def gang_row_only() -> Q:
    """Jobs that are no gang task, and of each gang its first task of the current attempt
    (the task the submit answered); filters then apply to that task."""
    first_task = (
        Job.objects.filter(gang_id=OuterRef("gang_id"), gang_attempt=OuterRef("gang__attempt"))
        .order_by("id")
        .values("id")[:1]
    )
    return Q(gang__isnull=True) | Q(gang_attempt=F("gang__attempt"), pk=Subquery(first_task))


# The web table's sortable columns: key -> fields (a "-" field runs the other way).
SORTS: dict[str, tuple[str, ...]] = {
    "state": ("status",),
    "name": ("name",),
    "project": ("project__name",),
    "owner": ("owner__username",),
    "gpus": ("gpus",),
    "created": ("created",),
    "started": ("started_at",),
    "exit": ("exit_code",),
    # The scheduler's queue order (jobs.scheduler.ordering.queue_key): queued jobs first.
    "queue": ("_queue_not_queued", "-interactive", "_queue_usage", "max_duration_s", "created"),
}
HIDDEN_SORTS = frozenset({"name", "project", "owner"})


def annotate_queue_key(queryset: QuerySet) -> QuerySet:
    """The fields of the scheduler's queue key: not queued last, interactive first, then the
    owner's fair-share usage (as of the last tick), maxDuration and submit time."""
    usage = UserUsage.objects.filter(user=OuterRef("owner_id")).values("value")[:1]
    return queryset.annotate(
        _queue_not_queued=Case(When(status=JobStatus.QUEUED, then=Value(0)), default=Value(1)),
        _queue_usage=Coalesce(Subquery(usage), Value(0.0)),
    )
