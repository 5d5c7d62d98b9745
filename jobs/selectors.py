"""Who may see and act on which jobs, and the job list's filter. Views, API and admin filter
only through these.

The job-list filter, once: the web filter form (``JobFilterForm.job_filter``) and the API's
query parser (``jobs.api.filters.job_filter_from_query``) both build a ``JobFilter``, and its
``apply`` holds the privacy rule.

Privacy rule: a job outside the viewer's projects is shown sanitised (owner, project and name
hidden; see ``job_sees_full``). Filters on those hidden fields therefore only match jobs the
viewer sees in full (their projects' jobs; every job for holders of ``jobs.view_job``; the jobs
shared with them), so that filtering cannot reveal who owns a sanitised job or what it is
called. Filters on what everybody sees (state, cluster, slave, uuid, interactive, reservation
ids) match every listed job.

How many jobs are in some states (a list's total by state only), without counting them
(``job_count_in_states``): on PostgreSQL, the per-state deltas that triggers on ``jobs_job`` add
(jobs/migrations/0017_job_state_counts.py; the tick folds them, ``job_state_counts_compact`` in
jobs/scheduler_bridge/bulk_writes.py); on SQLite, whose ``COUNT(*)`` of a whole table reads only
its b-tree's page counts, every job less those in the other states. Both answers are exact and
taken in one statement (one snapshot): the deltas are written by the same transactions that
write the jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.db.models import (
    Case,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
    Window,
)
from django.db.models.functions import Cast, Coalesce, RowNumber

from accounts.permissions import (
    may_act_on_all_jobs,
    may_delete_all_jobs,
    may_view_all_jobs,
)
from accounts.permissions import user_is_admin as user_is_admin  # superusers only; see there
from accounts.selectors import project_ids_of as project_ids_of  # re-exported for jobs
from accounts.selectors import projects_of as projects_of
from accounts.selectors import sole_project_of as sole_project_of
from jobs.models import Job, JobShare, UserUsage
from jobs.states import DELETED, EVERY_STATE, RUNNING, JobStatus

# The per-state deltas PostgreSQL's triggers write (jobs/migrations/0017_job_state_counts.py).
STATE_COUNT_DELTAS = "jobs_jobstatecount"


def job_list_visible_to(user) -> QuerySet[Job]:
    """Every job a logged-in user may list (others' projects sanitised when shown)."""
    if isinstance(user, AnonymousUser) or not user.is_authenticated:
        return Job.objects.none()
    # Not slave__cluster: pages and answers show the slave's cluster_id, not its row.
    return Job.objects.select_related("owner", "project", "slave", "explanation").annotate(
        shared_with_viewer=Exists(shares_received_by(user).filter(job=OuterRef("pk")))
    )


def job_visible_to(user, job_uuid) -> Job | None:
    """``job_list_visible_to(user)``'s job of this uuid: with its owner, project, slave,
    explanation and ``shared_with_viewer`` (one query), or None."""
    try:
        return job_list_visible_to(user).get(uuid=job_uuid)
    except Job.DoesNotExist:
        return None


def shares_received_by(user) -> QuerySet[JobShare]:
    """The shares that give ``user`` a full read of a job: to them, or to one of their
    projects."""
    if not user or not user.is_authenticated:
        return JobShare.objects.none()
    return JobShare.objects.filter(
        Q(grantee_user_id=user.pk) | Q(grantee_project_id__in=project_ids_of(user))
    )


def job_shared_with(user, job: Job) -> bool:
    """The job is shared with ``user`` (read-only). A job loaded through
    ``job_list_visible_to(user)`` carries the answer already (no query per listed job)."""
    known = getattr(job, "shared_with_viewer", None)
    if known is not None:
        return bool(known)
    return shares_received_by(user).filter(job_id=job.pk).exists()


def job_list_not_deleted(queryset: QuerySet[Job]) -> QuerySet[Job]:
    return queryset.exclude(status__in=DELETED)


def job_sees_full(user, job: Job) -> bool:
    """Members of the job's project, holders of ``jobs.view_job`` (superusers) and the people
    the job is shared with (jobs/user_actions/shares.py) see everything: request, history, log, outputs;
    others a sanitised copy. The one read rule of every page, API and download."""
    if job.project_id in project_ids_of(user) or may_view_all_jobs(user):
        return True
    return job_shared_with(user, job)


def job_can_act(user, job: Job, *, delete: bool = False) -> bool:
    """Members of the job's project cancel, halt, hold, release and delete it; anyone else
    needs ``jobs.change_job`` (``jobs.delete_job`` to delete): ``is_staff`` alone is not enough."""
    if job.project_id in project_ids_of(user):
        return True
    return may_delete_all_jobs(user) if delete else may_act_on_all_jobs(user)


# --- how many jobs are in some states ---------------------------------------------------------


def _keeps_deltas() -> bool:
    return connection.vendor == "postgresql"


def job_count_in_states(statuses) -> int:
    """The number of jobs whose status is one of ``statuses``."""
    wanted = sorted(set(statuses))
    if not wanted:
        return 0
    if _keeps_deltas():
        marks = ", ".join(["%s"] * len(wanted))
        sql = f"SELECT COALESCE(SUM(delta), 0) FROM {STATE_COUNT_DELTAS} WHERE status IN ({marks})"
        params = wanted
    else:
        table = connection.ops.quote_name(Job._meta.db_table)
        left_out = sorted(EVERY_STATE - set(wanted))
        if not left_out:
            sql, params = f"SELECT COUNT(*) FROM {table}", []
        else:
            marks = ", ".join(["%s"] * len(left_out))
            sql = (
                f"SELECT (SELECT COUNT(*) FROM {table})"
                f" - (SELECT COUNT(*) FROM {table} WHERE status IN ({marks}))"
            )
            params = left_out
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])


# --- the job list's filter -------------------------------------------------------------------

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
    # The jobs of one array submission (a sweep, ``Job.array_id``), and the web table's
    # grouping: an array is one row, its first job among those the other fields select.
    array_id: str | None = None
    one_row_per_array: bool = False

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
        filter by state only is then answered without counting jobs (``job_count_in_states``), and
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
        if self.array_id is not None:
            queryset = queryset.filter(array_id=self.array_id)
        if self.one_row_per_array:
            # The first of each array's jobs that pass every filter above: a group is listed
            # whenever any of its jobs matches.
            first = queryset.filter(array_id=OuterRef("array_id")).order_by("id").values("id")[:1]
            queryset = queryset.filter(Q(array_id__isnull=True) | Q(pk=Subquery(first)))
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


def queue_positions(jobs: list[Job]) -> dict[int, int]:
    """Each QUEUED job's place in the scheduler's queue order (1 starts first), for the jobs
    shown. The order is ``jobs.scheduler.ordering.queue_key`` with the owners' fair-share usage
    as of the last tick (``SORTS["queue"]`` sorts by the same key). The
    database numbers the whole queue (a window function) and answers only the shown jobs."""
    wanted = [job.pk for job in jobs if job.status == JobStatus.QUEUED]
    if not wanted:
        return {}
    ranked = annotate_queue_key(Job.objects.filter(status=JobStatus.QUEUED)).annotate(
        _place=Window(
            RowNumber(),
            order_by=[
                F("interactive").desc(),
                F("_queue_usage").asc(),
                F("max_duration_s").asc(),
                F("created").asc(),
                F("id").asc(),
            ],
        )
    )
    return dict(ranked.filter(pk__in=wanted).values_list("pk", "_place"))
