"""``bench/launch.py --mode queue`` runs the portal as deployed (real q cluster and watcher
subprocesses on a temporary database) and reports every latency it promises."""

import io
import json

import pytest
from django.core.management import call_command

from bench.launch import Command
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.docker]


def test_queue_mode_reports_the_deployed_latencies():
    require_docker(docker_url())
    out = io.StringIO()
    call_command(
        Command(), "--mode", "queue", "--runs", "1", "--image", TEST_IMAGE,
        "--docker", docker_url(), stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    report = json.loads(out.getvalue())
    assert report["runs"] == 1 and report["mode"].startswith("queue")
    for key in (
        "submit_to_running_s",
        "bare_docker_run_s",
        "exit_to_finished_s",
        "freed_gpus_to_next_running_s",
        "not_before_to_assigned_s",
    ):
        p50, p90 = report[key]["p50"], report[key]["p90"]
        assert 0 <= p50 <= p90 < 30, (key, report[key])
    # The notBefore job was started by the wakeup timer, not by a minute tick.
    assert report["not_before_to_assigned_s"]["p50"] < 2.0
    parts = report["submit_to_running_parts_p50_s"]
    assert set(parts) == {"to_assigned", "to_starting", "to_running"}
