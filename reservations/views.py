"""Reservations: a timeline per cluster and details for everyone; create, edit and delete for
admins (through reservations.services, which ask the scheduler for a tick)."""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from accounts.permissions import may_manage_reservations
from clusters.models import Cluster
from reservations import services
from reservations.forms import ReservationForm, default_window
from reservations.models import Reservation

TIMELINE_DAYS = 14
LIST_LIMIT = 200
RECENT_DAYS = 7


def entitled_ids(user, reservations) -> set[int]:
    """Ids of those (prefetched) reservations that ``user`` may use (Reservation.entitles)."""
    return services.entitled_reservations(user=user, reservations=reservations)


def _timeline(reservations, clusters, now) -> dict:
    """CSS bars: per cluster, each reservation's left offset and width in % of the window."""
    # Days begin at midnight in the viewer's zone (the one time rule, accounts.timezones).
    start = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    end = start + timedelta(days=TIMELINE_DAYS)
    span = (end - start).total_seconds()
    rows = []
    for cluster in clusters:
        bars = []
        for r in reservations:
            if r.cluster_id != cluster.pk or r.end <= start or r.start >= end:
                continue
            left = max(0.0, (r.start - start).total_seconds() / span * 100)
            right = min(100.0, (r.end - start).total_seconds() / span * 100)
            bars.append(
                {
                    "r": r,
                    "left": f"{left:.2f}",
                    "width": f"{max(0.6, right - left):.2f}",
                    "active": r.start <= now < r.end,
                }
            )
        rows.append({"cluster": cluster, "bars": bars})
    days = [
        {"date": start + timedelta(days=i), "left": f"{i / TIMELINE_DAYS * 100:.2f}"}
        for i in range(TIMELINE_DAYS)
    ]
    now_left = f"{(now - start).total_seconds() / span * 100:.2f}"
    return {"rows": rows, "days": days, "start": start, "end": end, "now_left": now_left}


def _with_relations(qs):
    return qs.select_related("cluster").prefetch_related("slaves", "projects", "users")


@login_required
def reservation_list(request):
    user = request.user
    now = timezone.now()
    current = list(
        _with_relations(Reservation.objects.filter(end__gt=now)).order_by("start")[:LIST_LIMIT]
    )
    recent = list(
        _with_relations(
            Reservation.objects.filter(end__lte=now, end__gt=now - timedelta(days=RECENT_DAYS))
        ).order_by("-end")[:20]
    )
    mine = entitled_ids(user, current + recent)
    for r in current + recent:
        r.ui_entitled = r.pk in mine
        r.ui_active = r.start <= now < r.end
    clusters = list(Cluster.objects.order_by("id"))
    return render(
        request,
        "reservations/list.html",
        {
            "current": current,
            "recent": recent,
            "limited": len(current) >= LIST_LIMIT,
            "timeline": _timeline(current, clusters, now),
            "is_admin": may_manage_reservations(user, "add"),
            "now": now,
        },
    )


@login_required
def reservation_detail(request, uuid):
    reservation = get_object_or_404(_with_relations(Reservation.objects), uuid=uuid)
    now = timezone.now()
    reservation.ui_entitled = reservation.pk in entitled_ids(request.user, [reservation])
    reservation.ui_active = reservation.start <= now < reservation.end
    return render(
        request,
        "reservations/detail.html",
        {"r": reservation, "is_admin": may_manage_reservations(request.user, "change"), "now": now},
    )


def _admin_only(request, verb: str):
    if not may_manage_reservations(request.user, verb):
        # Raised, not returned: the portal's 403 page (title, language, navigation) renders it.
        raise PermissionDenied(
            "Only admins create, change or delete reservations: ask an admin for one."
        )
    return None


def _add_errors(form, refused: services.ReservationInvalid) -> None:
    for field, rule in refused.errors:
        form.add_error(field if field in form.fields else None, rule)


@login_required
def reservation_create(request):
    if refused := _admin_only(request, "add"):
        return refused
    start, end = default_window(timezone.localtime())
    form = ReservationForm(request.POST or None, initial={"start": start, "end": end})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            reservation = services.reservation_create(
                name=data["name"],
                description=data["description"],
                cluster=data["cluster"],
                start=data["start"],
                end=data["end"],
                gpu_count=data["gpu_count"],
                slaves=data["slaves"],
                projects=data["projects"],
                users=data["users"],
                created_by=request.user,
            )
        except services.ReservationInvalid as refused:  # a concurrent write got there first
            _add_errors(form, refused)
        else:
            messages.success(request, f"Reservation {reservation.name} created.")
            return redirect("reservations:detail", uuid=reservation.uuid)
    return render(request, "reservations/form.html", {"form": form, "creating": True})


@login_required
def reservation_edit(request, uuid):
    if refused := _admin_only(request, "change"):
        return refused
    reservation = get_object_or_404(Reservation, uuid=uuid)
    form = ReservationForm(request.POST or None, instance=reservation)
    if request.method == "POST" and form.is_valid():
        data = {
            k: v for k, v in form.cleaned_data.items() if k not in ("slaves", "projects", "users")
        }
        try:
            reservation = services.reservation_update(
                reservation=reservation,
                data=data,
                relations={k: form.cleaned_data[k] for k in ("slaves", "projects", "users")},
            )
        except services.ReservationInvalid as refused:  # a concurrent write got there first
            _add_errors(form, refused)
        else:
            messages.success(request, f"Reservation {reservation.name} saved.")
            return redirect("reservations:detail", uuid=reservation.uuid)
    return render(
        request, "reservations/form.html", {"form": form, "creating": False, "r": reservation}
    )


@login_required
def reservation_delete(request, uuid):
    if refused := _admin_only(request, "delete"):
        return refused
    reservation = get_object_or_404(Reservation.objects.select_related("cluster"), uuid=uuid)
    if request.method == "POST" and request.POST.get("confirmed") == "1":
        name = reservation.name
        services.reservation_delete(reservation=reservation)
        messages.success(request, f"Reservation {name} deleted.")
        return redirect("reservations:list")
    return render(request, "reservations/confirm_delete.html", {"r": reservation})
