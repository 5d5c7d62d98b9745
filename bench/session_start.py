"""Benchmark a session's start on the local engine; prints JSON.

    python bench/session_start.py [--rounds N] [--template jupyterlab|tensorboard] [--docker URL]

- session start: ``session_start`` (the REST API's and the page's service: an interactive job
  through job_submit, tasks inline, so the scheduler tick and the launch run in this process)
  until the app answers HTTP 200 on its landing page through the real session proxy
  (``manage.py session_proxy`` as a subprocess, signed in with the portal's ticket), polled
  every 50 ms; split into submit -> RUNNING and RUNNING -> answering;
- bare docker run: create + start of the same image with the same command (the template's, its
  placeholders filled the same way) through the same engine client, until the app answers 200
  on the container's bridge address, polled the same way.

It runs on a fresh SQLite database in a temporary directory (its own installation id, so its
containers carry their own label), with the seeded templates; every container it started is
removed afterwards. The machine's load average (os.getloadavg) is reported before and after:
the figures mean little without it on a shared machine.
"""

if __name__ == "__main__":
    import _django  # noqa: F401  (bench/_django.py: the repository root on the path, Django set up)

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.models import Membership, Project
from clusters.models import Cluster
from clusters.runtime.commands import split_command
from clusters.runtime.spec import ContainerSpec
from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
from interactive.models import InteractiveSession, SessionTemplate
from interactive.proxy.cookies import cookie_name
from interactive.services import session_start, session_stop
from interactive.tickets import ticket_make
from jobs.execution.container_spec import LABEL_INSTANCE
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job, JobEvent

POLL_S = 0.05
APP_TIMEOUT_S = 180
BARE_TOKEN = "bench-bare-token"


def stats(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
        "min": round(ordered[0], 3),
        "max": round(ordered[-1], 3),
    }


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_200(client: requests.Session, url: str, headers: dict | None = None) -> float:
    """Poll ``url`` until it answers 200; answers the monotonic time it did."""
    deadline = time.monotonic() + APP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            answer = client.get(url, headers=headers, allow_redirects=False, timeout=5)
            if answer.status_code == 200:
                return time.monotonic()
        except requests.RequestException:
            pass
        time.sleep(POLL_S)
    raise CommandError(f"{url} did not answer 200 within {APP_TIMEOUT_S} s")


def filled_command(template: SessionTemplate, prefix: str, logdir: str) -> list[str]:
    """The template's command as a session runs it (interactive.services.session_document)."""
    command = template.command
    for name, value in (
        ("{base_url_no_trailing_slash}", prefix.rstrip("/")),
        ("{base_url}", prefix),
        ("{port}", str(template.port)),
        ("{logdir}", logdir),
    ):
        command = command.replace(name, value)
    return split_command(command) or []


class Command(BaseCommand):
    help = "Measure session start (submit -> app answering through the proxy) against bare docker run (JSON)."

    def add_arguments(self, parser):
        parser.add_argument("--rounds", type=int, default=3)
        parser.add_argument("--template", default="jupyterlab", help="a seeded template's slug")
        parser.add_argument("--docker", default=None, help="engine URL (default: local)")
        parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)

    def handle(self, *args, **o):
        if o["rounds"] < 1:
            raise CommandError("--rounds must be at least 1")
        if not o["inner"]:
            return self._outer(o)
        return self._inner(o)

    def _outer(self, o) -> None:
        """A fresh database in a temporary directory; the measuring process runs on it."""
        with tempfile.TemporaryDirectory(prefix="bench-session-") as var:
            env = {**os.environ, "PORTAL_VAR_DIR": var, "PORTAL_DATABASE_URL": ""}
            env.pop("PORTAL_INSTANCE", None)
            manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
            subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
            args = ["--inner", "--rounds", str(o["rounds"]), "--template", o["template"]]
            args += ["--docker", o["docker"]] if o["docker"] else []
            done = subprocess.run(
                [sys.executable, os.path.abspath(__file__), *args],
                env=env,
                capture_output=True,
                text=True,
            )
            self.stderr.write(done.stderr)
            if done.returncode:
                raise CommandError(f"the measuring process failed ({done.returncode})")
            self.stdout.write(done.stdout.rstrip("\n"))

    def _inner(self, o) -> None:
        settings.PORTAL_TASK_MODE = "inline"
        template = SessionTemplate.objects.filter(slug=o["template"]).first()
        if template is None:
            raise CommandError(f"no template {o['template']!r}")
        url = o["docker"] or settings.PORTAL_LOCAL_DOCKER_URL
        user = get_user_model().objects.create_user("bench", "bench@example.org")
        project = Project.objects.create(name="bench", gid=99999)
        Membership.objects.create(user=user, project=project)
        cluster = Cluster.objects.create(id=1, comment="bench_session_start")
        slave = slave_register(name="bench", cluster=cluster, docker_url=url, host="127.0.0.1")
        slave_declare_gpus(slave=slave, gpus=[("Bench GPU", 0)] * 2)
        slave = slave_probe(slave=slave)
        if not slave.online:
            raise CommandError(f"engine {url} unreachable: {slave.offline_reason}")
        port = free_port()
        proxy_url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PORTAL_SESSION_PROXY_BIND": f"127.0.0.1:{port}"}
        env["PORTAL_SESSION_PROXY_URL"] = proxy_url
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        proxy_log = open(settings.VAR_DIR / "session-proxy.log", "w")  # noqa: SIM115 (closed below)
        proxy = subprocess.Popen(
            [*manage, "session_proxy"], env=env, stdout=proxy_log, stderr=subprocess.STDOUT
        )
        stop = threading.Event()
        watch = SlaveWatch(slave, stop)
        watch.start()
        try:
            wait_200(requests.Session(), f"{proxy_url}/_health")
            report = self._measure(o, template, user, project, slave, proxy_url)
        finally:
            stop.set()
            proxy.terminate()
            try:
                proxy.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proxy.kill()
            proxy_log.close()
            with engine_for(slave) as engine:
                for container in engine.list_by_labels({LABEL_INSTANCE: settings.PORTAL_INSTANCE}):
                    engine.remove(container.id)
        self.stdout.write(json.dumps(report, indent=2))

    def _measure(self, o, template, user, project, slave, proxy_url) -> dict:
        logdir = "/project" if template.kind == SessionTemplate.Kind.TENSORBOARD else ""
        load_before = load()
        total, to_running, to_answer = [], [], []
        for _ in range(o["rounds"]):
            began = time.monotonic()
            session = session_start(
                user=user, project=project, template=template, gpus=0, logdir=logdir or None
            )
            job = session.job
            job.refresh_from_db()
            if job.status != "RUNNING":
                raise CommandError(f"the session's job is {job.status}: {job.end_reason}")
            running_event = JobEvent.objects.filter(job=job, new_state="RUNNING").first()
            assert running_event is not None
            running_at = (
                time.monotonic() - (job.status_updated - running_event.time).total_seconds()
            )
            client = requests.Session()
            ticket = ticket_make(key=session.key, user_id=user.pk)
            client.get(f"{proxy_url}{session.prefix}_portal/auth", params={"ticket": ticket},
                       allow_redirects=False, timeout=10)  # fmt: skip
            if not client.cookies.get(cookie_name(session.key)):
                raise CommandError("the proxy did not sign the bench user in")
            answered = wait_200(client, f"{proxy_url}{session.prefix}{template.landing_path}")
            total.append(answered - began)
            to_running.append(running_at - began)
            to_answer.append(answered - running_at)
            session_stop(session=InteractiveSession.objects.get(pk=session.pk), user=user)
            deadline = time.monotonic() + 60
            while Job.objects.get(pk=job.pk).status not in ("HALTED", "FAILED", "FINISHED"):
                if time.monotonic() > deadline:
                    raise CommandError(f"the session's job {job.uuid} did not halt in 60 s")
                time.sleep(0.2)
        bare = self._bare(o, template, slave, logdir)
        return {
            "rounds": o["rounds"],
            "template": template.slug,
            "image": template.image,
            "engine": slave.docker_url,
            "session_start_s": stats(total),
            "session_submit_to_running_s": stats(to_running),
            "session_running_to_answering_s": stats(to_answer),
            "bare_docker_run_to_answering_s": stats(bare),
            "session_over_bare_p50_s": round(statistics.median(total) - statistics.median(bare), 3),
            "load_average_before": load_before,
            "load_average_after": load(),
            "cpus": os.cpu_count(),
            "task_mode": "inline (add the broker poll interval for django-q2)",
        }

    def _bare(self, o, template, slave, logdir: str) -> list[float]:
        """The floor: the same image and command, started bare, until it answers 200 on its
        bridge address (the token the proxy would send, sent directly)."""
        prefix = "/s/bare-bench/"
        command = filled_command(template, prefix, logdir or "/tmp")
        headers = {"Authorization": f"token {BARE_TOKEN}"}
        bare = []
        with engine_for(slave) as engine:
            for _ in range(o["rounds"]):
                began = time.monotonic()
                container = engine.run(
                    ContainerSpec(
                        image=template.image,
                        command=tuple(command),
                        environment={"JUPYTER_TOKEN": BARE_TOKEN},
                        labels={LABEL_INSTANCE: settings.PORTAL_INSTANCE},
                    )
                )
                try:
                    address = None
                    while address is None and time.monotonic() - began < APP_TIMEOUT_S:
                        address = engine.container_address(container)
                    url = f"http://{address}:{template.port}{prefix}{template.landing_path}"
                    bare.append(wait_200(requests.Session(), url, headers) - began)
                finally:
                    engine.remove(container)
        return bare


if __name__ == "__main__":
    _django.run(Command)
