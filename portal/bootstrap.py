"""The embedded defaults a fresh clone starts with: admin, demo project, cluster 1, slave local,
and the reservation GPULab's scheduling examples name (its storage name /project_ghent is a site
setting: PORTAL_STORAGE_ALIASES)."""

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.models import Membership, Project
from clusters.models import Slave
from clusters.services import cluster_ensure, slave_declare_gpus, slave_probe, slave_register
from core.installation import private_dir, write_private
from reservations.models import Reservation
from reservations.services import reservation_create

DEMO_GPUS = [("Demo GPU (declared, no real device)", 16384)] * 2
# The reservation GPULab's scheduling examples name ("reservationIds": [...]): on the demo site
# it exists, for the demo project, so those examples are accepted as written. Its window is
# long over: it holds nothing back from anyone.
SEED_RESERVATION = uuid.UUID("f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030")
SEED_RESERVATION_WINDOW = (
    datetime.fromisoformat("2020-01-01T00:00:00+01:00"),
    datetime.fromisoformat("2020-01-01T01:00:00+01:00"),
)


@dataclass
class BootstrapResult:
    username: str
    password: str
    created_admin: bool
    slave: Slave
    # Where the password is kept: under PORTAL_VAR_DIR, which need not be the checkout's var/.
    password_file: Path


def _admin_password(path: Path) -> tuple[str, bool]:
    if path.exists():
        return path.read_text().strip(), False
    private_dir(path.parent)
    password = secrets.token_urlsafe(12)
    write_private(path, (password + "\n").encode())  # 0600 from the start
    return password, True


def bootstrap_demo(*, username: str = "admin") -> BootstrapResult:
    """Idempotent: creates only what is missing, then probes the local slave."""
    User = get_user_model()
    password_file = Path(settings.VAR_DIR) / "admin-password.txt"
    with transaction.atomic():
        admin = User.objects.filter(username=username).first()
        created = admin is None
        if created:
            password, _ = _admin_password(password_file)
            admin = User.objects.create_superuser(username, settings.PORTAL_ADMIN_EMAIL, password)
        else:
            password = (
                password_file.read_text().strip() if password_file.exists() else "(unchanged)"
            )
        project, _ = Project.objects.get_or_create(
            name="demo", defaults={"gid": 5000, "description": "Demo project for trying the portal"}
        )
        Membership.objects.get_or_create(
            project=project, user=admin, defaults={"role": Membership.Role.MANAGER}
        )
        cluster = cluster_ensure(cluster_id=1, comment="local demo cluster")
        slave = Slave.objects.filter(name="local").first() or slave_register(
            name="local",
            cluster=cluster,
            docker_url=settings.PORTAL_LOCAL_DOCKER_URL,
            host="127.0.0.1",
        )
        seed_reservation_ensure(cluster=cluster, project=project, admin=admin)
    slave = slave_probe(slave=slave, discover_gpus=True)
    if slave.gpu_mode != Slave.GpuMode.NVIDIA and not slave.gpus.exists():
        # No NVIDIA GPU here: two declared demo GPUs let a new user try GPU jobs end to end.
        slave_declare_gpus(slave=slave, gpus=DEMO_GPUS)
    return BootstrapResult(username, password, created, slave, password_file)


def seed_reservation_ensure(*, cluster, project, admin) -> None:
    """The reservation of GPULab's examples (SEED_RESERVATION), made once."""
    if Reservation.objects.filter(uuid=SEED_RESERVATION).exists():
        return
    start, end = SEED_RESERVATION_WINDOW
    made = reservation_create(
        name="GPULab example reservation",
        description="The reservation GPULab's scheduling examples name; long over.",
        cluster=cluster,
        start=start,
        end=end,
        created_by=admin,
        projects=[project],
    )
    # The service makes a new id; this one is the id the examples are written with.
    Reservation.objects.filter(pk=made.pk).update(uuid=SEED_RESERVATION)
