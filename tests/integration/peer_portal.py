"""A second portal in its own process, for tests/integration/test_two_portals.py.

Run as ``python -m tests.integration.peer_portal ACTION`` with its own PORTAL_VAR_DIR (its own
SQLite database) and PORTAL_INSTANCE; prints one JSON line. Actions:

- ``start``: migrate, register two slaves on the test engine (one declared GPU each), run one
  sleeping job on each, wait until both are RUNNING;
- ``reconcile N``: run reconcile over all its slaves N times;
and both print ``{"jobs": {uuid: [status, slave name, container id]}}``.
"""

import json
import os
import sys
import time


def _jobs() -> dict:
    from jobs.models import Job

    return {
        str(job.uuid): [job.status, job.slave.name if job.slave else None, job.container_id]
        for job in Job.objects.select_related("slave")
    }


def start() -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from accounts.models import Membership, Project
    from clusters.models import Cluster
    from clusters.services import slave_declare_gpus, slave_probe, slave_register
    from jobs.models import Job
    from jobs.user_actions.services import job_submit
    from tests.integration.docker_support import TEST_IMAGE, docker_url

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("peer", "peer@example.org", "pw")
    project = Project.objects.create(name="peer", gid=4400)
    Membership.objects.create(user=user, project=project)
    cluster, _ = Cluster.objects.get_or_create(id=1)
    for name in ("b1", "b2"):
        slave = slave_register(name=name, cluster=cluster, docker_url=docker_url(), host=name)
        slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)])
        slave_probe(slave=slave)
    document = {
        "name": "peer",
        "request": {
            "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": ["sleep", "300"]},
            "scheduling": {},
        },
    }
    for _ in range(2):
        job_submit(user=user, project=project, document=json.loads(json.dumps(document)))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if Job.objects.filter(status="RUNNING").count() == 2:
            break
        time.sleep(0.2)


def reconcile(cycles: int) -> None:
    from jobs.execution.reconcile import reconcile_all

    for _ in range(cycles):
        reconcile_all()


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    action = sys.argv[1]
    if action == "start":
        start()
    elif action == "reconcile":
        reconcile(int(sys.argv[2]))
    else:
        raise SystemExit(f"unknown action {action}")
    print(json.dumps({"jobs": _jobs()}), flush=True)


if __name__ == "__main__":
    main()
