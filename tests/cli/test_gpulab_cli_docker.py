"""gpulab-cli with a job that really runs: the test slave is the local Docker engine.

Skips without a usable engine and the locally built test image (scripts/build-test-image.sh),
unless PORTAL_REQUIRE_DOCKER=1; skips without the client unless PORTAL_REQUIRE_CLI=1.
"""

import json
import os
import re
import subprocess

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


def test_sftp_files_and_ssh_folder_keys_with_gpulab_cli(cli, portal, tmp_path):
    """Issue 26 item 8 with the real client: a file put with ``gpulab-cli sftp`` into the job's
    /project takes the project's group, as a file the job's shell makes does; a key added to
    the job's ``.ssh/authorized_keys`` through ``gpulab-cli ssh`` lets its holder in.

    The storage entry is the seed's own (gpulab-job-request-v2, ".ssh"): "you need to mount it
    like this: {"hostPath": ".ssh", "containerPath": "/root/.ssh/"}"."""
    document = {
        "name": "SshFiles",
        "request": {
            "resources": {"clusterId": 1, "gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {
                "image": TEST_IMAGE,
                "command": "sleep 300",
                "storage": [
                    {"hostPath": "/project", "containerPath": "/project"},
                    {"hostPath": ".ssh", "containerPath": "/root/.ssh/"},
                ],
            },
            "scheduling": {"maxDuration": "10 minutes"},
        },
    }
    path = tmp_path / "files.json"
    path.write_text(json.dumps(document))
    job_id = submitted_id(cli("submit", "--project", "vision", str(path)), portal)
    try:
        ok(cli("wait", job_id, "--wait-run", timeout=180), portal=portal)
        # The client execs ssh and sftp from PATH: wrappers that only pin host-key options.
        wrappers = tmp_path / "bin"
        wrappers.mkdir()
        for program in ("ssh", "sftp"):
            wrapper = wrappers / program
            wrapper.write_text(
                f"#!/bin/sh\nexec /usr/bin/{program} -o StrictHostKeyChecking=no "
                '-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$@"\n'
            )
            wrapper.chmod(0o755)
        env = {"PATH": f"{wrappers}:{os.environ['PATH']}"}
        upload = tmp_path / "up.txt"
        upload.write_text("put by gpulab-cli sftp\n")
        put = cli(
            "sftp", "--sftp", job_id, stdin=f"put {upload} /project/by-sftp.txt\n",
            extra_env=env, timeout=60,
        )  # fmt: skip
        assert put.returncode == 0, put.output + portal.server_log("ssh_gateway")
        fresh = tmp_path / "id_fresh"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fresh", "-f", str(fresh)],
            check=True,
        )
        fresh_pub = fresh.with_suffix(".pub").read_text().strip()
        script = (
            "echo > /project/by-shell.txt; stat -c 'group %n %g' /project/by-*.txt;"
            f" echo '{fresh_pub}' >> /root/.ssh/authorized_keys; exit 0\n"
        )
        done = cli("ssh", job_id, stdin=script, extra_env=env, timeout=60)
        assert done.returncode == 0, done.output + portal.server_log("ssh_gateway")
        groups = [line for line in done.stdout.splitlines() if line.startswith("group ")]
        assert groups == [
            "group /project/by-sftp.txt 6001",  # vision's GID (tests/cli/portal_setup.py)
            "group /project/by-shell.txt 6001",
        ], done.output
        port = portal.env["PORTAL_SSH_PORT"]
        login = subprocess.run(
            ["ssh", "-F", "/dev/null", "-o", "StrictHostKeyChecking=no",
             "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
             "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-i", str(fresh),
             "-p", str(port), f"{job_id}@127.0.0.1", "echo via-authorized-keys"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert login.stdout == "via-authorized-keys\n", login.stderr + portal.server_log(
            "ssh_gateway"
        )
        events = json.loads(ok(cli("debug", job_id, "--raw")))
        assert any(".ssh/authorized_keys" in (e.get("msg") or "") for e in events), events
    finally:
        cli("cancel", job_id)
