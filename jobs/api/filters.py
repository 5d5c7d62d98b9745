"""Query parameters of ``GET jobs`` (docs/gpulab-format.md, section 4), parsed strictly: a bad
value is a 400 that names the parameter, never a 500 and never silently ignored.

- state groups ``pending``, ``running``, ``finished``, ``deleted`` (booleans). Some true: the
  union of those groups. None true: every state but DELETED, minus the groups given as false.
- ``allowed_states``: comma list of state names (case-insensitive); overrides the groups.
- comma lists ``cluster_id`` (the assigned cluster, else the requested one), ``user_urn``,
  ``user_name``, ``project_urn``, ``project_name``, ``assigned_slave_name``.
- ``interactive`` (boolean), ``reservation_id`` (comma list of UUIDs the job names).
- ``other_user_running`` (boolean, sent by ``gpulab-cli jobs -u``): with owner or project
  filters, also list every user's jobs of the running group.
- ``sort``: comma list of fields from SORT_FIELDS, ``-`` prefix for descending.
- ``page`` (from 1) and ``page_size`` (default 10, at most 200): ``paginate``.

Choice where GPULab is silent: owner and project filters only match jobs the caller sees in
full (their projects' jobs; every job for admins), so that filtering cannot reveal who owns a
sanitised job. That rule lives in ``jobs.selectors.JobFilter.apply``, shared with the web list.
"""

from __future__ import annotations

import re
import uuid

from django.conf import settings

from core.api.common import parse_bool
from core.api_errors import BadRequest
from jobs.selectors import JobFilter
from jobs.states import DELETED, EVERY_STATE, GROUPS

# sort key -> model field
SORT_FIELDS = {
    "created": "created",
    "updated": "status_updated",
    "status_updated": "status_updated",
    "name": "name",
    "status": "status",
    "uuid": "uuid",
    "gpus": "gpus",
    "cpus": "cpus",
    "cpu_memory": "cpu_memory_gb",
    "project_name": "project__name",
    "user_name": "owner__username",
    "cluster_id": "requested_cluster_id",
}
DEFAULT_SORT = ["-created", "-id"]
MAX_LIST_ITEMS = 100  # values in one comma list

_URN_RE = re.compile(
    r"^urn:publicid:IDN\+(?P<authority>[^+]+)\+(?P<kind>user|project)\+(?P<name>[^+]+)$"
)


def _bad(name: str, message: str) -> BadRequest:
    return BadRequest(f"invalid query parameter {name}", [f"{name}: {message}"])


def comma_list(params, name: str) -> list[str] | None:
    """All values of ``name`` (repeated and/or comma separated), or None when absent."""
    if name not in params:
        return None
    values = [
        item.strip() for raw in params.getlist(name) for item in raw.split(",") if item.strip()
    ]
    if not values:
        raise _bad(name, "must not be empty")
    if len(values) > MAX_LIST_ITEMS:
        raise _bad(name, f"at most {MAX_LIST_ITEMS} values")
    return values


def _urn_names(values: list[str], name: str, kind: str) -> list[str]:
    names = []
    for value in values:
        # An unencoded "+" in a query string arrives as a space (curl users): URNs have none.
        match = _URN_RE.match(value.replace(" ", "+"))
        if match is None or match.group("kind") != kind:
            raise _bad(
                name, f"{value!r} is not a {kind} URN (urn:publicid:IDN+<authority>+{kind}+<name>)"
            )
        if match.group("authority") == settings.PORTAL_URN_AUTHORITY:
            names.append(match.group("name"))
    return names


def _statuses(params) -> set[str]:
    allowed = comma_list(params, "allowed_states")
    if allowed is not None:
        known = EVERY_STATE
        result = set()
        for value in allowed:
            state = value.upper()
            if state not in known:
                raise _bad(
                    "allowed_states", f"unknown state {value!r} (known: {', '.join(sorted(known))})"
                )
            result.add(state)
        return result
    given = {group: parse_bool(params.get(group), group, default=None) for group in GROUPS}
    chosen = {group for group, value in given.items() if value}
    if chosen:
        return set().union(*(GROUPS[group] for group in chosen))
    result = set(EVERY_STATE - DELETED)
    for group, flag in given.items():
        if flag is False:
            result -= set(GROUPS[group])
    return result


def _ints(values: list[str], name: str) -> list[int]:
    try:
        ints = [int(v) for v in values]
    except ValueError:
        raise _bad(name, "must be a comma list of integers") from None
    if any(i < 0 or i > 2**31 - 1 for i in ints):
        raise _bad(name, "must be between 0 and 2147483647")
    return ints


def _uuids(values: list[str], name: str) -> list[str]:
    try:
        return [str(uuid.UUID(v)) for v in values]
    except ValueError:
        raise _bad(name, "must be a comma list of UUIDs") from None


def job_filter_from_query(params) -> JobFilter:
    """The ``JobFilter`` that the query parameters ``params`` (a QueryDict) ask for."""
    statuses = frozenset(_statuses(params))
    given_clusters = comma_list(params, "cluster_id")
    cluster_ids = None if given_clusters is None else frozenset(_ints(given_clusters, "cluster_id"))
    usernames = []
    user_urns = comma_list(params, "user_urn")
    if user_urns is not None:
        usernames.append(frozenset(_urn_names(user_urns, "user_urn", "user")))
    user_names = comma_list(params, "user_name")
    if user_names is not None:
        usernames.append(frozenset(user_names))
    project_names = []
    project_urns = comma_list(params, "project_urn")
    if project_urns is not None:
        project_names.append(frozenset(_urn_names(project_urns, "project_urn", "project")))
    names = comma_list(params, "project_name")
    if names is not None:
        project_names.append(frozenset(names))
    or_running = parse_bool(params.get("other_user_running"), "other_user_running")
    slave_names = comma_list(params, "assigned_slave_name")
    interactive = parse_bool(params.get("interactive"), "interactive", default=None)
    given_reservations = comma_list(params, "reservation_id")
    reservation_ids = (
        None
        if given_reservations is None
        else frozenset(_uuids(given_reservations, "reservation_id"))
    )
    return JobFilter(
        statuses=statuses,
        cluster_ids=cluster_ids,
        usernames=tuple(usernames),
        project_names=tuple(project_names),
        slave_names=None if slave_names is None else frozenset(slave_names),
        interactive=interactive,
        reservation_ids=reservation_ids,
        or_running=or_running,
    )


def sort_order(params) -> tuple[str, ...]:
    """The ``order_by`` fields ``sort`` names (newest first without one)."""
    fields = comma_list(params, "sort")
    if fields is None:
        return tuple(DEFAULT_SORT)
    order = []
    for field in fields:
        descending = field.startswith("-")
        key = field.lstrip("-+")
        if key not in SORT_FIELDS:
            raise _bad(
                "sort", f"cannot sort by {key!r} (allowed: {', '.join(sorted(SORT_FIELDS))})"
            )
        order.append(("-" if descending else "") + SORT_FIELDS[key])
    return (*order, "-id")


# --- paging -----------------------------------------------------------------------------------

DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 200
MAX_PAGE = 10**6


def _positive_int(params, name: str, default: int, maximum: int) -> int:
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise BadRequest(
            f"invalid query parameter {name}", [f"{name}: must be an integer, not {raw!r}"]
        ) from None
    if value < 1 or value > maximum:
        raise BadRequest(
            f"invalid query parameter {name}", [f"{name}: must be between 1 and {maximum}"]
        )
    return value


def paginate(queryset, params, *, count=None) -> tuple[list, dict]:
    """The page's rows and the paging keys returned beside ``items``; ``count()`` (default
    ``queryset.count()``) gives the total."""
    page = _positive_int(params, "page", 1, MAX_PAGE)
    page_size = _positive_int(params, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    total = count() if count else queryset.count()
    start = (page - 1) * page_size
    rows = list(queryset[start : start + page_size]) if start < total else []
    pages = (total + page_size - 1) // page_size
    return rows, {
        "page": page,
        "page_size": page_size,
        "total": total,
        "pages": pages,
        "has_next": page < pages,
    }
