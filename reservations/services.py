"""Reservation services: every change asks the scheduler for a tick."""

from django.db import transaction

from jobs.ticks import tick_request
from reservations.models import Reservation


def reservation_changed(*, reservation: Reservation | None) -> None:
    """Call after a reservation was created, edited or deleted."""
    tick_request()


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
    with transaction.atomic():
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

    Callers validate first (forms, serializers); the database still refuses end <= start."""
    with transaction.atomic():
        for name, value in data.items():
            setattr(reservation, name, value)
        reservation.save()
        for name, values in (relations or {}).items():
            getattr(reservation, name).set(values)
        reservation_changed(reservation=reservation)
    return reservation
