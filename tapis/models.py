"""Tapis apps: a registered, versioned way to run a container with arguments (docs/tapis.md).

An app's fields hold its definition in Tapis' words (``tapis.definitions`` checks them, field by
field); a job submitted from it records ``app_id``/``app_version`` and the request on the Job
itself (jobs never imports this floor). Once a job used a version it is ``locked``: a changed
app is a new version.
"""

from django.conf import settings
from django.db import models

from accounts.models import grantee_constraints


class App(models.Model):
    class Visibility(models.TextChoices):
        PRIVATE = "private"
        PROJECT = "project"
        EVERYONE = "everyone"

    app_id = models.CharField("id", max_length=80)
    version = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="tapis_apps"
    )
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    # The project whose members may use a "project" app.
    project = models.ForeignKey(
        "accounts.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    image = models.CharField("container image", max_length=1000)
    # The program the arguments are appended to (a shell-like string; empty: the image's CMD).
    command = models.TextField(blank=True)
    # [{name, description, inputMode, arg}]: inputMode REQUIRED, FIXED, INCLUDE_BY_DEFAULT or
    # INCLUDE_ON_DEMAND (Tapis' modes); arg is the default (the fixed value for FIXED).
    arguments = models.JSONField(default=list, blank=True)
    # [{key, value, description}]: value is the default a job may override.
    env = models.JSONField(default=list, blank=True)
    # [{name, description, inputMode, sourceUrl, targetPath}]: inputMode REQUIRED, OPTIONAL or
    # FIXED; targetPath is relative to the job's input folder.
    file_inputs = models.JSONField(default=list, blank=True)
    # GPULab's request.resources and the durations of request.scheduling (defaults).
    resources = models.JSONField(default=dict, blank=True)
    scheduling = models.JSONField(default=dict, blank=True)
    # Tapis' execSystemId: the default cluster (a GPULab cluster id), empty for any.
    exec_system_id = models.CharField(max_length=20, blank=True)
    locked = models.BooleanField(
        default=False, help_text="A job used this version: it can no longer change."
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["app_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["app_id", "version"], name="tapis_app_id_version")
        ]

    def __str__(self) -> str:
        return f"{self.app_id} {self.version}"


class AppShare(models.Model):
    """An app version shared read-only with one user or one project (tapis/shares.py): the
    grantee sees it and submits jobs from it; only the owner (or an admin) changes it."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="shares")
    grantee_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    grantee_project = models.ForeignKey(
        "accounts.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created = models.DateTimeField()

    class Meta:
        ordering = ["created", "id"]
        constraints = grantee_constraints("app", "tapis_appshare")

    def __str__(self) -> str:
        return f"{self.app} -> {self.grantee_user or self.grantee_project}"
