"""Quota: the limits of a project, a user, or a user within a project (docs/quotas.md).

A row names a project, a user or both. Each limit has a hard level (a job waits while it would
pass it) and an optional soft level (above it a job only borrows GPUs nobody else is queued
for). Blank means "no limit"; the site's defaults (``PORTAL_QUOTA_DEFAULTS``) apply to a
project or a user that has no row of its own. Hour budgets are per calendar month (UTC).
"""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q

# (field stem, what it limits) in the order forms, the admin and the API show them.
LIMITS: tuple[tuple[str, str], ...] = (
    ("gpus", "GPUs held at once"),
    ("jobs", "jobs running at once"),
    ("gpu_hours", "GPU-hours per calendar month"),
    ("cpu_hours", "CPU-hours per calendar month"),
    ("mem_gb_hours", "memory GB-hours per calendar month"),
)
LIMIT_FIELDS: tuple[str, ...] = tuple(
    f"{stem}_{level}" for stem, _ in LIMITS for level in ("hard", "soft")
)


def _count(what: str, level: str) -> models.PositiveIntegerField:
    return models.PositiveIntegerField(
        null=True, blank=True, help_text=f"{level} limit on {what}; blank: none"
    )


def _hours(what: str, level: str) -> models.FloatField:
    return models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text=f"{level} limit on {what}; blank: none",
    )


class Quota(models.Model):
    """The limits of one project, one user, or one user within one project."""

    project = models.ForeignKey(
        "accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="quotas"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="quotas",
    )
    gpus_hard = _count("GPUs held at once", "hard")
    gpus_soft = _count("GPUs held at once", "soft")
    jobs_hard = _count("jobs running at once", "hard")
    jobs_soft = _count("jobs running at once", "soft")
    gpu_hours_hard = _hours("GPU-hours per calendar month", "hard")
    gpu_hours_soft = _hours("GPU-hours per calendar month", "soft")
    cpu_hours_hard = _hours("CPU-hours per calendar month", "hard")
    cpu_hours_soft = _hours("CPU-hours per calendar month", "soft")
    mem_gb_hours_hard = _hours("memory GB-hours per calendar month", "hard")
    mem_gb_hours_soft = _hours("memory GB-hours per calendar month", "soft")
    comment = models.CharField(max_length=300, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project__name", "user__username", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(project__isnull=False) | Q(user__isnull=False),
                name="quota_names_project_or_user",
            ),
            # One row per scope: a project, a user, a user within a project.
            models.UniqueConstraint(
                fields=["project"], condition=Q(user__isnull=True), name="quota_one_per_project"
            ),
            models.UniqueConstraint(
                fields=["user"], condition=Q(project__isnull=True), name="quota_one_per_user"
            ),
            models.UniqueConstraint(fields=["project", "user"], name="quota_one_per_member"),
            *(
                models.CheckConstraint(
                    condition=Q(**{f"{stem}_soft__isnull": True})
                    | Q(**{f"{stem}_hard__isnull": True})
                    | Q(**{f"{stem}_soft__lte": F(f"{stem}_hard")}),
                    name=f"quota_{stem}_soft_at_most_hard",
                )
                for stem, _ in LIMITS
            ),
        ]

    def __str__(self) -> str:
        return f"quota of {self.scope_label}"

    @property
    def scope(self) -> str:
        """``project``, ``user`` or ``member`` (a user within a project)."""
        if self.project_id is not None and self.user_id is not None:
            return "member"
        return "project" if self.project_id is not None else "user"

    @property
    def scope_label(self) -> str:
        if self.scope == "member":
            return f"user {self.user} in project {self.project}"
        return f"project {self.project}" if self.scope == "project" else f"user {self.user}"

    def limits(self) -> dict[str, float | int | None]:
        return {name: getattr(self, name) for name in LIMIT_FIELDS}
