"""Reservations: windows in which part of a cluster goes only to entitled jobs."""

import uuid

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
    projects = models.ManyToManyField("portal.Project", blank=True, related_name="reservations")
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="reservations"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["start"]
        constraints = [
            models.CheckConstraint(
                condition=Q(end__gt=F("start")), name="reservation_end_after_start"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.start:%Y-%m-%d %H:%M} - {self.end:%Y-%m-%d %H:%M} UTC)"
