"""Reservations by name where a page would otherwise show only their UUIDs (a job's
scheduling.reservationIds)."""

import uuid

from django import template

from reservations.models import Reservation

register = template.Library()


@register.simple_tag
def reservations_named(ids) -> list[dict]:
    """[{"id", "name", "reservation"}] in the order given; an id no reservation has (deleted,
    or mistyped) keeps its id as its name and no link."""
    parsed: list[uuid.UUID | None] = []
    for value in ids or []:
        try:
            parsed.append(uuid.UUID(str(value)))
        except ValueError:
            parsed.append(None)
    known = {r.uuid: r for r in Reservation.objects.filter(uuid__in=[p for p in parsed if p])}
    return [
        {
            "id": str(value),
            "name": known[p].name if p in known else str(value),
            "reservation": known.get(p) if p else None,
        }
        for value, p in zip(ids or [], parsed, strict=True)
    ]
