"""The real gpulab-cli (PyPI imecilabt-gpulab-cli 3.11.x) against a live portal behind the local
TLS front end (scripts/tls-frontend.sh), logged in with a login PEM downloaded from the portal.

Needs network access to install the client once (cached in var/test-cli-venv/<version>/),
nginx and openssl. Without them the tests skip with the reason, unless PORTAL_REQUIRE_CLI=1
(CI), where they fail.
"""

import json
import re
import signal
import subprocess
import threading
import time

import pytest

from tests.cli.cli_support import (
    ALICE_URN,
    CLI_VERSION,
    UUID_RE,
    foreign_login_pem,
    job_file,
    job_status,
    ok,
    running_portal,
    submitted_id,
    wait_until,
)

pytestmark = pytest.mark.cli


@pytest.fixture(scope="module")
def portal(gpulab_cli, tools):
    """Slave gpu1 (4 declared GPUs) has no engine behind it: jobs stay where the test puts them."""
    with running_portal("cli") as live:
        yield live


# --- the commands -----------------------------------------------------------------------------


def test_version(cli):
    done = cli("version")
    assert ok(done).strip() == CLI_VERSION


def test_clusters(cli, portal):
    out = ok(cli("clusters"), portal=portal)
    assert "1 production" in out
    assert "cli test cluster" in out
    assert "Tesla V100" in out
    row = next(line for line in out.splitlines() if "cli test cluster" in line)
    assert re.search(r"\b\d+/4\b", row), row  # GPUs free/total
    assert re.search(r"\b\d+/16\b", row), row  # CPUs free/total


def test_clusters_id_short(cli, portal):
    out = ok(cli("clusters", "1", "--short"), portal=portal)
    assert "Slave host" in out
    row = next(line for line in out.splitlines() if "gpu1" in line)
    assert re.search(r"\b\d+/4\b", row), row
    assert re.search(r"\b\d+/16\b", row), row
    assert "65.54" in row or "/65.54" in row, row  # 64 GiB = 65536 MB, printed / 1000
    out = ok(cli("clusters", "2", "--short"), portal=portal)
    assert "gpu1" not in out


def test_slaves_carry_their_environment_and_cpu_model(cli, portal):
    slaves = json.loads(ok(cli("clusters", "--all", "--raw"), portal=portal))
    gpu1 = next(s for s in slaves if s["name"] == "gpu1")
    assert gpu1["deploymentEnvironment"] == "production"
    assert gpu1["cpuModel"] == ["Test CPU"]


def test_an_owner_address_the_client_rejects_never_breaks_the_project_list(cli, portal):
    """Issue 15: `admin@localhost` (or any .local/.test address) of one member made `jobs`,
    `jobs ID` and `wait` print "Could not parse server answer" for the whole project."""
    portal.setup("user", "--name", "carol", "--email", "admin@localhost", "--project", "vision")
    theirs = portal.setup("job", "--user", "carol", "--status", "QUEUED", "--name", "Carols")
    out = ok(cli("jobs", "-c", "50"), portal=portal)
    assert "Could not parse" not in out
    assert theirs["uuid"][:8] in out or "Carols" in out
    assert f"Job ID: {theirs['uuid']}" in ok(cli("jobs", theirs["uuid"]), portal=portal)


def test_clusters_id_long(cli, portal):
    out = ok(cli("clusters", "1"), portal=portal)
    assert 'Host "gpu1"' in out
    assert "CUDA version: 12.2" in out


def test_submit_with_project_option(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))), portal)
    assert job_status(portal, job_id) == "QUEUED"
    out = ok(cli("jobs", job_id), portal=portal)
    assert f"Job ID: {job_id}" in out
    assert re.search(r"Name: HelloWorld$", out, re.M)
    assert re.search(r"Project: vision$", out, re.M)
    assert f"User URN: {ALICE_URN}" in out
    assert "User ID: alice@gpuportal.local" in out
    assert "Docker image: debian:stable" in out
    assert "Command: echo 'Hello World!'" in out
    assert re.search(r"Status: QUEUED$", out, re.M)


def test_submit_with_project_in_job_file_and_stdin(cli, portal, tmp_path):
    path = job_file(tmp_path, name="FromOwner", project="vision")
    job_id = submitted_id(cli("submit", str(path)), portal)
    assert job_status(portal, job_id) == "QUEUED"
    job_id = submitted_id(cli("submit", stdin=path.read_text()), portal)
    assert job_status(portal, job_id) == "QUEUED"


def test_submit_hold(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--hold", "--project", "vision", str(job_file(tmp_path))))
    assert job_status(portal, job_id) == "ONHOLD"


def test_submit_to_a_project_of_someone_else_is_refused(cli, tmp_path):
    done = cli("submit", "--project", "speech", str(job_file(tmp_path)))
    assert done.returncode != 0
    assert "No permission to submit job" in done.output


def test_submit_without_project_is_refused_by_the_client(cli, tmp_path):
    done = cli("submit", str(job_file(tmp_path)))
    assert done.returncode != 0
    assert "--project is mandatory" in done.output


def test_hold_and_release(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    assert ok(cli("hold", job_id), portal=portal).strip() == job_id
    assert job_status(portal, job_id) == "ONHOLD"
    assert "Status: ONHOLD" in ok(cli("jobs", job_id))
    assert ok(cli("release", job_id), portal=portal).strip() == job_id
    assert job_status(portal, job_id) == "QUEUED"
    # releasing a queued job is refused with a message
    done = cli("release", job_id)
    assert done.returncode != 0
    assert "Error while releasing job" in done.output


def test_cancel_and_rm(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    assert ok(cli("cancel", job_id), portal=portal).strip() == job_id
    assert job_status(portal, job_id) == "CANCELLED"
    assert "Status: CANCELLED" in ok(cli("jobs", job_id))
    # GPULab: an ended job is removed only with --finished.
    done = cli("rm", job_id)
    assert done.returncode != 0
    assert "finished=true" in done.output
    assert job_status(portal, job_id) == "CANCELLED"
    assert ok(cli("rm", "--finished", job_id), portal=portal).strip() == job_id
    assert job_status(portal, job_id) == "DELETED"
    assert job_id not in ok(cli("jobs", "-U"))


def test_rm_revokes_a_pending_job(cli, portal, tmp_path):
    """GPULab's rm without flags revokes a job that has not run: queued or on hold."""
    for hold in (False, True):
        args = ["submit", "--project", "vision", *(["--hold"] if hold else [])]
        job_id = submitted_id(cli(*args, str(job_file(tmp_path))))
        assert job_status(portal, job_id) == ("ONHOLD" if hold else "QUEUED")
        assert ok(cli("rm", job_id), portal=portal).strip() == job_id
        assert job_status(portal, job_id) == "DELETED"


def test_rm_real_needs_admin(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    ok(cli("cancel", job_id))
    done = cli("rm", "--real", job_id)
    assert done.returncode != 0
    assert "Error while revoking request" in done.output
    assert job_status(portal, job_id) == "CANCELLED"
    assert ok(cli("rm", "--finished", job_id)).strip() == job_id
    assert job_status(portal, job_id) == "DELETED"


def test_rm_real_force_removes_a_running_job_in_one_call(cli, portal):
    """Issue 26: an admin's ``rm --real --force`` on a RUNNING job cancels it and removes it
    in one call (it used to cancel, answer an error, and need a second call)."""
    root_pem = portal.download_login_pem("root", "root-pw-1618", portal.var_dir / "root.pem")
    job_id = portal.setup("job", "--user", "alice", "--status", "RUNNING", "--name", "Gone")["uuid"]
    assert ok(cli("rm", "--real", "--force", job_id, pem=root_pem), portal=portal).strip() == job_id
    done = cli("jobs", job_id, pem=root_pem)
    assert done.returncode != 0, done.output
    with pytest.raises(AssertionError, match="DoesNotExist"):
        job_status(portal, job_id)


def test_submit_with_ssh_pub_key_option(cli, portal, tmp_path, home):
    """Issue 26: ``submit --ssh-pub-key KEY`` — the client appends its option's values to the
    keys it found as one nested list; the portal flattens it one level and keeps every key."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(exist_ok=True)
    found, given = (_ed25519_public_key(comment) for comment in ("found", "given"))
    (ssh_dir / "id_ed25519.pub").write_text(found + "\n")
    args = ("submit", "--project", "vision", "--ssh-pub-key", given, str(job_file(tmp_path)))
    job_id = submitted_id(cli(*args), portal)
    raw = json.loads(ok(cli("jobs", "--raw", job_id), portal=portal))
    keys = raw["request"]["extra"]["sshPubKeys"]
    assert given in keys and found in keys, keys
    assert all(isinstance(key, str) for key in keys), keys


def _ed25519_public_key(comment: str) -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    public = Ed25519PrivateKey.generate().public_key()
    text = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return f"{text.decode()} {comment}"


def test_halt_running_job(cli, portal):
    job_id = portal.setup("job", "--user", "alice", "--status", "RUNNING", "--name", "ToHalt")[
        "uuid"
    ]
    assert ok(cli("halt", job_id), portal=portal).strip() == job_id
    # MUSTHALT at once; the halt task cannot reach the (fake) slave's engine afterwards
    assert job_status(portal, job_id) in {"MUSTHALT", "HALTING", "HALTED", "FAILED"}
    done = cli("halt", job_id)  # not RUNNING any more
    assert done.returncode != 0
    assert "Error while halting job" in done.output


def test_jobs_list_and_filters(cli, portal, tmp_path):
    mine = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    bob_running = portal.setup("job", "--user", "bob", "--status", "RUNNING", "--name", "BobJob")
    bob_queued = portal.setup("job", "--user", "bob", "--status", "QUEUED", "--name", "BobQ")

    plain = ok(cli("jobs"), portal=portal)  # no query parameters: the server's default page
    assert plain.splitlines()[0].split()[:3] == ["TASK", "ID", "NAME"]
    assert 2 <= len(plain.splitlines()) <= 11  # header + at most 10 rows

    done = cli("jobs", "-c", "200")
    out = ok(done, portal=portal)
    assert "Could not check availability" not in done.stderr  # GET version works
    assert "Error parsing availability" not in done.stderr
    header = out.splitlines()[0]
    assert header.split()[:3] == ["TASK", "ID", "NAME"]
    row = next(line for line in out.splitlines() if line.startswith(mine))
    # the USER column is 12 characters wide: alice@gpuportal.local -> alice@gpupor
    assert "HelloWorld" in row and "alice@gpupor" in row and "vision" in row
    assert row.rstrip().endswith("QUEUED")
    # other people's jobs are listed, sanitised
    bob_row = next(line for line in out.splitlines() if line.startswith(bob_running["uuid"]))
    assert "BobJob" not in bob_row
    assert "job-" + bob_running["uuid"][:6] in bob_row
    assert "hidden" in bob_row

    # -U: only the caller's jobs
    out = ok(cli("jobs", "-U"), portal=portal)
    assert mine in out
    assert bob_running["uuid"] not in out and bob_queued["uuid"] not in out
    # -c limits the number of rows
    out = ok(cli("jobs", "-c", "1"), portal=portal)
    assert len([line for line in out.splitlines() if UUID_RE.match(line[:36])]) == 1
    # --raw prints the JSON the server sent
    raw = json.loads(ok(cli("jobs", "-U", "--raw")))
    assert {item["uuid"] for item in raw} >= {mine}


def test_jobs_user_adds_other_users_running_jobs(cli, portal, tmp_path):
    """`jobs -u` sends user_urn=<me>&other_user_running=True: mine plus others' RUNNING jobs."""
    mine = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    bob_running = portal.setup("job", "--user", "bob", "--status", "RUNNING", "--name", "BobR")
    bob_queued = portal.setup("job", "--user", "bob", "--status", "QUEUED", "--name", "BobQ2")
    out = ok(cli("jobs", "-u"), portal=portal)
    assert mine in out
    assert bob_queued["uuid"] not in out
    assert bob_running["uuid"] in out


def test_jobs_id_raw_and_definition(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    raw = json.loads(ok(cli("jobs", job_id, "--raw")))
    assert raw["uuid"] == job_id
    assert raw["owner"]["userUrn"] == ALICE_URN
    assert raw["state"]["status"] == "QUEUED"


def test_jobs_unknown_id(cli):
    done = cli("jobs", "00000000-0000-4000-8000-000000000000")
    assert done.returncode != 0
    assert "Could not retrieve info for job" in done.output


def test_wait(cli, portal):
    running = portal.setup("job", "--user", "alice", "--status", "RUNNING", "--name", "Waiting")
    done = cli("wait", running["uuid"], "--wait-run", timeout=60)
    ok(done, portal=portal)
    assert "Job is in state RUNNING" in done.stderr
    assert "Job is now running" in done.stderr
    finished = portal.setup("job", "--user", "alice", "--status", "FINISHED", "--log", "x\n")
    done = cli("wait", finished["uuid"], "--wait-done", timeout=60)
    ok(done, portal=portal)
    assert "Job is in state FINISHED" in done.stderr
    assert "Job has finished" in done.stderr


def test_debug(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    ok(cli("hold", job_id))
    out = ok(cli("debug", job_id), portal=portal)
    assert "STATE CHANGED -> QUEUED" in out
    assert "STATE CHANGED -> ONHOLD" in out
    events = json.loads(ok(cli("debug", job_id, "--raw")))
    assert all(event["jobId"] == job_id for event in events)
    assert {"Status Change"} <= {event["type"] for event in events}


def test_debug_says_why_a_job_ended(cli, portal, tmp_path):
    """The reason of a cancel (or failure) is printed by plain `debug`, not only `debug -r`."""
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    ok(cli("cancel", job_id))
    out = ok(cli("debug", job_id), portal=portal)
    assert "STATE CHANGED -> CANCELLED" in out
    assert "LOG INFO: CANCELLED: cancelled by alice" in out


def test_log(cli, portal):
    job = portal.setup(
        "job", "--user", "alice", "--status", "FINISHED", "--log", "Hello World!\nsecond line\n"
    )
    out = ok(cli("log", job["uuid"]), portal=portal)
    assert out.splitlines() == ["Hello World!", "second line"]


def test_log_of_a_job_without_output(cli, portal):
    job = portal.setup("job", "--user", "alice", "--status", "QUEUED", "--name", "NoLog")
    done = cli("log", job["uuid"])
    ok(done, portal=portal)
    assert done.stdout.strip() == ""


def test_log_follow(cli, portal):
    job = portal.setup("job", "--user", "alice", "--status", "RUNNING", "--log", "line 1\n")
    follower = cli.popen("log", "-f", job["uuid"])
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(line.rstrip("\n") for line in follower.stdout), daemon=True
    )
    reader.start()
    try:
        wait_until(lambda: "line 1" in lines, timeout=30, what="the first log line")
        portal.setup("append-log", job["uuid"], "line 2\nline 3\n")
        wait_until(lambda: "line 3" in lines, timeout=30, what="the appended log lines")
        time.sleep(2.5)  # two more polls: nothing may be repeated
        assert follower.poll() is None, follower.stderr.read()
    finally:
        follower.send_signal(signal.SIGINT)
        try:
            follower.wait(timeout=10)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.wait()
        reader.join(timeout=5)
    assert lines == ["line 1", "line 2", "line 3"]


def test_revoked_certificate_stops_working(cli, portal, tmp_path):
    second = portal.download_login_pem("alice", "alice-pw-2718", tmp_path / "second.pem")
    ok(cli("jobs", "-U", pem=second), portal=portal)
    portal.revoke_newest()  # the newest one: `second`
    done = cli("jobs", "-U", pem=second)
    assert done.returncode != 0
    assert "revoked" in done.output
    # the first login PEM still works
    ok(cli("jobs", "-U"), portal=portal)


def test_certificate_of_another_ca_is_refused(cli, tmp_path):
    from cryptography import x509

    pem = foreign_login_pem(
        tmp_path / "forged.pem",
        san=[x509.UniformResourceIdentifier(ALICE_URN), x509.RFC822Name("alice@example.org")],
    )
    done = cli("jobs", "-U", pem=pem)
    assert done.returncode != 0


def test_local_process_cannot_log_in_with_a_certificate_header(portal, login_pem):
    """A certificate is public and any local process reaches the app port from 127.0.0.1:
    without the secret only nginx knows, the header logs nobody in."""
    import os
    import stat
    from urllib.parse import quote

    import requests

    pem = login_pem.read_text()
    certificate = pem[pem.index("-----BEGIN CERTIFICATE-----") :]
    certificate = certificate[: certificate.index("-----END CERTIFICATE-----") + 25] + "\n"
    headers = {"X-SSL-Client-Cert": quote(certificate, safe="")}
    url = portal.url + "/api/gpulab/v4.0/jobs"
    assert requests.get(url, headers=headers, timeout=10).status_code in (401, 403)
    wrong = {**headers, "X-Portal-Frontend-Secret": "0" * 64}
    assert requests.get(url, headers=wrong, timeout=10).status_code in (401, 403)
    # the secret scripts/tls-frontend.sh made: private, and it is what makes the header count
    secret_file = portal.var_dir / "tls" / "frontend-secret"
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600
    conf = portal.var_dir / "tls" / "nginx" / "gpuportal.conf"
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o600
    right = {**headers, "X-Portal-Frontend-Secret": secret_file.read_text().strip()}
    assert requests.get(url, headers=right, timeout=10).status_code == 200
    assert secret_file.read_text().strip() not in portal.server_log()
