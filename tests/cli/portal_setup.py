"""Data set-up for the gpulab-cli test, run INSIDE the live portal's environment.

    python tests/cli/portal_setup.py setup
    python tests/cli/portal_setup.py job --user alice --status RUNNING [--log TEXT]
    python tests/cli/portal_setup.py append-log UUID TEXT

Each command prints one JSON object. The portal under test is a separate process with its own
SQLite database (PORTAL_VAR_DIR), so test data is written through this script, with the same
services the portal uses.
"""

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PASSWORDS = {"alice": "alice-pw-2718", "bob": "bob-pw-3141", "root": "root-pw-1618"}
GPU_MODEL = "Tesla V100-PCIE-32GB"


def _django():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()


def setup(args) -> dict:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.models import Membership, Project
    from clusters.models import Cluster, Gpu, Slave

    user_model = get_user_model()
    vision = Project.objects.create(name="vision", gid=6001)
    speech = Project.objects.create(name="speech", gid=6002)
    for name, project in (("alice", vision), ("bob", speech)):
        user = user_model.objects.create_user(
            username=name, email=f"{name}@example.org", password=PASSWORDS[name]
        )
        Membership.objects.create(user=user, project=project)
    # An admin with every power (gpulab-cli rm --real --force), in no project.
    user_model.objects.create_superuser(
        username="root", email="root@example.org", password=PASSWORDS["root"]
    )
    cluster = Cluster.objects.create(id=1, comment="cli test cluster")
    slave = Slave.objects.create(
        name="gpu1",
        cluster=cluster,
        docker_url=args.docker_url,
        host="gpu1.example.org",
        cpus_total=16,
        memory_total_mb=64 * 1024,
        cpu_model="Test CPU",
        cuda_version="12.2",
        online=True,
        offline_reason="",
        last_seen=timezone.now(),
    )
    for index in range(4):
        Gpu.objects.create(
            slave=slave, index=index, model=GPU_MODEL, memory_mb=32768, declared=True
        )
    return {"slave": slave.name, "cluster": cluster.id}


HELLO = {
    "name": "PreparedJob",
    "description": "made by portal_setup.py",
    "request": {
        "resources": {"clusterId": 1, "gpus": 1, "cpus": 2, "cpuMemoryGb": 1},
        "docker": {"image": "debian:stable", "command": "echo prepared"},
        "scheduling": {"interactive": False},
    },
}


def not_before_far() -> str:
    import datetime

    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=2)
    return later.strftime("%Y-%m-%dT%H:%M:%SZ")


PATH_TO = {
    "QUEUED": [],
    "RUNNING": ["ASSIGNED", "STARTING", "RUNNING"],
    "FINISHED": ["ASSIGNED", "STARTING", "RUNNING", "FINISHED"],
}


def job(args) -> dict:
    """A job of ``--user`` in that user's project, moved to ``--status`` without the runtime."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from clusters.models import Slave
    from jobs.execution.logs import job_log_archive
    from jobs.transitions import job_transition
    from jobs.user_actions.services import job_submit

    user = get_user_model().objects.get(username=args.user)
    project = user.projects.first()
    document = json.loads(json.dumps(HELLO))
    document["name"] = args.name
    # Far in the future: ticks fired by other submissions never start it (there is no engine).
    document["request"]["scheduling"]["notBefore"] = not_before_far()
    created = job_submit(user=user, project=project, document=document, hold=True)
    job_transition(job=created, to="QUEUED", message="released by portal_setup")
    slave = Slave.objects.get(name="gpu1")
    now = timezone.now()
    for status in PATH_TO[args.status]:
        fields = {}
        if status == "ASSIGNED":
            fields = {"slave": slave, "gpu_ids": [3], "cpu_ids": [14, 15]}
        elif status == "RUNNING":
            fields = {"started_at": now}
        elif status == "FINISHED":
            fields = {"exit_code": 0, "ended_at": now}
        job_transition(job=created, to=status, message="set by portal_setup", fields=fields)
    if args.log is not None:
        job_log_archive(job=created, data=args.log.encode())
    return {"uuid": str(created.uuid), "status": created.status}


def append_log(args) -> dict:
    from jobs.execution.logs import archive_path, job_log_archive
    from jobs.models import Job

    found = Job.objects.get(uuid=args.uuid)
    path = archive_path(found)
    old = path.read_bytes() if path.exists() else b""
    job_log_archive(job=found, data=old + args.text.encode())
    return {"uuid": args.uuid, "length": len(old) + len(args.text.encode())}


def user(args) -> dict:
    """A member of ``--project`` with ``--email`` stored as given (as an admin could before the
    address rule, or straight in the database)."""
    from django.contrib.auth import get_user_model

    from accounts.models import Membership, Project

    made = get_user_model().objects.create_user(username=args.name, email=args.email)
    Membership.objects.create(user=made, project=Project.objects.get(name=args.project))
    return {"username": made.username, "email": made.email}


def status(args) -> dict:
    from jobs.models import Job

    return {"uuid": args.uuid, "status": Job.objects.get(uuid=args.uuid).status}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("setup")
    p.add_argument("--docker-url", default="unix:///nonexistent/docker.sock")
    p = commands.add_parser("job")
    p.add_argument("--user", required=True)
    p.add_argument("--status", choices=sorted(PATH_TO), required=True)
    p.add_argument("--name", default="PreparedJob")
    p.add_argument("--log")
    p = commands.add_parser("append-log")
    p.add_argument("uuid")
    p.add_argument("text")
    p = commands.add_parser("status")
    p.add_argument("uuid")
    p = commands.add_parser("user")
    p.add_argument("--name", required=True)
    p.add_argument("--email", required=True)
    p.add_argument("--project", required=True)
    args = parser.parse_args(argv)
    _django()
    handler = {
        "setup": setup,
        "job": job,
        "append-log": append_log,
        "status": status,
        "user": user,
    }
    print(json.dumps(handler[args.command](args)))


if __name__ == "__main__":
    main()
