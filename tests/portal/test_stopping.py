"""Every process stops within 20 s of SIGTERM, children included (issue 24 item 4).

The shipped systemd units are read and each service is run as systemd would run it: its
ExecStart in a process group of its own, stopped by its KillMode (``mixed``: SIGTERM to the main
process; ``control-group``: SIGTERM to every process) and given its TimeoutStopSec before the
SIGKILL. Each must be gone well before that SIGKILL, and TimeoutStopSec itself is at most 20 s.
``run_portal`` (what ``make run`` starts) must take its five children and theirs with it.
"""

from __future__ import annotations

import configparser
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
UNITS = sorted((ROOT / "deploy" / "systemd").glob("gpuportal-*.service"))
LIMIT_S = 20


def _unit(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(path.read_text())
    return dict(parser["Service"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PORTAL_")}
    env.update(
        PORTAL_VAR_DIR=str(tmp_path / "var"),
        PORTAL_Q_WORKERS="2",
        PORTAL_WEB_WORKERS="2",
        PORTAL_WEB_BIND=f"127.0.0.1:{_free_port()}",
        PORTAL_SSH_PORT=str(_free_port()),
        PORTAL_SESSION_PROXY_BIND=f"127.0.0.1:{_free_port()}",
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300
    )
    return env


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(processes: list[psutil.Process]) -> list[int]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_for_tree(pid: int, at_least: int, timeout: float = 60) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    tree = _tree(pid)
    while len(tree) < at_least and time.monotonic() < deadline:
        time.sleep(0.5)
        tree = _tree(pid)
    return tree


def _stopped_within(processes: list[psutil.Process], child: subprocess.Popen, limit: float):
    began = time.monotonic()
    while _alive(processes) and time.monotonic() - began < limit:
        child.poll()  # reap the main process as systemd does
        time.sleep(0.2)
    child.poll()
    return time.monotonic() - began, _alive(processes)


def test_every_unit_sets_its_kill_mode_and_a_stop_timeout_of_at_most_20s():
    assert {u.name for u in UNITS} >= {
        "gpuportal-web.service",
        "gpuportal-qcluster.service",
        "gpuportal-watcher.service",
        "gpuportal-ssh.service",
        "gpuportal-sessions.service",
    }
    for path in UNITS:
        service = _unit(path)
        assert service.get("KillMode") in {"mixed", "control-group"}, path.name
        assert int(service["TimeoutStopSec"]) <= LIMIT_S, path.name


# How many processes each service has once it is up (main process included).
READY_TREE = {
    "gpuportal-web.service": 3,  # gunicorn master and 2 workers
    "gpuportal-qcluster.service": 6,  # main, sentinel, 2 workers, pusher, monitor
    "gpuportal-watcher.service": 1,
    "gpuportal-ssh.service": 1,
    "gpuportal-sessions.service": 1,
}


@pytest.mark.parametrize("unit", UNITS, ids=lambda path: path.stem)
def test_each_unit_stops_within_its_timeout_as_systemd_stops_it(unit, env):
    service = _unit(unit)
    command = [
        word.replace("/opt/gpuportal/.venv/bin/python", sys.executable).replace(
            "/opt/gpuportal/.venv/bin/gunicorn", str(Path(sys.executable).parent / "gunicorn")
        )
        for word in shlex.split(service["ExecStart"])
    ]
    child = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # systemd's own cgroup for the unit
    )
    try:
        tree = _wait_for_tree(child.pid, READY_TREE[unit.name])
        assert len(tree) >= READY_TREE[unit.name], [p.pid for p in tree]
        time.sleep(2)  # past start-up: a stop that comes while it works
        tree = _tree(child.pid)
        if service["KillMode"] == "mixed":
            child.send_signal(signal.SIGTERM)
        else:
            os.killpg(child.pid, signal.SIGTERM)
        took, left = _stopped_within(tree, child, int(service["TimeoutStopSec"]))
        assert not left, f"{unit.name}: {left} still running after {took:.1f} s"
        assert took < LIMIT_S
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait(timeout=10)


def test_run_portal_stops_with_all_its_children_within_20s(env):
    bind = env["PORTAL_WEB_BIND"]
    child = subprocess.Popen(
        [sys.executable, "manage.py", "run_portal", "--addr", bind],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://{bind}/api/gpulab/v4.0/", timeout=2):
                    pass
                break
            except OSError as error:
                if getattr(error, "code", None):  # any HTTP answer: the web is up
                    break
                time.sleep(0.5)
        # run_portal, gunicorn (master + 2), q cluster (6), watcher, SSH gateway, session proxy
        tree = _wait_for_tree(child.pid, 1 + 3 + 6 + 3)
        assert len(tree) >= 13, [(p.pid, p.cmdline()[-2:]) for p in tree]
        assert any("session_proxy" in p.cmdline() for p in tree)
        child.send_signal(signal.SIGTERM)
        took, left = _stopped_within(tree, child, LIMIT_S)
        assert not left, f"{left} still running after {took:.1f} s"
    finally:
        for process in _tree(child.pid):
            process.kill()
        child.wait(timeout=10)
