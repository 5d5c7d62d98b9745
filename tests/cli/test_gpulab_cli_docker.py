"""gpulab-cli with a job that really runs: the test slave is the local Docker engine.

Skips without a usable engine and the locally built test image (scripts/build-test-image.sh),
unless PORTAL_REQUIRE_DOCKER=1; skips without the client unless PORTAL_REQUIRE_CLI=1.
"""

import json

import pytest

from tests.cli.cli_support import job_status, ok, running_portal, submitted_id
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.cli, pytest.mark.docker]


@pytest.fixture(scope="module")
def portal(gpulab_cli, tools):
    require_docker(docker_url())
    with running_portal("cli-docker", docker_url=docker_url(), watcher=True) as live:
        yield live


def test_a_job_runs_and_its_log_comes_back(cli, portal, tmp_path):
    document = {
        "name": "RealRun",
        "request": {
            "resources": {"clusterId": 1, "gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": "echo Hello from a real container"},
            "scheduling": {"maxDuration": "10 minutes"},
        },
    }
    path = tmp_path / "real.json"
    path.write_text(json.dumps(document))
    job_id = submitted_id(cli("submit", "--project", "vision", str(path)), portal)
    done = cli("wait", job_id, "--wait-done", timeout=180)
    ok(done, portal=portal)
    assert "Job has finished" in done.stderr, done.stderr + portal.server_log("watcher")
    assert job_status(portal, job_id) == "FINISHED", portal.server_log("watcher")
    out = ok(cli("jobs", job_id), portal=portal)
    assert "Status: FINISHED" in out
    assert "Worker Name: gpu1" in out
    log = ok(cli("log", job_id), portal=portal)
    assert "Hello from a real container" in log
    events = json.loads(ok(cli("debug", job_id, "--raw")))
    assert [e["newState"] for e in events if e["type"] == "Status Change"][-1] == "FINISHED"
