"""Live pages: clusters (one card each) and slaves (one row each, GPU cells, refreshed by htmx
while the tab is visible)."""

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from accounts.permissions import may_view_engine_errors
from clusters.models import Cluster, Slave
from jobs.api.clusters import cluster_infos
from jobs.models import Job
from jobs.states import HOLDS_RESOURCES
from jobs.web.views.common import present
from reservations.models import Reservation
from reservations.views import entitled_ids

SLAVES_PER_PAGE = 50
SLAVE_NAMES_PER_CARD = 12
UPCOMING_PER_CARD = 3


def _active_reservations(now, *, cluster_ids=None):
    qs = Reservation.objects.filter(start__lte=now, end__gt=now).prefetch_related("slaves")
    if cluster_ids is not None:
        qs = qs.filter(cluster_id__in=cluster_ids)
    return list(qs.order_by("start", "id"))


def _covering(reservations: list[Reservation], slave: Slave) -> list[Reservation]:
    """The (slaves-prefetched) reservations that cover the slave: its cluster's, on all its
    slaves or on this one."""
    return [
        r
        for r in reservations
        if r.cluster_id == slave.cluster_id
        and (not r.slaves.all() or any(s.pk == slave.pk for s in r.slaves.all()))
    ]


def _gpu_states(slave, gpus, by_gpu: Mapping[int, Any], covering, reserved_left: dict):
    """(gpu, state, holder, reservation) per GPU of the slave: offline, used, unavailable,
    reserved or free. A free GPU is reserved while a covering reservation has GPUs left to
    claim (``reserved_left``, shared by the slaves of one page, counts them down), so Live ›
    Slaves, Live › Clusters and the dashboard count the same reserved GPUs."""
    for gpu in gpus:
        holder = by_gpu.get(gpu.index)
        reservation = None
        if not slave.online:
            state = "offline"
        elif holder is not None:
            state = "used"
        elif not gpu.acquired:
            state = "unavailable"
        else:
            state = "free"
            for r in covering:
                if r.gpu_count is None or reserved_left[r.pk] > 0:
                    if r.gpu_count is not None:
                        reserved_left[r.pk] -= 1
                    state, reservation = "reserved", r
                    break
        yield gpu, state, holder, reservation


def reserved_gpus_by_cluster(user, *, now) -> dict[int, dict[str, int]]:
    """Per cluster id: how many free GPUs active reservations keep (``reserved``) and how many
    of those the viewer may use (``yours``); the same cells as Live › Slaves. Four queries."""
    slaves = list(Slave.objects.prefetch_related("gpus").order_by("cluster_id", "name"))
    by_slave: dict[int, dict[int, bool]] = {}
    for slave_id, gpu_ids in Job.objects.filter(
        status__in=HOLDS_RESOURCES, slave__isnull=False
    ).values_list("slave_id", "gpu_ids"):
        for index in gpu_ids or []:
            by_slave.setdefault(slave_id, {})[index] = True
    reservations = _active_reservations(now)
    mine = entitled_ids(user, reservations) if reservations else set()
    reserved_left = {r.pk: r.gpu_count for r in reservations}
    result: dict[int, dict[str, int]] = {}
    for slave in slaves:
        counts = result.setdefault(slave.cluster_id, {"reserved": 0, "yours": 0})
        covering = _covering(reservations, slave)
        if not covering:
            continue
        states = _gpu_states(
            slave, slave.gpus.all(), by_slave.get(slave.pk, {}), covering, reserved_left
        )
        for _gpu, state, _holder, reservation in states:
            if state == "reserved":
                counts["reserved"] += 1
                counts["yours"] += reservation.pk in mine
    return result


def with_reserved(infos: list[dict], reserved: Mapping[int, Mapping[str, int]]) -> list[dict]:
    """The clusters' JSON (``cluster_infos``, fresh dicts) with what the pages print beside
    it, for the viewer: ``ui_reserved`` (free GPUs a reservation keeps for others),
    ``ui_reserved_yours`` (free GPUs reserved for the viewer, who may use them) and
    ``ui_free`` (what the viewer's job could get now: unreserved or reserved for them)."""
    for info in infos:
        counts = reserved.get(info["clusterId"], {"reserved": 0, "yours": 0})
        others = counts["reserved"] - counts["yours"]
        info["ui_reserved"] = others
        info["ui_reserved_yours"] = counts["yours"]
        info["ui_free"] = max(0, info["gpu"]["available"] - others)
    return infos


@login_required
def cluster_list(request):
    user = request.user
    now = timezone.now()
    infos = with_reserved(cluster_infos(viewer=user), reserved_gpus_by_cluster(user, now=now))
    clusters = {c.pk: c for c in Cluster.objects.prefetch_related("owner_projects")}
    slaves_by_cluster: dict[int, list[Mapping[str, Any]]] = {}
    for row in Slave.objects.order_by("cluster_id", "name").values(
        "id", "name", "cluster_id", "online", "accepting_jobs", "offline_reason"
    ):
        slaves_by_cluster.setdefault(row["cluster_id"], []).append(row)
    reservations = list(
        Reservation.objects.filter(end__gt=now).order_by("start", "id").prefetch_related("slaves")
    )
    mine = entitled_ids(user, reservations)
    cards = []
    for info in infos:
        cluster_id = info["clusterId"]
        slaves = slaves_by_cluster.get(cluster_id, [])
        cluster_reservations = [r for r in reservations if r.cluster_id == cluster_id]
        for r in cluster_reservations:
            r.ui_entitled = r.pk in mine
        cluster = clusters.get(cluster_id)
        cards.append(
            {
                "info": info,
                "cluster": cluster,
                "owners": list(cluster.owner_projects.all()) if cluster else [],
                "slaves": slaves[:SLAVE_NAMES_PER_CARD],
                "more_slaves": max(0, len(slaves) - SLAVE_NAMES_PER_CARD),
                "slave_total": len(slaves),
                "online": sum(1 for s in slaves if s["online"]),
                "active": [r for r in cluster_reservations if r.start <= now],
                "upcoming": [r for r in cluster_reservations if r.start > now][:UPCOMING_PER_CARD],
            }
        )
    # An engine's raw error names internal addresses: admins see it, users see "offline".
    context = {"cards": cards, "now": now, "show_engine_errors": may_view_engine_errors(user)}
    return render(request, "clusters/clusters.html", context)


def _gang_task_label(job: Job) -> str:
    """``gang pai, role worker, task 1`` for a task of a multi-task job (what Live > Slaves
    shows on a GPU it holds; the gang's name through ``Job.gang``), "" for any other job."""
    if job.gang is None:
        return ""
    return f"gang {job.gang.name}, role {job.task_role}, task {job.task_index}"


def slave_rows(user, slaves: list[Slave], *, now) -> list[dict]:
    """View data of slaves: GPU cells (free, used by which job, reserved), CPU and memory use.

    Three queries whatever the number of slaves: their jobs, active reservations and the
    reservations' slaves.
    """
    ids = [s.pk for s in slaves]
    jobs_by_slave: dict[int, list[Job]] = {}
    jobs = (
        Job.objects.filter(status__in=HOLDS_RESOURCES, slave_id__in=ids)
        .select_related("owner", "project", "gang")
        .order_by("created", "id")
    )
    for job in jobs:
        present(job, user, now=now)
        # Which task of a multi-task job holds the GPUs; named only to who sees the job in full.
        job.ui_gang_task = _gang_task_label(job) if job.ui_full else ""
        if job.slave_id is not None:  # filtered: slave_id__in
            jobs_by_slave.setdefault(job.slave_id, []).append(job)
    reservations = _active_reservations(now, cluster_ids={s.cluster_id for s in slaves})
    reserved_left = {r.pk: r.gpu_count for r in reservations}

    rows = []
    for slave in slaves:
        gpus = list(slave.gpus.all())
        slave_jobs = jobs_by_slave.get(slave.pk, [])
        by_gpu: dict[int, Job] = {}
        for holder in slave_jobs:
            for index in holder.gpu_ids or []:
                by_gpu[index] = holder
        covering = _covering(reservations, slave)
        cells = [
            {"gpu": gpu, "job": holder, "reservation": reservation, "state": state}
            for gpu, state, holder, reservation in _gpu_states(
                slave, gpus, by_gpu, covering, reserved_left
            )
        ]
        cpus_used = sum(j.cpus for j in slave_jobs)
        memory_used_mb = sum(j.held_memory_gb * 1024 for j in slave_jobs)
        rows.append(
            {
                "slave": slave,
                "cells": cells,
                "gpus_free": sum(1 for c in cells if c["state"] == "free"),
                "gpus_total": sum(1 for g in gpus if g.acquired),
                "cpus_used": cpus_used,
                "cpus_total": slave.usable_cpus,
                "memory_used_mb": memory_used_mb,
                "memory_total_mb": slave.usable_memory_mb,
                "jobs": slave_jobs,
                "reservations": covering,
                "declared": any(g.declared for g in gpus),
            }
        )
    return rows


@login_required
@vary_on_headers("HX-Request")
def slave_list(request):
    user = request.user
    now = timezone.now()
    clusters = list(Cluster.objects.order_by("id"))
    slaves = Slave.objects.select_related("cluster").prefetch_related("gpus")
    cluster_filter = request.GET.get("cluster", "")
    if cluster_filter.isdigit():
        slaves = slaves.filter(cluster_id=int(cluster_filter))
    q = request.GET.get("q", "").strip()
    if q:
        slaves = slaves.filter(Q(name__icontains=q) | Q(host__icontains=q))
    page = Paginator(slaves.order_by("cluster_id", "name"), SLAVES_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "rows": slave_rows(user, list(page.object_list), now=now),
        "clusters": clusters,
        "cluster_filter": cluster_filter,
        "q": q,
        "now": now,
        "show_engine_errors": may_view_engine_errors(user),
    }
    if request.headers.get("HX-Request"):
        return render(request, "clusters/_slave_table.html", context)
    return render(request, "clusters/slaves.html", context)
