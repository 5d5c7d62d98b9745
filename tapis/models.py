"""Tapis apps: a registered, versioned way to run a container with arguments (docs/tapis.md).

An app's fields hold its definition in Tapis' words (``tapis.definitions`` checks them, field by
field); a job submitted from it records ``app_id``/``app_version`` and the request on the Job
itself (jobs never imports this floor). Once a job used a version it is ``locked``: a changed
app is a new version, and deleting it only hides it (``deleted_at``): its jobs keep running
that content when resubmitted, and its id and version are never used again.

Beside the apps, what only the Tapis API knows about a job or a user: a job hidden from Tapis'
lists (``HiddenJob``), the detail of a user event sent to a job (``JobUserEvent``), and the
tokens tapipy authenticates with (``TapisToken``, apart from the portal's API token).
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
    # Set when the owner deleted a locked version: new submissions no longer see it, its jobs'
    # resubmissions still run it, and the row keeps its id and version from being used again.
    deleted_at = models.DateTimeField(
        null=True, blank=True, help_text="Deleted after a job used it: kept for its jobs."
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


class HiddenJob(models.Model):
    """A job its owner hid from Tapis' job lists and searches (``hideJob``); ``unhideJob``
    removes the row. Only the Tapis API reads it: the portal's own pages list the job as ever."""

    job = models.OneToOneField("jobs.Job", on_delete=models.CASCADE, related_name="tapis_hidden")
    hidden_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    hidden_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"job {self.job_id} hidden by {self.hidden_by}"


class JobUserEvent(models.Model):
    """What Tapis' ``sendEvent`` adds to the job's own history event: its ``eventDetail`` and
    who sent it (the event's message holds ``eventData``)."""

    event = models.OneToOneField("jobs.JobEvent", on_delete=models.CASCADE, related_name="+")
    detail = models.CharField(max_length=64)
    sender = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")

    def __str__(self) -> str:
        return f"user event {self.detail} on event {self.event_id}"


class TapisToken(models.Model):
    """A token for Tapis clients (``X-Tapis-Token``), issued and revoked apart from the user's
    API token (tapis/tokens.py): setting up tapipy changes nothing for gpulab-cli or REST
    scripts. Stored only as its SHA-256 digest, like the API token; the plain key is shown
    once, wrapped in the JWT tapipy wants."""

    PREFIX_LENGTH = 8

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tapis_tokens"
    )
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=PREFIX_LENGTH, help_text="First characters of the key.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, hex.")
    created = models.DateTimeField()
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name = "Tapis token"

    def __str__(self) -> str:
        return f"Tapis token {self.prefix}… of {self.user}"
