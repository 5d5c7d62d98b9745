"""Running a whole portal site as processes (web, q clusters, watcher) for integration tests.

Each process logs to a file; ``Processes.stop`` ends only the processes it started (each in
its own session, by its own process group).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.integration.docker_support import TEST_IMAGE

ROOT = Path(__file__).resolve().parents[2]

# Run with ``manage.py shell -c``: cluster 1 with one slave per engine in SCALE_ENGINES (a JSON
# list of URLs), SCALE_GPUS declared GPUs each; user "scaler" in project "scale"; the periodic
# schedules. Prints the user's API token.
SITE_SEED = textwrap.dedent(
    """
    import json, os
    from django.contrib.auth.models import User
    from accounts.tokens import api_token_rotate
    from clusters.models import Cluster
    from clusters.services import slave_declare_gpus, slave_probe, slave_register
    from accounts.models import Membership, Project
    from portal.schedules import schedules_ensure

    cluster = Cluster.objects.create(id=1, comment="scale-out")
    for n, url in enumerate(json.loads(os.environ["SCALE_ENGINES"])):
        slave = slave_register(name=f"node{n}", cluster=cluster, docker_url=url, host="127.0.0.1")
        slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * int(os.environ["SCALE_GPUS"]))
        slave = slave_probe(slave=slave)
        assert slave.online, slave.offline_reason
    user = User.objects.create_user("scaler")
    project = Project.objects.create(name="scale", gid=5555)
    Membership.objects.create(user=user, project=project)
    schedules_ensure()
    print(api_token_rotate(user=user)[1])
    """
)


class Processes:
    """The portal's processes, each logging to a file; all stopped (by their own pid)."""

    def __init__(self, env: dict, logs: Path):
        self.env, self.logs = env, logs
        self.children: dict[str, subprocess.Popen] = {}
        self.files = []

    def start(self, name: str, command: list[str]) -> None:
        log = open(self.logs / f"{name}.log", "wb")
        self.files.append(log)
        self.children[name] = subprocess.Popen(
            command,
            env=self.env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def dead(self) -> list[str]:
        return [name for name, child in self.children.items() if child.poll() is not None]

    def tails(self, lines: int = 15) -> str:
        out = []
        for name in self.children:
            text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
            out.append(f"--- {name} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def stop(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in self.children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=5)
        for log in self.files:
            log.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def web_command(port: int) -> list[str]:
    gunicorn = Path(sys.executable).with_name("gunicorn")
    if gunicorn.exists():
        return [
            str(gunicorn),
            "portal.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
            "--timeout",
            "60",
        ]
    return [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]


def wait_for_web(port: int, processes: Processes, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert not processes.dead(), processes.tails()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/gpulab/v4.0/version", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"web on port {port} did not answer\n{processes.tails()}")


def post(port: int, path: str, token: str, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def job_document(n: int) -> dict:
    return {
        "name": f"scale-{n}",
        "request": {
            "resources": {"clusterId": 1, "gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": f"sh -c 'sleep 0.{n % 3}'"},
            "scheduling": {"minDuration": "1 minute", "maxDuration": "10 minutes"},
        },
    }


def site_cleanup(instance: str, engine_urls: list[str], redis_url: str | None) -> None:
    """Remove the instance's containers from every engine and its keys from Redis."""
    from clusters.runtime.engine import DockerEngine

    for url in engine_urls:
        engine = DockerEngine(url)
        try:
            for state in engine.list_by_labels({"gpuportal.instance": instance}):
                engine.remove(state.id)
        finally:
            engine.close()
    if redis_url:
        import redis

        connection = redis.from_url(redis_url)
        keys = list(connection.scan_iter(match=f"django_q:{instance}:*"))
        if keys:
            connection.delete(*keys)
