"""Slave services: register, probe (engine info + GPU discovery), declare GPUs, drain."""

import logging
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from clusters.capabilities import capabilities_changed
from clusters.engine_policy import insecure_tcp_problem
from clusters.models import Cluster, Gpu, Slave
from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.probe import probe_engine
from clusters.runtime.spec import PortPolicy
from core.errors import ServiceError
from core.signals import capacity_changed

log = logging.getLogger(__name__)


def site_port_policy():
    """The host ports and addresses jobs may publish on (PORTAL_REFUSED_HOST_PORTS, with the
    SSH gateway's PORTAL_SSH_PORT always among them; PORTAL_HOST_PORT_RANGE when a site
    narrows fixed ports to a range; PORTAL_HOST_PORT_ADDRESSES) and where the portal picks
    ports itself (PORTAL_AUTO_HOST_PORT_RANGE); checked at submit and again by the engine
    before every container is created."""
    policy = PortPolicy.parse(
        refused=settings.PORTAL_REFUSED_HOST_PORTS,
        addresses=settings.PORTAL_HOST_PORT_ADDRESSES,
        allowed=settings.PORTAL_HOST_PORT_RANGE,
        auto_range=settings.PORTAL_AUTO_HOST_PORT_RANGE,
    )
    return policy.also_refusing(int(settings.PORTAL_SSH_PORT), "the portal's SSH gateway")


def engine_for(slave: Slave):
    """The engine behind a slave (``clusters.runtime.protocol.Engine``): an instance of
    ``settings.PORTAL_ENGINE_CLASS``, the Docker engine (the fast tests put their scripted
    fake there). The runtime package is the only Docker importer."""
    # Imported when first needed, for cost: the Docker engine loads the Docker SDK (and its
    # requests stack), which web requests that never reach an engine need not pay for.
    engine_class = import_string(settings.PORTAL_ENGINE_CLASS)
    return engine_class(
        slave.docker_url,
        tls_ca=slave.tls_ca or None,
        tls_cert=slave.tls_cert or None,
        tls_key=slave.tls_key or None,
        port_policy=site_port_policy(),
    )


def cluster_ensure(*, cluster_id: int, comment: str = "") -> Cluster:
    cluster, _ = Cluster.objects.get_or_create(id=cluster_id, defaults={"comment": comment})
    return cluster


def slave_register(
    *,
    name: str,
    cluster: Cluster,
    docker_url: str,
    host: str = "",
    tls_ca: str = "",
    tls_cert: str = "",
    tls_key: str = "",
    declared_gpus: list[tuple[str, int]] | None = None,
    storage_roots: dict | None = None,
    allow_insecure_tcp: bool = False,
) -> Slave:
    """Create or update a slave. ``declared_gpus`` is a list of (model, memory_mb).

    A ``tcp://`` engine without TLS files is refused unless ``allow_insecure_tcp`` or the
    setting PORTAL_ALLOW_INSECURE_TCP allows it (clusters/engine_policy.py)."""
    problem = insecure_tcp_problem(
        docker_url=docker_url,
        tls_ca=tls_ca,
        tls_cert=tls_cert,
        tls_key=tls_key,
        allowed=allow_insecure_tcp,
    )
    if problem:
        raise ServiceError(f"docker_url: {problem}")
    with transaction.atomic():
        slave, _ = Slave.objects.update_or_create(
            name=name,
            defaults={
                "cluster": cluster,
                "docker_url": docker_url,
                "host": host,
                "tls_ca": tls_ca,
                "tls_cert": tls_cert,
                "tls_key": tls_key,
                **({"storage_roots": storage_roots} if storage_roots is not None else {}),
            },
        )
        if declared_gpus is not None:
            slave_declare_gpus(slave=slave, gpus=declared_gpus)
        capacity_changed.send(sender=__name__)
    return slave


def slave_declare_gpus(*, slave: Slave, gpus: list[tuple[str, int]]) -> None:
    """Replace a slave's GPUs by admin-declared ones (CPU-only machines, demos, tests)."""
    with transaction.atomic():
        slave.gpus.all().delete()
        Gpu.objects.bulk_create(
            Gpu(slave=slave, index=i, model=model, memory_mb=mem, declared=True)
            for i, (model, mem) in enumerate(gpus)
        )
        Slave.objects.filter(pk=slave.pk).update(gpu_mode=Slave.GpuMode.DECLARED)
        slave.gpu_mode = Slave.GpuMode.DECLARED
        capabilities_changed()  # bulk_create and update() send no signals


def slave_set_accepting(*, slave: Slave, accepting: bool) -> None:
    with transaction.atomic():
        Slave.objects.filter(pk=slave.pk).update(accepting_jobs=accepting)
        capabilities_changed()
    slave.accepting_jobs = accepting
    capacity_changed.send(sender=__name__)


def slave_mark_offline(*, slave: Slave, reason: str, now: datetime | None = None) -> None:
    now = now or timezone.now()
    updates = {"online": False, "offline_reason": reason[:500]}
    if slave.online or slave.offline_since is None:
        updates["offline_since"] = now
    with transaction.atomic():
        Slave.objects.filter(pk=slave.pk).update(**updates)
        if slave.online:
            capabilities_changed()
    for key, value in updates.items():
        setattr(slave, key, value)


def cpu_model_of(*, slave: Slave, info, cpuinfo: str = "/proc/cpuinfo") -> str:
    """GPULab lists each slave's CPU model. Docker's info has none: a local engine's machine is
    this one, so its /proc/cpuinfo says; a remote engine's only tells its architecture."""
    if slave.docker_url.startswith("unix://"):
        try:
            with open(cpuinfo) as lines:
                for line in lines:
                    key, _, value = line.partition(":")
                    if key.strip() == "model name" and value.strip():
                        return value.strip()[:200]
        except OSError:
            pass
    return info.architecture[:200]


# At most this many image tags are kept per slave (a build host may have thousands).
IMAGES_KEPT = 500


def _image_tags(engine, *, known: list) -> list[str]:
    """The engine's image tags; the ones known before when listing fails (the probe itself
    answered, so the slave stays online)."""
    try:
        return engine.image_tags()[:IMAGES_KEPT]
    except RuntimeFailure as failure:
        log.warning("listing the images of an engine failed: %s", failure)
        return list(known or [])


def slave_probe(
    *, slave: Slave, now: datetime | None = None, discover_gpus: bool | None = None
) -> Slave:
    """Read the engine's info, discover GPUs when the NVIDIA runtime is present, mark online.

    GPU discovery runs a container, so the periodic probe (``discover_gpus=None``) does it only
    when the slave comes (back) online or has no GPUs yet; "Probe now" and add_slave force it.
    """
    now = now or timezone.now()
    was_online = slave.online
    try:
        engine = engine_for(slave)
        try:
            if discover_gpus is None:
                discover_gpus = not was_online or not slave.gpus.exists()
            result = probe_engine(
                engine, image=settings.PORTAL_GPU_PROBE_IMAGE, discover_gpus=discover_gpus
            )
            images = _image_tags(engine, known=slave.images)
        finally:
            engine.close()
    except RuntimeFailure as failure:
        slave_mark_offline(slave=slave, reason=f"Docker engine unreachable: {failure}", now=now)
        if was_online:
            capacity_changed.send(sender=__name__)
        return slave
    info = result.info
    if result.error:
        # The engine answers but GPU discovery failed: keep the GPUs known so far, say why.
        log.warning("GPU probe of slave %s failed: %s", slave.name, result.error)
    updates = {
        "online": True,
        "offline_reason": "",
        "offline_since": None,
        "last_seen": now,
        "cpus_total": info.cpus,
        "memory_total_mb": info.memory_bytes // (1024 * 1024),
        "docker_version": info.server_version,
        "cpu_model": cpu_model_of(slave=slave, info=info),
        "images": images,
    }
    with transaction.atomic():
        if result.gpus:
            _store_discovered_gpus(slave=slave, gpus=result.gpus)
            updates["gpu_mode"] = Slave.GpuMode.NVIDIA
            updates["cuda_version"] = result.cuda_version or ""
        Slave.objects.filter(pk=slave.pk).update(**updates)
        # Most probes change only last_seen: keep the submit check's cached view then.
        if not was_online or any(
            getattr(slave, key) != value
            for key, value in updates.items()
            if key in {"cpus_total", "memory_total_mb", "gpu_mode", "cuda_version"}
        ):
            capabilities_changed()
        for key, value in updates.items():
            setattr(slave, key, value)
        if not was_online:
            capacity_changed.send(sender=__name__)
    return slave


def _store_discovered_gpus(*, slave: Slave, gpus) -> None:
    existing = {g.index: g for g in slave.gpus.all()}
    seen = set()
    for found in gpus:
        seen.add(found.index)
        gpu = existing.get(found.index) or Gpu(slave=slave, index=found.index)
        gpu.uuid = found.uuid
        gpu.model = found.name
        gpu.memory_mb = found.memory_mb or 0
        gpu.declared = False
        gpu.save()
    slave.gpus.exclude(index__in=seen).delete()
