"""The README's production processes, and nothing else, do the periodic work (issue 12 item 2).

Starts, as separate processes on a fresh SQLite database: ``manage.py migrate``,
``manage.py collectstatic``, gunicorn (portal/gunicorn_conf.py, WhiteNoise for static files),
``manage.py qcluster`` and ``manage.py watch_slaves``: no run_portal. Within a bounded time the
safety-net tick has run (the scheduler lease records it) and so has reconcile (its schedule
fired a task that succeeded, and it probed a slave nothing else probed). The web process answers
pages with hashed static files it serves itself, and JSON errors under /api/.

About a minute: django-q2's scheduler looks at the schedules every 30 seconds.
"""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 150


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def query(database: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(database, timeout=30) as db:
        return db.execute(sql).fetchall()


@pytest.fixture
def production(tmp_path):
    var_dir = tmp_path / "var"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PORTAL_")},
        "PORTAL_VAR_DIR": str(var_dir),
        "PORTAL_Q_WORKERS": "2",
        "PORTAL_WEB_WORKERS": "1",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }
    manage = [sys.executable, "manage.py"]
    processes: dict[str, subprocess.Popen] = {}
    logs = {}

    def run(*args: str) -> None:
        done = subprocess.run(
            [*manage, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr

    def start(name: str, command: list[str]) -> None:
        logs[name] = (tmp_path / f"{name}.log").open("w")
        processes[name] = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=logs[name], stderr=subprocess.STDOUT
        )

    def log_tail() -> str:
        return "\n".join(
            f"--- {name}\n{(tmp_path / f'{name}.log').read_text()[-3000:]}" for name in logs
        )

    port = free_port()
    run("migrate", "--noinput", "-v0")
    run("collectstatic", "--noinput", "-v0")
    # A slave nobody probes: its offline reason changes only when reconcile probes it.
    run(
        "add_slave",
        "ghost",
        "--cluster",
        "1",
        "--docker",
        "unix:///nonexistent/g.sock",
        "--no-probe",
    )
    start("web", [sys.executable, "-m", "gunicorn", "-c", "python:portal.gunicorn_conf",
                  "--bind", f"127.0.0.1:{port}"])  # fmt: skip
    start("qcluster", [*manage, "qcluster"])
    start("watcher", [*manage, "watch_slaves"])
    try:
        yield f"http://127.0.0.1:{port}", var_dir / "portal.sqlite3", processes, log_tail
    finally:
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for handle in logs.values():
            handle.close()


def test_migrate_gunicorn_qcluster_and_watcher_run_the_tick_and_reconcile(production):
    base, database, processes, log_tail = production
    deadline = time.monotonic() + DEADLINE_S
    ticked = reconciled = probed = None
    while time.monotonic() < deadline:
        for name, process in processes.items():
            assert process.poll() is None, f"{name} exited:\n{log_tail()}"
        ticked = query(database, "SELECT last_tick_at FROM jobs_schedulerlease")
        reconciled = query(
            database,
            "SELECT t.success FROM django_q_schedule s JOIN django_q_task t ON t.id = s.task"
            " WHERE s.func = 'jobs.tasks.reconcile'",
        )
        probed = query(database, "SELECT offline_reason FROM clusters_slave WHERE name='ghost'")
        if ticked and ticked[0][0] and reconciled and probed[0][0] != "not probed yet":
            break
        time.sleep(2)
    assert ticked and ticked[0][0], f"no tick ran\n{log_tail()}"
    assert reconciled == [(1,)], f"reconcile did not run from its schedule\n{log_tail()}"
    assert "unreachable" in probed[0][0] or "nonexistent" in probed[0][0], probed

    # The web process: gunicorn serving pages, its own static files and JSON API errors.
    status, kind, body = get(f"{base}/accounts/login/")
    assert status == 200 and kind.startswith("text/html")
    css = next(
        part.split('"')[0] for part in body.decode().split('href="')[1:] if "portal." in part
    )
    assert css.startswith("/static/css/portal.") and css != "/static/css/portal.css"  # hashed
    status, kind, _ = get(base + css)
    assert status == 200 and kind.startswith("text/css")
    status, kind, body = get(f"{base}/api/gpulab/v4.0/nope")
    assert status == 404 and kind == "application/json"
    assert json.loads(body)["error"] == "not found: /api/gpulab/v4.0/nope"
    status, kind, body = get(f"{base}/api/gpulab/v4.0/version")
    assert status == 200 and json.loads(body)["api_version"] == "4.0"
