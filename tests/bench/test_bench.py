"""The benchmarks (bench/, not installed): their defects stay fixed, and the product's URLs
carry no bench route. Nothing here is timed."""

import io
import json
import uuid

import pytest
from django.core.management import call_command
from django.urls import Resolver404, resolve

from bench import api, launch
from tests.support.scripted_engine import Behaviour

FLOOR = "/api/portal/bench/floor"


def test_the_floor_is_routed_by_the_bench_urls_only():
    with pytest.raises(Resolver404):
        resolve(FLOOR)  # the product's urls (portal.urls)
    assert resolve(FLOOR, urlconf="bench.urls").func.view_class.__name__ == "BenchFloorView"


@pytest.mark.django_db(transaction=True)
def test_inline_mode_when_jobs_end_before_the_first_look(monkeypatch, scripted_engines):
    """`bench/launch.py --mode inline` crashed with a TypeError when the job had ended before
    the first look (its ended_at was never read). Its engine is scripted here: the bench job
    sleeps half a second, the floor runs `true`."""
    scripted_engines.script({"sleep 0.5": Behaviour(runs_for=0.5), "true": Behaviour()})
    submit = launch.job_submit

    def slow_submit(**kwargs):  # a loaded machine: the job has ended when submit returns
        job = submit(**kwargs)
        deadline = launch.time.monotonic() + 10
        while launch.time.monotonic() < deadline:
            job.refresh_from_db(fields=["status"])
            if job.status in ("FINISHED", "FAILED"):
                break
            launch.time.sleep(0.05)
        return job

    monkeypatch.setattr(launch, "job_submit", slow_submit)
    out = io.StringIO()
    call_command(
        launch.Command(), "--mode", "inline", "--docker", f"fake://bench-{uuid.uuid4().hex[:8]}",
        "--runs", "2", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    report = json.loads(out.getvalue())
    assert report["runs"] == 2
    for key in ("submit_to_running_s", "exit_to_finished_s"):
        assert 0 <= report[key]["p50"] <= report[key]["p90"] < 30, (key, report[key])


def test_queue_mode_keeps_the_callers_portal_instance(tmp_path):
    caller = {
        "PORTAL_INSTANCE": "caller-1",
        "PORTAL_DATABASE_URL": "postgres://x@127.0.0.1:5432/x",
        "PORTAL_REDIS_URL": "redis://127.0.0.1:6379/0",
        "PATH": "/usr/bin",
    }
    env = launch.queue_env(str(tmp_path), caller)
    assert env["PORTAL_INSTANCE"] == "caller-1" and env["PATH"] == "/usr/bin"
    # A fresh SQLite database in the temporary directory, on the ORM broker.
    assert env["PORTAL_VAR_DIR"] == str(tmp_path) and env["PORTAL_DATABASE_URL"] == ""
    assert env["PORTAL_TASK_MODE"] == "queue" and "PORTAL_REDIS_URL" not in env
    assert "PORTAL_INSTANCE" not in launch.queue_env(str(tmp_path), {})  # var/ makes its own


def test_the_api_server_listens_on_the_callers_port(monkeypatch, tmp_path):
    started = {}

    class Process:
        def __init__(self, cmd, env, **kwargs):
            started.update(cmd=cmd, env=env)

        def poll(self):
            return None

        def send_signal(self, signal):
            pass

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(api.subprocess, "Popen", Process)
    monkeypatch.setattr(api, "request", lambda *args, **kwargs: (200, b"", None))
    server = api.Server(
        {"PORTAL_VAR_DIR": str(tmp_path)}, workers=1, worker_class="sync", threads=1, port=18123
    )
    server.stop()
    assert server.port == 18123
    assert started["cmd"][started["cmd"].index("--bind") + 1] == "127.0.0.1:18123"
    assert started["env"]["DJANGO_SETTINGS_MODULE"] == "bench.settings"
    assert api.listen_port(0) > 0
