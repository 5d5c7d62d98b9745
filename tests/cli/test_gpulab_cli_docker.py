"""gpulab-cli with a job that really runs: the test slave is the local Docker engine.

Skips without a usable engine and the locally built test image (scripts/build-test-image.sh),
unless PORTAL_REQUIRE_DOCKER=1; skips without the client unless PORTAL_REQUIRE_CLI=1.
"""

import json
import os
import re

import pytest

from tests.cli.cli_support import job_status, ok, running_portal, submitted_id
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.cli, pytest.mark.docker]


@pytest.fixture(scope="module")
def portal(gpulab_cli, tools):
    require_docker(docker_url())
    with running_portal("cli-docker", docker_url=docker_url(), watcher=True, gateway=True) as live:
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


def test_ssh_into_a_running_job(cli, portal, tmp_path, login_pem):
    """``gpulab-cli ssh`` / ``sftp --show`` and the ssh it runs, through the portal's gateway.

    The client submits the login PEM's key with the job and logs in with ``ssh -i login.pem``.
    Its ssh runs through a wrapper on PATH that only pins host-key options (OpenSSH reads its
    config from the passwd home, not $HOME, and would ask about the unknown host key)."""
    document = {
        "name": "SshRun",
        "request": {
            "resources": {"clusterId": 1, "gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": "sleep 300"},
            "scheduling": {"maxDuration": "10 minutes"},
        },
    }
    path = tmp_path / "ssh.json"
    path.write_text(json.dumps(document))
    job_id = submitted_id(cli("submit", "--project", "vision", str(path)), portal)
    try:
        ok(cli("wait", job_id, "--wait-run", timeout=180), portal=portal)
        port = portal.env["PORTAL_SSH_PORT"]
        described = ok(cli("jobs", job_id), portal=portal)
        login = next(line for line in described.splitlines() if "SSH login:" in line)
        assert f" -oPort={port} {job_id}@127.0.0.1 -oProxyCommand=" in login, described
        shown = ok(cli("ssh", "--show", job_id), portal=portal)
        full = next(line for line in shown.splitlines() if line.startswith("Full:"))
        assert full.startswith(f"Full:  ssh -i {login_pem} -oPort={port}"), shown
        assert full.endswith(f" {job_id}@127.0.0.1"), shown
        # gpu1.example.org does not resolve: the client goes through the gateway as its proxy.
        assert "-W %h:%p" in full and f"{job_id}@127.0.0.1 -W" in full, shown
        assert "Short: ssh gpulab-" in shown
        shown = ok(cli("sftp", "--show", "--sftp", job_id), portal=portal)
        assert re.search(rf"Full:  sftp -i \S+ -oPort={port} .*{job_id}@127.0.0.1$", shown, re.M)

        wrappers = tmp_path / "bin"
        wrappers.mkdir()
        wrapper = wrappers / "ssh"
        wrapper.write_text(
            "#!/bin/sh\nexec /usr/bin/ssh -o StrictHostKeyChecking=no "
            '-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$@"\n'
        )
        wrapper.chmod(0o755)
        env = {"PATH": f"{wrappers}:{os.environ['PATH']}"}
        script = "echo via-gpulab-cli-$((40+2)); cat /proc/1/cmdline | tr '\\0' ' '; exit 0\n"
        for proxy in ([], ["-P"]):  # through the proxy (auto), and straight (--no-proxy)
            done = cli("ssh", *proxy, job_id, stdin=script, extra_env=env, timeout=60)
            assert "via-gpulab-cli-42" in done.stdout, done.output + portal.server_log(
                "ssh_gateway"
            )
            assert "sleep 300" in done.stdout, done.output
            assert done.returncode == 0, done.output
        events = json.loads(ok(cli("debug", job_id, "--raw")))
        logins = [e["msg"] for e in events if "SSH login" in (e.get("msg") or "")]
        assert len(logins) >= 2 and all("ssh-rsa key SHA256:" in m for m in logins), logins
    finally:
        cli("cancel", job_id)
