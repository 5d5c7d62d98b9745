"""Reservation services: one validation for every way in (web form, API, admin), and writes that
validate again under a lock and ask the scheduler for a tick.

Capacity rule: at every moment, the reservations of a cluster must all fit at once. Each holds
``gpu_count`` GPUs (empty: every GPU) among the slaves it covers; reservations that overlap in
time and share slaves may not together hold more GPUs than those slaves have, or each would block
the other's entitled jobs (the scheduler lets a job that is not entitled to a reservation use only
that reservation's unreserved GPUs). A reservation without ``gpu_count`` holds its slaves
entirely, so it may share no slave with another overlapping reservation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import cast

from django.db import transaction
from django.db.models import prefetch_related_objects

from accounts.models import Membership
from clusters.models import Cluster, Gpu, Slave
from core.signals import capacity_changed
from core.timefmt import utc_z
from reservations.models import Reservation

FIELDS = ("name", "description", "cluster", "slaves", "gpu_count", "start", "end")
RELATIONS = ("slaves", "projects", "users")
NAME_MAX = cast(int, Reservation._meta.get_field("name").max_length)  # a CharField's


class ReservationInvalid(Exception):
    """Refused input: ``errors`` is a list of ``(field, rule)``, every problem at once."""

    def __init__(self, errors: list[tuple[str, str]]):
        super().__init__("; ".join(f"{field}: {rule}" for field, rule in errors))
        self.errors = errors


def reservation_changed(*, reservation: Reservation | None) -> None:
    """Call after a reservation was created, edited or deleted."""
    capacity_changed.send(sender=__name__)


def _current(instance: Reservation | None) -> dict:
    if instance is None or instance.pk is None:
        return {}
    values = {name: getattr(instance, name) for name in FIELDS if name != "slaves"}
    values["cluster"] = instance.cluster if instance.cluster_id else None
    values["slaves"] = list(instance.slaves.all())
    return values


def reservation_validate(
    *, data: dict, instance: Reservation | None = None, capacity: bool = True
) -> list[tuple[str, str]]:
    """Every problem of a reservation as ``(field, rule)`` pairs; an empty list when it is fine.

    ``data`` holds model objects (``cluster``, ``slaves``) and values; fields missing from it keep
    ``instance``'s values (an edit). Inside a transaction the cluster's row is locked first
    (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's IMMEDIATE transactions hold the write lock)
    so two concurrent writes cannot both pass; the services call this again inside their
    transaction, so the form's and the API's earlier call is advisory. ``capacity=False`` leaves
    out the overlap check (a caller that could not resolve every slave would check the wrong ones).
    """
    values = {**_current(instance), **data}
    errors: list[tuple[str, str]] = []
    name = (values.get("name") or "").strip()
    if not name:
        errors.append(("name", "required"))
    elif len(name) > NAME_MAX:
        errors.append(("name", f"at most {NAME_MAX} characters"))
    cluster = values.get("cluster")
    if cluster is None:
        errors.append(("cluster", "required"))
    start, end = values.get("start"), values.get("end")
    for field, value in (("start", start), ("end", end)):
        if value is None:
            errors.append((field, "required"))
    times_ok = start is not None and end is not None
    if start is not None and end is not None and end <= start:
        errors.append(("end", "must be after start"))
        times_ok = False
    slaves = list(values.get("slaves") or [])
    gpu_count = values.get("gpu_count")
    if gpu_count is not None and gpu_count < 1:
        errors.append(("gpu_count", "must be at least 1 (empty: every GPU)"))
    if cluster is None:
        return errors
    strangers = sorted(s.name for s in slaves if s.cluster_id != cluster.pk)
    if strangers:
        errors.append(("slaves", f"not in cluster {cluster.pk}: {', '.join(strangers)}"))
        return errors
    gpus = _acquired_gpus(cluster)
    covered = {s.pk for s in slaves} or set(gpus)
    available = sum(gpus.get(pk, 0) for pk in covered)
    if gpu_count is not None and gpu_count > available:
        errors.append(("gpu_count", f"those slaves have only {available} GPU(s) for jobs"))
        return errors
    if (
        capacity
        and times_ok
        and start is not None
        and end is not None
        and (gpu_count is None or gpu_count >= 1)
    ):
        own = None if instance is None else instance.pk
        errors.extend(
            _capacity_errors(
                cluster=cluster,
                covered=covered,
                gpu_count=gpu_count,
                start=start,
                end=end,
                exclude_pk=own,
                gpus=gpus,
            )
        )
    return errors


def _acquired_gpus(cluster: Cluster) -> dict[int, int]:
    """GPUs the portal may hand to jobs, per slave of the cluster (slaves without any: 0)."""
    counts = dict.fromkeys(Slave.objects.filter(cluster=cluster).values_list("pk", flat=True), 0)
    for slave_id in Gpu.objects.filter(slave__cluster=cluster, acquired=True).values_list(
        "slave_id", flat=True
    ):
        counts[slave_id] = counts.get(slave_id, 0) + 1
    return counts


def _capacity_errors(
    *,
    cluster: Cluster,
    covered: set[int],
    gpu_count: int | None,
    start: datetime,
    end: datetime,
    exclude_pk: int | None,
    gpus: dict[int, int],
) -> list[tuple[str, str]]:
    """The reservations that, overlapping in time and sharing slaves, leave no room for this one."""
    if transaction.get_connection().in_atomic_block:
        # Serialises reservation writes per cluster (SQLite: IMMEDIATE transactions already do).
        list(Cluster.objects.select_for_update().filter(pk=cluster.pk).values_list("pk"))
    overlapping = Reservation.objects.filter(cluster=cluster, start__lt=end, end__gt=start)
    if exclude_pk is not None:
        overlapping = overlapping.exclude(pk=exclude_pk)
    others = list(overlapping.prefetch_related("slaves").order_by("start", "pk"))
    every = set(gpus)
    cover = {o.pk: ({s.pk for s in o.slaves.all()} or every) for o in others}
    others = [o for o in others if cover[o.pk] & covered]
    if not others:
        return []

    def demand(count: int | None, slaves: set[int]) -> int:
        return sum(gpus.get(pk, 0) for pk in slaves) if count is None else count

    mine = demand(gpu_count, covered)
    colliding: dict[int, Reservation] = {}
    # The set of overlapping reservations only changes when one of them starts.
    moments = sorted({start} | {o.start for o in others if start < o.start < end})
    actives = [tuple(o for o in others if o.start <= m < o.end) for m in moments]

    def check(active: tuple[Reservation, ...]) -> bool:
        """Record the reservations that leave no room for this one at a moment when ``active``
        overlap it; whether those others fit together (they do unless stored past the rules)."""
        for o in active:  # a whole reservation shares its slaves with nobody
            if (gpu_count is None or o.gpu_count is None) and cover[o.pk] & covered:
                colliding[o.pk] = o
        parts = [(demand(o.gpu_count, cover[o.pk]), cover[o.pk]) for o in active]
        wanted = sum(count for count, _ in parts)
        with_me, blamed = _max_flow(parts + [(mine, covered)], gpus)
        if with_me == wanted + mine:
            return True
        without_me, _ = _max_flow(parts, gpus)
        if with_me < without_me + mine:
            for index in blamed:
                if index < len(active):
                    colliding[active[index].pk] = active[index]
            if not blamed - {len(active)}:  # no cut found among them: name all that share
                colliding.update((o.pk, o) for o in active)
        return without_me == wanted

    # A moment's overlapping set that is contained in the next moment's (none of them ended in
    # between) needs no check of its own: what fits beside the larger set fits beside the smaller
    # one -- as long as the others fit together, which this rule ensured when they were written.
    # Otherwise (rows written past the rules) every moment is checked.
    maximal = [
        i
        for i, active in enumerate(actives)
        if active and (i + 1 == len(actives) or not set(active) <= set(actives[i + 1]))
    ]
    others_fit = all([check(actives[i]) for i in maximal])
    if not others_fit:
        for i, active in enumerate(actives):
            if active and i not in maximal:
                check(active)
    if not colliding:
        return []
    holds = "every GPU" if gpu_count is None else f"{gpu_count} GPU(s)"
    names = "; ".join(
        f"{o.name!r} ({o.uuid}, {utc_z(o.start)} - {utc_z(o.end)}, "
        f"{'every GPU' if o.gpu_count is None else f'{o.gpu_count} GPU(s)'})"
        for o in sorted(colliding.values(), key=lambda o: (o.start, o.pk))
    )
    return [
        (
            "gpu_count",
            f"{holds} of these slaves do not fit beside the overlapping reservation(s) {names}: "
            f"together they hold more than the slaves' GPUs",
        )
    ]


# A node of the flow graph: the source "s", the sink "t", ("r", reservation index), ("g", slave pk).
Node = str | tuple[str, int]


def _max_flow(parts: Sequence[tuple[int, set[int]]], gpus: dict[int, int]) -> tuple[int, set[int]]:
    """How many reserved GPUs fit at once (reservation -> covered slave -> its GPUs), and the
    indexes of the reservations on the source side of a minimum cut (those that cannot all fit
    together when the flow falls short). Edmonds-Karp on a graph of a few dozen nodes."""
    slaves = sorted({pk for _, covered in parts for pk in covered})
    source: Node = "s"
    sink: Node = "t"
    cap: dict[tuple[Node, Node], int] = {}
    adj: dict[Node, set[Node]] = {source: set(), sink: set()}

    def edge(a: Node, b: Node, c: int) -> None:
        cap[(a, b)] = cap.get((a, b), 0) + c
        cap.setdefault((b, a), 0)
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)

    for index, (count, covered) in enumerate(parts):
        edge(source, ("r", index), count)
        for pk in covered:
            edge(("r", index), ("g", pk), count)
    for pk in slaves:
        edge(("g", pk), sink, gpus.get(pk, 0))
    flow = 0
    while True:
        parent: dict[Node, Node | None] = {source: None}
        queue = deque([source])
        while queue and sink not in parent:
            node = queue.popleft()
            for nxt in adj[node]:
                if nxt not in parent and cap[(node, nxt)] > 0:
                    parent[nxt] = node
                    queue.append(nxt)
        if sink not in parent:
            reached = {n[1] for n in parent if isinstance(n, tuple) and n[0] == "r"}
            return flow, reached
        path: list[tuple[Node, Node]] = []
        node = sink
        while (previous := parent[node]) is not None:
            path.append((previous, node))
            node = previous
        pushed = min(cap[e] for e in path)
        for a, b in path:
            cap[(a, b)] -= pushed
            cap[(b, a)] += pushed
        flow += pushed


def _check(*, data: dict, instance: Reservation | None = None) -> None:
    errors = reservation_validate(data=data, instance=instance)
    if errors:
        raise ReservationInvalid(errors)


def reservation_create(
    *,
    name: str,
    cluster,
    start,
    end,
    created_by=None,
    description: str = "",
    slaves=(),
    gpu_count: int | None = None,
    projects=(),
    users=(),
) -> Reservation:
    """Create a reservation; ReservationInvalid (nothing written) when it breaks a rule."""
    slaves = list(slaves)
    with transaction.atomic():
        _check(
            data={
                "name": name,
                "cluster": cluster,
                "start": start,
                "end": end,
                "slaves": slaves,
                "gpu_count": gpu_count,
            }
        )
        reservation = Reservation.objects.create(
            name=name,
            cluster=cluster,
            start=start,
            end=end,
            created_by=created_by,
            description=description,
            gpu_count=gpu_count,
        )
        reservation.slaves.set(slaves)
        reservation.projects.set(projects)
        reservation.users.set(users)
        reservation_changed(reservation=reservation)
    return reservation


def reservation_delete(*, reservation: Reservation) -> None:
    with transaction.atomic():
        reservation.delete()
        reservation_changed(reservation=None)


def reservation_update(
    *, reservation: Reservation, data: dict, relations: dict | None = None
) -> Reservation:
    """Change a reservation's fields (and slaves/projects/users) and ask for a tick.

    ReservationInvalid (nothing written) when the result breaks a rule."""
    relations = {name: list(values) for name, values in (relations or {}).items()}
    with transaction.atomic():
        _check(data={**data, **relations}, instance=reservation)
        for name, value in data.items():
            setattr(reservation, name, value)
        reservation.save()
        for name, values in relations.items():
            getattr(reservation, name).set(values)
        reservation_changed(reservation=reservation)
    return reservation


def entitled_reservations(*, user, reservations: Iterable[Reservation]) -> set[int]:
    """Primary keys of those (prefetched) reservations ``user`` may use through one of their
    projects or by name; the pages and the API show this as "entitled"."""
    if not user or not user.is_authenticated:
        return set()

    projects = getattr(user, "_portal_project_names", None)
    if projects is None:
        projects = set(Membership.objects.filter(user=user).values_list("project__name", flat=True))
        user._portal_project_names = projects
    reservations = list(reservations)
    prefetch_related_objects(reservations, "users", "projects")  # no query when already there
    return {r.pk for r in reservations if r.entitles_member(user=user.username, projects=projects)}
