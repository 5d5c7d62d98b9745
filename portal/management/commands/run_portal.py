"""Start the web server, the django-q2 cluster, the slave watcher, the SSH gateway and the
session proxy as one process tree.

The web server is gunicorn (portal/gunicorn_conf.py) with WhiteNoise serving the static files,
as in production; the same processes run as services there (deploy/systemd/).
"""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from portal.schedules import schedules_ensure


class Command(BaseCommand):
    help = (
        "Run web (gunicorn), q cluster, slave watcher, SSH gateway and session proxy together; "
        "Ctrl-C stops all."
    )

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000")

    def handle(self, *args, **options):
        schedules_ensure()
        # Hashed, compressed static files for WhiteNoise (only changed files are copied).
        call_command("collectstatic", interactive=False, verbosity=0)
        manage = [sys.executable, "manage.py"]
        gunicorn = [sys.executable, "-m", "gunicorn", "-c", "python:portal.gunicorn_conf"]
        commands = {
            "web": [*gunicorn, "--bind", options["addr"]],
            "qcluster": [*manage, "qcluster"],
            "watcher": [*manage, "watch_slaves"],
            "ssh": [*manage, "ssh_gateway"],  # SSH into running jobs (docs/ssh.md)
            # Interactive sessions on their own origin (docs/sessions.md, "The proxy").
            "sessions": [*manage, "session_proxy"],
        }
        # Each child in its own process group, as systemd gives each unit its own: the stop
        # below can then kill a child's whole tree (a q cluster's workers too), never leaving
        # orphans. Ctrl-C reaches this process only; it stops the children itself.
        children = {
            name: subprocess.Popen(cmd, start_new_session=True) for name, cmd in commands.items()
        }
        self.stdout.write(
            f"GPU Portal on http://{options['addr']}/, sessions on "
            f"{settings.PORTAL_SESSION_PROXY_URL}/ (Ctrl-C stops everything)"
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping:
                for name, child in children.items():
                    if child.poll() is not None:
                        self.stderr.write(f"{name} exited with {child.returncode}; stopping all")
                        stopping = True
                time.sleep(0.5)
        finally:
            children_stop(children.values(), grace_s=settings.PORTAL_STOP_DEADLINE_S + 3)


def children_stop(children, *, grace_s: float) -> None:
    """SIGTERM each child (its main process, as systemd's KillMode=mixed does), wait up to
    ``grace_s`` for all, then SIGKILL the process group of any still running, and of every
    child in any case: a child that exited may have left processes of its own."""
    children = list(children)
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for child in children:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()
