"""Reservations: windows in which part of a cluster goes only to entitled jobs.

Entitlement, once (GPULab: "If you request a reservation, the GPULab admins will give you a
reservation UUID. You need to add this ID to your jobs, in order for them to be allowed to run
during the reservation timeframe"):

* a job is admitted to a reservation only when it names the reservation's UUID, and
* its user or its project is listed; a reservation that lists no user and no project admits
  every job that names it (the UUID is the ticket). An admin who wants a maintenance block lists
  only an admin user or project.

The pure scheduler (``jobs.scheduler.model.ReservationWindow``) cannot import Django and states
the same rule for itself; tests/reservations/test_rules.py feeds generated reservations and jobs
to both and asserts they agree.
"""

import uuid
from collections.abc import Iterable

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Reservation(models.Model):
    """Blocks a cluster, or some of its slaves or GPUs, for entitled projects and users."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    cluster = models.ForeignKey(
        "clusters.Cluster", on_delete=models.CASCADE, related_name="reservations"
    )
    slaves = models.ManyToManyField(
        "clusters.Slave", blank=True, help_text="Empty: every slave of the cluster."
    )
    gpu_count = models.PositiveIntegerField(
        null=True, blank=True, help_text="Empty: every GPU of those slaves."
    )
    start = models.DateTimeField(db_index=True)
    end = models.DateTimeField(db_index=True)
    projects = models.ManyToManyField("accounts.Project", blank=True, related_name="reservations")
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="reservations"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    # Set by the Live > Clusters page on the reservations it shows, never stored.
    ui_entitled: bool

    class Meta:
        ordering = ["start"]
        constraints = [
            models.CheckConstraint(
                condition=Q(end__gt=F("start")), name="reservation_end_after_start"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.start:%Y-%m-%d %H:%M} - {self.end:%Y-%m-%d %H:%M} UTC)"

    # --- the rules (relations are read through .all(): prefetch them for many reservations) ---

    def entitles(self, *, user: str, project: str) -> bool:
        """Whether a job of ``user`` (a username) in ``project`` (a name) that names this
        reservation may use it: listed by user or by project, or nobody listed at all."""
        users = {u.username for u in self.users.all()}
        projects = {p.name for p in self.projects.all()}
        if not users and not projects:
            return True
        return user in users or project in projects

    def admits(self, *, user: str, project: str, reservation_ids: Iterable[str]) -> bool:
        """Whether a job with this owner, project and ``reservationIds`` is entitled to this
        reservation (the same meaning as ``ReservationWindow.admits``)."""
        if str(self.uuid) not in {str(rid) for rid in reservation_ids}:
            return False
        return self.entitles(user=user, project=project)

    def entitles_member(self, *, user: str, projects: Iterable[str]) -> bool:
        """Whether ``user`` could submit an entitled job in one of ``projects`` (their projects'
        names); what the reservation pages and the API show as "entitled"."""
        return self.entitles(user=user, project="") or any(
            self.entitles(user=user, project=name) for name in projects
        )

    def covers(self, slave) -> bool:
        """Whether the reservation holds (part of) ``slave``: a slave of its cluster, listed or
        none listed (the same meaning as ``ReservationWindow.covers``)."""
        if slave.cluster_id != self.cluster_id:
            return False
        listed = {s.pk for s in self.slaves.all()}
        return not listed or slave.pk in listed
