"""A job's container, as data: ``container_spec(...)`` turns a job on a slave into a ContainerSpec.

Pure apart from reading the objects passed in: no Docker, no database writes. What a container
gets is in docs/runtime.md; what it never gets (privileged, host namespaces, sockets,
capabilities) the runtime refuses on its own as well.

Every job (GPULab, OpenPAI or from an app) gets the same folders, so scripts and Tapis-style apps
can rely on them: a working directory with an input folder (staged before the start,
jobs/execution/staging.py) and an output folder (copied to the archive when the container
ends, jobs/execution/outputs.py).
"""

import os
from dataclasses import dataclass

from django.conf import settings

from accounts.models import user_urn
from clusters.models import Slave
from clusters.runtime.commands import split_command
from clusters.runtime.spec import ContainerSpec, Mount, PortMapping, refused
from jobs.execution.run_hooks import run_hooks
from jobs.execution.storage import ResolvedMount, resolve_mounts, slave_roots
from jobs.models import Job, JobPullSecret
from jobs.spec.images import image_parse
from jobs.spec.v2_docker import reserved_env_reason

GIB = 1024**3
LABEL_JOB = "gpuportal.job"
# Which portal installation (settings.PORTAL_INSTANCE) and which of its slaves (the slave's id)
# a container belongs to: reconcile and the watcher touch only containers carrying both of
# their own, so slaves sharing one engine and portals sharing a host leave each other alone.
LABEL_INSTANCE = "gpuportal.instance"
LABEL_SLAVE = "gpuportal.slave"
# The instance label of every portal before each installation had its own id.
LEGACY_INSTANCE = "gpuportal"

# A job's own folders inside its container.
CONTAINER_WORKING_DIR = "/job"
CONTAINER_INPUT_DIR = "/job/inputs"
CONTAINER_OUTPUT_DIR = "/job/outputs"

# The environment that names the three folders inside the container.
WORKDIR_ENV = {
    "JOB_WORKING_DIR": CONTAINER_WORKING_DIR,
    "JOB_INPUT_DIR": CONTAINER_INPUT_DIR,
    "JOB_OUTPUT_DIR": CONTAINER_OUTPUT_DIR,
}


@dataclass(frozen=True)
class PullTarget:
    repository: str
    tag: str
    username: str | None
    password: str | None

    @property
    def reference(self) -> str:
        # A pinned image is pulled and run as "name@sha256:...", with no tag.
        return f"{self.repository}:{self.tag}" if self.tag else self.repository


def pull_target(job: Job) -> PullTarget:
    """What to pull: the full image (with credentials) comes from the pull secret when any."""
    secret = JobPullSecret.objects.filter(job=job).first()
    image = secret.image if secret is not None else job.request["docker"]["image"]
    ref = image_parse(image)
    if isinstance(ref, str):
        # Only a job stored before the grammar got stricter: fail it with the reason, which
        # never quotes an image holding credentials.
        raise refused(f"the image {ref}")
    if ref.digest:
        repository, tag = ref.pull_name, ""  # "name@sha256:..."; the engine pulls by digest
    else:
        # pull_name then ends with ":tag" (default latest), so the last colon splits it.
        repository, _, tag = ref.pull_name.rpartition(":")
    return PullTarget(repository=repository, tag=tag, username=ref.username, password=ref.password)


def slave_labels(slave_id: int) -> dict[str, str]:
    """The labels every container of this portal on this slave carries."""
    return {LABEL_INSTANCE: settings.PORTAL_INSTANCE, LABEL_SLAVE: str(slave_id)}


def job_labels(job: Job, slave: Slave) -> dict[str, str]:
    return {LABEL_JOB: str(job.uuid), **slave_labels(slave.pk)}


def job_environment(job: Job, slave: Slave) -> dict[str, str]:
    """The user's own variables and the project GID variable, then GPULab's variables and the
    GPU-selecting ones, which always win.

    Submit refuses reserved names (jobs.spec.v2_docker.reserved_env_reason); they are dropped
    here too, for requests stored before that rule or written around it."""
    docker = job.request["docker"]
    env: dict[str, str] = {}
    for key, value in (docker.get("environment") or {}).items():
        if reserved_env_reason(key) is None:
            env[key] = str(value).lower() if isinstance(value, bool) else str(value)
    gid_name = docker.get("projectGidVariableName")
    if gid_name and reserved_env_reason(gid_name) is None:
        env[gid_name] = str(job.project.gid)
    env |= WORKDIR_ENV  # every job's working, input and output folders (above)
    env |= {
        "GPULAB_JOB_ID": str(job.uuid),
        "GPULAB_CLUSTER_ID": str(slave.cluster_id),
        "GPULAB_CPUS_RESERVED": str(len(job.cpu_ids)),
        "GPULAB_GPUS_RESERVED": str(len(job.gpu_ids)),
        "GPULAB_MEM_RESERVED": f"{job.cpu_memory_gb * 1024}m",
        "GPULAB_PROJECT": job.project.name,
        "GPULAB_USERNAME": job.owner.username,
        "GPULAB_USER_URN": user_urn(job.owner.username),
        "GPULAB_SLAVE_HOSTNAME": slave.name,
        "GPULAB_SLAVE_DNSNAME": slave.host or slave.name,
        "GPULAB_SLAVE_INSTANCE_ID": slave.instance_id,
        "GPULAB_SLAVE_PID": str(os.getpid()),
        "GPULAB_WORKER_ID": str(job.gpu_ids[0] if job.gpu_ids else 0),
        "GPULAB_VERSION": settings.PORTAL_VERSION,
        "GPULAB_RESTART_COUNT": str(job.restart_count),
        "GPULAB_RESTART_INITIAL_JOB_ID": job.initial_uuid,
    }
    if slave.gpu_mode == Slave.GpuMode.DECLARED:
        # Declared GPUs are not passed as devices: the job learns its ids from these variables
        # (and an NVIDIA runtime behind a declared slave would obey them).
        visible = ",".join(str(i) for i in job.gpu_ids) or "none"
        env["NVIDIA_VISIBLE_DEVICES"] = visible
        env["CUDA_VISIBLE_DEVICES"] = visible if job.gpu_ids else ""
    else:
        # NVIDIA slaves: the device request grants the GPUs. The variable says the same, so an
        # engine whose default runtime is nvidia (which reads it) cannot hand out more; with no
        # GPUs, "void" makes that runtime behave like runc (no devices, no driver files).
        devices = gpu_device_ids(job, slave)
        env["NVIDIA_VISIBLE_DEVICES"] = ",".join(devices) if devices else "void"
    return env


def job_mounts(job: Job, slave: Slave) -> list[ResolvedMount]:
    return resolve_mounts(
        storage=job.request["docker"]["storage"],
        roots=slave_roots(slave),
        project=job.project.name,
        user=job.owner.username,
    )


def gpu_device_ids(job: Job, slave: Slave) -> tuple[str, ...] | None:
    if slave.gpu_mode != Slave.GpuMode.NVIDIA or not job.gpu_ids:
        return None
    uuids = {g.index: g.uuid for g in slave.gpus.all()}
    return tuple(uuids.get(i) or str(i) for i in job.gpu_ids)


def container_spec(job: Job, slave: Slave, mounts: list[ResolvedMount]) -> ContainerSpec:
    docker = job.request["docker"]
    tmpfs = {
        item["containerPath"].rstrip("/") or "/": item["sizeGb"] * GIB
        for item in docker["storage"]
        if item.get("hostPath") == "tmpfs"
    }
    target = pull_target(job)
    # What the job's app adds (an OpenPAI task: its role's shmMB, codeDir read-only; a session:
    # its app token, kept out of the request).
    extras = run_hooks().container_extras(job)
    read_only = extras.read_only_paths
    words = split_command(docker.get("command"))
    return ContainerSpec(
        image=target.reference,
        command=tuple(words) if words is not None else None,
        environment=job_environment(job, slave) | dict(extras.env),
        labels=job_labels(job, slave),
        cpuset_cpus=",".join(str(c) for c in job.cpu_ids) or None,
        # tmpfs pages are charged to the container's memory: the limit includes them.
        mem_limit_bytes=job.held_memory_gb * GIB,
        binds=tuple(
            Mount(
                m.host_path,
                m.container_path.rstrip("/") or "/",
                read_only=m.container_path.rstrip("/") in read_only,
            )
            for m in mounts
        ),
        tmpfs=tmpfs,
        gpu_device_ids=gpu_device_ids(job, slave),
        port_mappings=tuple(
            PortMapping(p["containerPort"], p.get("hostPort"), p.get("hostIp"))
            for p in docker.get("portMappings") or ()
        ),
        working_dir=docker.get("workingDir") or None,
        user=docker.get("user") or None,
        group_add=tuple(docker.get("groupAdd") or ()),
        name=f"gpuportal-{job.uuid}",
        folders=workdir_folders(mounts, tmpfs),
        shm_size_bytes=extras.shm_size_bytes,
    )


def workdir_folders(mounts: list[ResolvedMount], tmpfs) -> tuple[str, ...]:
    """The job's input and output folders, made in the container before it starts, except
    where the job mounts storage or a tmpfs at or above them: the engine would otherwise
    chown the mounted folder (a host path) to the container's user."""
    targets = [m.container_path.rstrip("/") or "/" for m in mounts] + list(tmpfs)

    def covered(folder: str) -> bool:
        return any(folder == t or folder.startswith(t.rstrip("/") + "/") for t in targets)

    return tuple(f for f in (CONTAINER_INPUT_DIR, CONTAINER_OUTPUT_DIR) if not covered(f))
