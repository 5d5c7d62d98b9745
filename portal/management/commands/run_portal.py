"""Start the web server, the django-q2 cluster and the slave watcher as one process tree.

The web server is gunicorn (portal/gunicorn_conf.py) with WhiteNoise serving the static files,
as in production; the same three processes run as services there (deploy/systemd/).
"""

import os
import signal
import subprocess
import sys
import time

from django.core.management import call_command
from django.core.management.base import BaseCommand

from portal.schedules import schedules_ensure


class Command(BaseCommand):
    help = "Run web (gunicorn), q cluster and slave watcher together; Ctrl-C stops all."

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
        }
        children = {name: subprocess.Popen(cmd) for name, cmd in commands.items()}
        self.stdout.write(f"GPU Portal on http://{options['addr']}/ (Ctrl-C stops everything)")
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
            for child in children.values():
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.time() + 15
            for child in children.values():
                try:
                    child.wait(timeout=max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    os.kill(child.pid, signal.SIGKILL)
