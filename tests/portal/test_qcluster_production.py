"""The q cluster as deployed (issue 24 items 1, 2 and 4), on PostgreSQL with default settings.

- Item 1: with the connection pool on (the default), tasks run and the log holds no error:
  forked workers never share the parent's connections (core/forksafe.py).
- Item 2: a schedule django-q2 cannot read is set aside and the others keep firing
  (portal/schedules.py); failed webhook deliveries are retried at their delays by the watcher's
  timer, in queue mode, while the periodic schedules run.
- Item 4: SIGTERM stops the q cluster within 20 s with a task still running, children included,
  sent to its main process (systemd's KillMode=mixed) or to its whole process group.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.support.postgres import throwaway_database

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
MANAGE = [sys.executable, str(ROOT / "manage.py")]
BAD_LOG_WORDS = ("Traceback", "ERROR", "Error:", "reincarnated")


def _env(url: str, var_dir: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PORTAL_")}
    env.update(
        PORTAL_DATABASE_URL=url,
        PORTAL_VAR_DIR=str(var_dir),
        PORTAL_Q_WORKERS="2",
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
        DJANGO_SETTINGS_MODULE="portal.settings",
    )
    env.update(extra)
    return env


def _shell(env: dict, script: str) -> str:
    done = subprocess.run(
        [*MANAGE, "shell", "-c", script],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _query(env: dict, expression: str):
    """The JSON value of ``expression`` evaluated in a manage.py shell on the site."""
    out = _shell(env, f"import json; print('RESULT ' + json.dumps({expression}))")
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def _wait(predicate, *, timeout: float, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    return predicate()


@pytest.fixture
def site(tmp_path):
    with throwaway_database("portal_qcluster") as url:
        env = _env(url, tmp_path / "var")
        subprocess.run([*MANAGE, "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=300)
        yield env


def _start(env: dict, log: Path, *command: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*MANAGE, *command],
        env=env,
        cwd=ROOT,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as systemd gives each unit
    )


def _group_alive(pgid: int) -> list[int]:
    alive = []
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(process.info["pid"]) == pgid and process.status() != "zombie":
                alive.append(process.info["pid"])
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return alive


def _stop_group(process: subprocess.Popen) -> None:
    if process.poll() is None or _group_alive(process.pid):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


def test_pooled_qcluster_runs_tasks_and_sets_aside_an_unreadable_schedule(site, tmp_path):
    """Default settings (pool on): 20 tasks run, 0 errors; a poisoned schedule does not stop a
    due schedule beside it from firing."""
    assert "pool" in json.dumps(
        _query(site, "__import__('django.conf').conf.settings.DATABASES['default']['OPTIONS']")
    )
    # A row as an older release stored a webhook retry (an enum's repr): written with update(),
    # which no pre_save guard sees.
    _shell(
        site,
        "from django_q.models import Schedule; from django.utils import timezone; "
        "s = Schedule.objects.create(func='math.floor', args='1.5', name='poisoned', "
        "schedule_type=Schedule.ONCE, next_run=timezone.now()); "
        "Schedule.objects.filter(pk=s.pk).update(args=\"(52, <JobStatus.QUEUED: 'QUEUED'>)\"); "
        "Schedule.objects.create(func='math.ceil', args='2.5', name='readable', "
        "schedule_type=Schedule.ONCE, repeats=1, next_run=timezone.now())",
    )
    log = tmp_path / "qcluster.log"
    cluster = _start(site, log, "qcluster")
    try:
        _shell(
            site,
            "from django_q.tasks import async_task\n"
            "for i in range(20): async_task('math.floor', i + 0.5, group='probe')",
        )
        done = _wait(
            lambda: (
                _query(
                    site,
                    "__import__('django_q.models').models.Success.objects.filter(group='probe').count()",
                )
                == 20
            ),
            timeout=60,
        )
        assert done, log.read_text()[-3000:]
        # django-q2's scheduler looks every 30 s: the readable schedule fires on its first pass.
        fired = _wait(
            lambda: _query(
                site,
                "__import__('django_q.models').models.Success.objects.filter(func='math.ceil').count()",
            ),
            timeout=75,
            every=2,
        )
        assert fired == 1, log.read_text()[-3000:]
        name, repeats = _query(
            site,
            "list(__import__('django_q.models').models.Schedule.objects"
            ".filter(func='math.floor').values_list('name', 'repeats').get())",
        )
        assert name.startswith("UNREADABLE") and repeats == 0
    finally:
        cluster.send_signal(signal.SIGTERM)
        cluster.wait(timeout=30)
        _stop_group(cluster)
    text = log.read_text()
    assert "set aside" in text  # the reason is logged once
    other = [line for line in text.splitlines() if any(w in line for w in BAD_LOG_WORDS)]
    assert [line for line in other if "set aside" not in line] == [], text[-4000:]


def test_a_schedule_that_cannot_be_read_is_never_stored(site):
    out = _shell(
        site,
        "from django_q.models import Schedule\n"
        "try:\n"
        "    Schedule.objects.create(func='math.floor', args='(JobStatus.QUEUED,)')\n"
        "except ValueError as error:\n"
        "    print('REFUSED', error)\n",
    )
    assert "REFUSED" in out and "not plain literals" in out
    assert (
        _query(
            site,
            "__import__('django_q.models').models.Schedule.objects.filter(func='math.floor').count()",
        )
        == 0
    )


@pytest.mark.parametrize("target", ["main", "group"])
def test_sigterm_stops_the_qcluster_and_its_children_within_20s(site, tmp_path, target):
    log = tmp_path / "qcluster.log"
    cluster = _start(site, log, "qcluster")
    try:
        started = _wait(lambda: "running." in log.read_text(), timeout=60)
        assert started, log.read_text()
        _shell(
            site,
            "from django_q.tasks import async_task; async_task('time.sleep', 120, timeout=300)",
        )
        busy = _wait(
            lambda: "processing" in log.read_text() and "time.sleep" in log.read_text(), timeout=30
        )
        assert busy, log.read_text()
        children = psutil.Process(cluster.pid).children(recursive=True)
        assert len(children) >= 4  # sentinel, workers, pusher, monitor
        began = time.monotonic()
        if target == "main":
            cluster.send_signal(signal.SIGTERM)  # systemd's KillMode=mixed
        else:
            os.killpg(cluster.pid, signal.SIGTERM)  # Ctrl-C-like: everyone at once
        cluster.wait(timeout=25)
        gone = _wait(lambda: not _group_alive(cluster.pid), timeout=25 - (time.monotonic() - began))
        took = time.monotonic() - began
        assert gone, f"still running after {took:.1f} s: {_group_alive(cluster.pid)}"
        assert took < 20, took
        assert not [c.pid for c in children if c.is_running() and c.status() != "zombie"]
    finally:
        _stop_group(cluster)


class _Receiver(http.server.BaseHTTPRequestHandler):
    """Answers 500 to the first two deliveries, then 200; records when each arrived."""

    arrivals: list[float] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.arrivals.append(time.monotonic())
        self.send_response(500 if len(self.arrivals) <= 2 else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_webhook_retries_arrive_at_their_delays_in_queue_mode(tmp_path):
    """A receiver that fails twice, then answers 200: the attempts arrive at 0, +2 and +4 s
    (PORTAL_WEBHOOK_RETRY_DELAYS_S=2,4,8 here), sent by the real q cluster and watcher. The
    first attempt is queued as a release before the notifications app queued it
    (``jobs.tasks.job_deliver``, portal/moved_tasks.py); the retries, fired by the
    notifications app's timer in the watcher, under its own path."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    _Receiver.arrivals = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    with throwaway_database("portal_webhook") as url:
        env = _env(
            url,
            tmp_path / "var",
            PORTAL_WEBHOOK_RETRY_DELAYS_S="2,4,8",
            PORTAL_WEBHOOK_ALLOWED_HOSTS=f"127.0.0.1:{port}",
        )
        subprocess.run([*MANAGE, "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=300)
        cluster = _start(env, tmp_path / "qcluster.log", "qcluster")
        watcher = _start(env, tmp_path / "watcher.log", "watch_slaves")
        try:
            assert _wait(lambda: "running." in (tmp_path / "qcluster.log").read_text(), timeout=60)
            _shell(
                env,
                "import uuid\n"
                "from django.contrib.auth.models import User\n"
                "from accounts.models import Project\n"
                "from django_q.tasks import async_task\n"
                "from jobs.models import Job\nfrom django.utils import timezone\n"
                "owner = User.objects.create_user('hooked')\n"
                "project = Project.objects.create(name='hooks', gid=5000)\n"
                f"target = {{'deliveryMethod': 'WEBHOOK', 'deliveryAddress': 'http://127.0.0.1:{port}/hook'}}\n"
                "request = {'notifications': {'subscriptions': [{'eventTypes': ['FINISHED'], "
                "'deliveryTargets': [target]}]}}\n"
                "job = Job.objects.create(name='hook', owner=owner, project=project, "
                "request=request, gpus=0, cpus=1, cpu_memory_gb=1, min_duration_s=1, "
                "max_duration_s=2, status='FINISHED', status_updated=timezone.now(), created=timezone.now())\n"
                "async_task('jobs.tasks.job_deliver', job.pk, 'FINISHED', 0, 0, "
                "str(uuid.uuid4()), 1)\n",
            )
            arrived = _wait(lambda: len(_Receiver.arrivals) >= 3, timeout=40)
            assert arrived, (tmp_path / "watcher.log").read_text()[-3000:]
            first, second, third = _Receiver.arrivals[:3]
            assert 1.5 <= second - first <= 3.5, _Receiver.arrivals
            assert 3.5 <= third - second <= 5.5, _Receiver.arrivals
            time.sleep(3)
            assert len(_Receiver.arrivals) == 3  # the 200 ended it: no fourth attempt
            rows = _query(
                env,
                "list(__import__('notifications.models').models.JobDelivery.objects"
                ".order_by('attempt')"
                ".values_list('attempt', 'ok', 'retry_in_s'))",
            )
            assert rows == [[1, False, 2], [2, False, 4], [3, True, None]]
            # The first ran by its old path; the notifications app fired the retries by its own.
            ran = _query(
                env,
                "sorted(__import__('django_q.models').models.Success.objects"
                ".filter(func__endswith='.job_deliver').values_list('func', flat=True))",
            )
            assert ran == ["jobs.tasks.job_deliver", *["notifications.tasks.job_deliver"] * 2]
            # Nothing was stored as a django-q2 schedule for it (those wait for a 30 s pass).
            assert (
                _query(
                    env,
                    "__import__('django_q.models').models.Schedule.objects"
                    ".filter(func__endswith='.job_deliver').count()",
                )
                == 0
            )
        finally:
            for process in (cluster, watcher):
                process.send_signal(signal.SIGTERM)
            for process in (cluster, watcher):
                process.wait(timeout=30)
                _stop_group(process)
            server.shutdown()
        for name in ("qcluster", "watcher"):
            text = (tmp_path / f"{name}.log").read_text()
            assert "Traceback" not in text, text[-3000:]
