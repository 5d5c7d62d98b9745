"""Clusters, slaves (Docker hosts) and their GPUs."""

import secrets

from django.core.validators import MinValueValidator
from django.db import models


class Cluster(models.Model):
    """A group of slaves with a GPULab integer id; private clusters belong to owner projects."""

    # gpulab-cli requires clusterId > 0 in a running job's resources.
    id = models.PositiveIntegerField(
        primary_key=True, validators=[MinValueValidator(1)], help_text="GPULab cluster id (>= 1)."
    )
    comment = models.CharField(max_length=200, blank=True)
    is_private = models.BooleanField(
        default=False,
        help_text="Owner projects have absolute priority; others only run here as guests.",
    )
    owner_projects = models.ManyToManyField(
        "accounts.Project", blank=True, related_name="owned_clusters"
    )
    deployment_environment = models.CharField(max_length=32, default="production")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"cluster {self.id}" + (f" ({self.comment})" if self.comment else "")


def new_instance_id() -> str:
    return secrets.token_hex(10)


class Slave(models.Model):
    """A Docker engine that runs jobs, with what the portal may use of it."""

    class GpuMode(models.TextChoices):
        NVIDIA = "nvidia", "NVIDIA runtime (discovered)"
        DECLARED = "declared", "Declared by an admin"

    name = models.CharField(max_length=64, unique=True)
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="slaves")
    comment = models.CharField(max_length=200, blank=True)
    docker_url = models.CharField(
        max_length=300, help_text="unix:///var/run/docker.sock or tcp://host:2376"
    )
    tls_ca = models.CharField(max_length=300, blank=True, help_text="Path of the CA file.")
    tls_cert = models.CharField(max_length=300, blank=True, help_text="Path of the client cert.")
    tls_key = models.CharField(max_length=300, blank=True, help_text="Path of the client key.")
    host = models.CharField(
        max_length=255, blank=True, help_text="DNS name users reach mapped ports on."
    )
    instance_id = models.CharField(max_length=40, default=new_instance_id)
    gpu_mode = models.CharField(max_length=16, choices=GpuMode.choices, default=GpuMode.DECLARED)
    # What the machine has, as last probed.
    cpus_total = models.PositiveIntegerField(default=0)
    memory_total_mb = models.PositiveIntegerField(default=0)
    cpu_model = models.CharField(max_length=200, blank=True)
    docker_version = models.CharField(max_length=64, blank=True)
    cuda_version = models.CharField(max_length=32, blank=True)
    # Image tags present on the engine at the last probe ("repo:tag"): Create Job's examples use
    # one of them, so a first job needs no registry.
    images = models.JSONField(default=list, blank=True)
    # What the portal may use of it; null means "everything the probe found".
    acquired_cpus = models.PositiveIntegerField(null=True, blank=True)
    acquired_memory_mb = models.PositiveIntegerField(null=True, blank=True)
    features = models.JSONField(default=list, blank=True)
    storage_roots = models.JSONField(
        default=dict,
        blank=True,
        help_text='Container root -> host folder template, e.g. {"/project": '
        '"/srv/projects/{project}"}. Empty: the portal-wide default.',
    )
    accepting_jobs = models.BooleanField(default=True)
    online = models.BooleanField(default=False)
    offline_reason = models.CharField(max_length=500, blank=True, default="not probed yet")
    last_seen = models.DateTimeField(null=True, blank=True)
    offline_since = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["cluster_id", "name"]
        indexes = [models.Index(fields=["online", "accepting_jobs"])]

    def __str__(self) -> str:
        return self.name

    @property
    def usable_cpus(self) -> int:
        return self.acquired_cpus if self.acquired_cpus is not None else self.cpus_total

    @property
    def usable_memory_mb(self) -> int:
        return (
            self.acquired_memory_mb if self.acquired_memory_mb is not None else self.memory_total_mb
        )

    @property
    def cuda_major(self) -> int | None:
        head = self.cuda_version.split(".", 1)[0]
        return int(head) if head.isdigit() else None


class Gpu(models.Model):
    """One GPU of a slave, discovered by the NVIDIA probe or declared by an admin."""

    slave = models.ForeignKey(Slave, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=120)
    memory_mb = models.PositiveIntegerField(default=0)
    declared = models.BooleanField(
        default=False, help_text="Declared, not discovered: demo and CPU-only machines."
    )
    acquired = models.BooleanField(default=True, help_text="The portal may hand it to jobs.")

    class Meta:
        ordering = ["slave__name", "index"]
        constraints = [
            models.UniqueConstraint(fields=["slave", "index"], name="unique_gpu_index_per_slave")
        ]

    def __str__(self) -> str:
        return f"{self.slave.name}/gpu{self.index} {self.model}"


class CapabilityStamp(models.Model):
    """One row whose ``stamp`` changes whenever what slaves can run may have changed.

    Submit-time feasibility caches its view of the slaves per process under this stamp
    (jobs/submit/checks.py): reading it is one indexed query, and since every change of a
    Slave, Gpu, Cluster (or an owner project) writes a new random stamp in the same transaction
    (clusters/capabilities.py), a cached view is never used after the data under it changed.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    stamp = models.CharField(max_length=32)

    def __str__(self) -> str:
        return f"capability stamp {self.stamp}"
