"""The SSH gateway on a real engine, driven by Debian's OpenSSH client (ssh, scp, sftp, -L).

The gateway runs in a thread of this process (its own event loop) on a free port; jobs run the
test image on the local engine. Tasks run inline, so submitting a job starts its container.
"""

import asyncio
import copy
import hashlib
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from accounts.certs.services import login_certificate_issue, login_certificate_revoke
from accounts.models import Membership, Profile, Project
from clusters.models import Cluster
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from jobs.api.gpulab_json import job_to_gpulab
from jobs.models import Job, JobEvent
from jobs.user_actions.services import job_cancel, job_submit
from ssh.gateway import Gateway
from tests.integration.docker_support import TEST_IMAGE, docker_required, docker_url, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]

SSH_OPTIONS = [
    "-F",
    "/dev/null",
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    "UserKnownHostsFile=/dev/null",
    "-o",
    "BatchMode=yes",
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "LogLevel=ERROR",
    "-o",
    "ConnectTimeout=10",
]


def require_openssh() -> None:
    if shutil.which("ssh") and shutil.which("scp") and shutil.which("sftp"):
        return
    reason = "Debian's OpenSSH client (ssh, scp, sftp) is missing: apt-get install openssh-client"
    if docker_required():
        pytest.fail(f"PORTAL_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def runtime(settings, tmp_path):
    require_docker(docker_url())
    require_openssh()
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_STOP_GRACE_S = 1
    settings.PORTAL_INSTANCE = f"test-ssh-{os.getpid()}-{time.monotonic_ns()}"
    settings.PORTAL_CA_DIR = tmp_path / "ca"
    return settings


@pytest.fixture
def gateway(runtime, tmp_path):
    """A running gateway; clients are told its port through the settings."""
    loop = asyncio.new_event_loop()
    gw = Gateway(host="127.0.0.1", port=0, host_key_path=tmp_path / "ssh" / "host_key", poll_s=0.5)
    started, box = threading.Event(), {}

    def main():
        asyncio.set_event_loop(loop)
        box["port"] = loop.run_until_complete(gw.start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    assert started.wait(30), "the gateway did not start"
    runtime.PORTAL_SSH_HOST = "127.0.0.1"
    runtime.PORTAL_SSH_PORT = box["port"]
    yield box["port"]
    asyncio.run_coroutine_threadsafe(gw.stop(), loop).result(15)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(15)


@pytest.fixture
def keys(tmp_path):
    """name -> (private key path, public key line): ed25519 keys made by ssh-keygen."""
    made = {}
    for name in ("alice", "alice2", "bob"):
        path = tmp_path / f"id_{name}"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path)],
            check=True,
        )
        made[name] = (path, path.with_suffix(".pub").read_text().strip())
    return made


@pytest.fixture
def people(runtime, django_user_model):
    alice = django_user_model.objects.create_user("alice", "alice@example.org", "pw")
    bob = django_user_model.objects.create_user("bob", "bob@example.org", "pw")
    project = Project.objects.create(name="sshproj", gid=4711)
    Membership.objects.create(user=alice, project=project)
    Membership.objects.create(user=bob, project=project)
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name="local", cluster=cluster, docker_url=docker_url(), host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * 2)
    assert slave_probe(slave=slave).online
    yield {"alice": alice, "bob": bob, "project": project}
    for job in Job.objects.filter(status="RUNNING"):
        job_cancel(job=job, user=job.owner)
        wait_for(job, "CANCELLED")


WEB = "sh -c 'echo hello-from-job > /tmp/index.html; httpd -f -p 8080 -h /tmp'"


def start_job(
    people, owner: str, pub_keys: list[str], command: str = WEB, storage: list | None = None
) -> Job:
    document = {
        "name": "ssh-test",
        "request": {
            "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": command, "storage": storage or []},
            "scheduling": {},
            "extra": {"sshPubKeys": pub_keys},
        },
    }
    job = job_submit(
        user=people[owner], project=people["project"], document=copy.deepcopy(document)
    )
    return wait_for(job, "RUNNING")


def wait_for(job: Job, *states: str, timeout: float = 40) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in states:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job stayed {job.status} (wanted {states}): {job.end_reason}")


def end(job: Job) -> None:
    """Cancel a running job and wait until it is gone (the engine has few CPUs to give)."""
    job_cancel(job=job, user=job.owner)
    wait_for(job, "CANCELLED")


def ssh(port, key, job, *command, options=(), timeout=30, user=None):
    return subprocess.run(
        ["ssh", *SSH_OPTIONS, "-i", str(key), "-p", str(port), *options,
         f"{user or job.uuid}@127.0.0.1", *command],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def events(job: Job) -> list[str]:
    return list(JobEvent.objects.filter(job=job).values_list("message", flat=True))


def wait_event(job: Job, text: str, timeout: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = events(job)
        if any(text in message for message in found):
            return found
        time.sleep(0.1)
    raise AssertionError(f"no event with {text!r} in {events(job)}")


def test_command_exit_code_and_history(gateway, people, keys):
    key, pub = keys["alice"]
    job = start_job(people, "alice", [pub])
    done = ssh(gateway, key, job, "echo hello-$((6*7)); echo to-stderr >&2; exit 7")
    assert done.stdout == "hello-42\n", done.stderr
    assert "to-stderr" in done.stderr
    assert done.returncode == 7
    # The job's Job JSON tells clients where to log in (the owner sees it in full).
    resources = job_to_gpulab(job, viewer=people["alice"])["state"]["resources"]
    assert resources["sshHost"] == "127.0.0.1"
    assert resources["sshPort"] == gateway
    assert resources["sshUsername"] == str(job.uuid)
    # A unique prefix of the uuid names the job too; stdin reaches the command.
    short = subprocess.run(
        ["ssh", *SSH_OPTIONS, "-i", str(key), "-p", str(gateway),
         f"{str(job.uuid)[:8]}@127.0.0.1", "tr a-z A-Z"],
        input="piped text\n", capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert short.stdout == "PIPED TEXT\n", (short.returncode, short.stderr)
    # Each connection is in the job's history, by key fingerprint, never the key itself.
    history = wait_event(job, "SSH connection from 127.0.0.1 closed")
    logins = [m for m in history if m.startswith("SSH login from 127.0.0.1 with ssh-ed25519 key")]
    assert len(logins) == 2 and all("SHA256:" in m for m in logins)
    assert not any(pub.split()[1] in message for message in history)


def test_the_gateway_is_its_own_jump_host(gateway, people, keys):
    """What gpulab-cli does when it cannot resolve the slave: ProxyCommand ssh ... -W %h:%p
    through sshProxyHost, which is the gateway itself."""
    key, pub = keys["alice"]
    job = start_job(people, "alice", [pub])
    inner = " ".join(["ssh", *SSH_OPTIONS, "-i", str(key), "-p", str(gateway)])
    proxy = f"ProxyCommand={inner} {job.uuid}@127.0.0.1 -W %h:%p"
    done = ssh(gateway, key, job, "echo jumped", options=["-o", proxy])
    assert done.stdout == "jumped\n", done.stderr
    # A jump anywhere else is refused.
    done = ssh(gateway, key, job, options=["-W", f"10.255.255.1:{gateway}"])
    assert done.returncode == 255 and "forwarding failed" in done.stderr


def test_tty_shell_runs_as_the_job_user(gateway, people, keys):
    key, pub = keys["alice"]
    job = start_job(people, "alice", [pub])
    # -tt forces a terminal: the gateway starts a login shell with a TTY.
    done = subprocess.run(
        ["ssh", *SSH_OPTIONS, "-tt", "-i", str(key), "-p", str(gateway),
         f"{job.uuid}@127.0.0.1"],
        input="tty && echo tty-is-$TERM; id -u; exit 3\n", capture_output=True, text=True,
        timeout=30,
    )  # fmt: skip
    assert "/dev/pts/" in done.stdout, done.stdout + done.stderr
    assert "tty-is-" in done.stdout
    assert done.returncode == 3


def test_scp_both_protocols_and_sftp(gateway, people, keys, tmp_path):
    key, pub = keys["alice"]
    job = start_job(people, "alice", [pub])
    made = ssh(
        gateway, key, job, "mkdir -p /tmp/out && printf 'result 1\\nresult 2\\n' > /tmp/out/r.txt"
    )
    assert made.returncode == 0, made.stderr
    target = f"{job.uuid}@127.0.0.1"
    base = ["-F", "/dev/null", *SSH_OPTIONS[2:], "-i", str(key), "-P", str(gateway)]
    # OpenSSH's scp speaks SFTP by default; -O is the legacy scp protocol (no scp in the image).
    for protocol in ([], ["-O"]):
        local = tmp_path / f"copy{len(protocol)}.txt"
        copied = subprocess.run(
            ["scp", *base, *protocol, f"{target}:/tmp/out/r.txt", str(local)],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert copied.returncode == 0, copied.stderr
        assert local.read_text() == "result 1\nresult 2\n"
    # Upload, then read back through a command.
    upload = tmp_path / "up.txt"
    upload.write_text("uploaded bytes\n")
    sent = subprocess.run(
        ["scp", *base, str(upload), f"{target}:/tmp/out/up.txt"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert ssh(gateway, key, job, "cat /tmp/out/up.txt").stdout == "uploaded bytes\n"
    sent = subprocess.run(
        ["scp", *base, "-O", str(upload), f"{target}:/tmp/out/legacy.txt"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert ssh(gateway, key, job, "cat /tmp/out/legacy.txt").stdout == "uploaded bytes\n"
    # sftp: list, fetch, make a directory.
    batch = tmp_path / "batch"
    batch.write_text(f"ls /tmp/out\nget /tmp/out/r.txt {tmp_path}/via-sftp.txt\nmkdir /tmp/made\n")
    listed = subprocess.run(
        ["sftp", *base, "-b", str(batch), target], capture_output=True, text=True, timeout=30
    )
    assert listed.returncode == 0, listed.stderr
    assert "r.txt" in listed.stdout and "up.txt" in listed.stdout
    assert (tmp_path / "via-sftp.txt").read_text() == "result 1\nresult 2\n"
    assert ssh(gateway, key, job, "test -d /tmp/made && echo dir").stdout == "dir\n"


PROJECT_ENTRY = {"hostPath": "/project", "containerPath": "/project"}
# GPULab's job request page (seed gpulab-job-request-v2): ".ssh — If you need access to the
# ~/.ssh dir used by the SSH server that gives you access to the container (for example, to
# manually change the authorized_hosts file), you need to mount it like this:
# {"hostPath": ".ssh", "containerPath": "/root/.ssh/"}"
SSH_ENTRY = {"hostPath": ".ssh", "containerPath": "/root/.ssh/"}


def copy_in(gateway, key, job, *args: str) -> None:
    """scp (or sftp with ``-b``) into the job; fails the test when the client fails."""
    program, *rest = args
    port = ["-P", str(gateway)]
    done = subprocess.run(
        [program, "-F", "/dev/null", *SSH_OPTIONS[2:], "-i", str(key), *port, *rest],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_files_copied_in_take_the_folders_group_as_the_shells_do(gateway, people, keys, tmp_path):
    """Issue 26 item 8: "files copied in with scp/sftp to /project get group root instead of
    the project's group (shell-made files get it)". The gateway writes as the shell does: in
    the job's setgid /project a new file takes the project's group, elsewhere the user's."""
    key, pub = keys["alice"]
    job = start_job(people, "alice", [pub], storage=[PROJECT_ENTRY])
    gid = str(people["project"].gid)
    made = ssh(gateway, key, job, "echo shell > /project/by-shell.txt; echo shell > /tmp/by-shell")
    assert made.returncode == 0, made.stderr
    upload = tmp_path / "up.txt"
    upload.write_text("uploaded bytes\n")
    target = f"{job.uuid}@127.0.0.1"
    copy_in(gateway, key, job, "scp", str(upload), f"{target}:/project/by-scp.txt")
    copy_in(gateway, key, job, "scp", "-O", str(upload), f"{target}:/project/by-scp-O.txt")
    copy_in(gateway, key, job, "scp", str(upload), f"{target}:/tmp/by-scp")
    batch = tmp_path / "batch"
    batch.write_text(
        f"put {upload} /project/by-sftp.txt\nmkdir /project/made\n"
        f"put {upload} /project/made/nested.txt\n"
    )
    copy_in(gateway, key, job, "sftp", "-b", str(batch), target)
    # A file that exists is rewritten in place: it keeps its group and takes the new bytes.
    copy_in(gateway, key, job, "scp", str(upload), f"{target}:/project/by-shell.txt")
    names = [
        "/project/by-shell.txt",
        "/project/by-scp.txt",
        "/project/by-scp-O.txt",
        "/project/by-sftp.txt",
        "/project/made",
        "/project/made/nested.txt",
    ]
    listed = ssh(gateway, key, job, "stat -c '%n %g' " + " ".join(names))
    assert listed.stdout.splitlines() == [f"{name} {gid}" for name in names], listed.stderr
    # Outside a setgid folder both get the user's own group (root's in this image).
    listed = ssh(gateway, key, job, "stat -c '%n %u:%g' /tmp/by-shell /tmp/by-scp")
    assert listed.stdout.splitlines() == ["/tmp/by-shell 0:0", "/tmp/by-scp 0:0"], listed.stderr
    read = ssh(gateway, key, job, "cat /project/by-shell.txt /project/made/nested.txt")
    assert read.stdout == "uploaded bytes\n" * 2
    # Binary bytes, more than the gateway keeps in memory, arrive whole.
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(9 * 1024 * 1024 + 7))
    copy_in(gateway, key, job, "scp", str(big), f"{target}:/project/big.bin")
    summed = ssh(gateway, key, job, "md5sum < /project/big.bin")
    assert summed.stdout.split()[0] == hashlib.md5(big.read_bytes()).hexdigest(), summed.stderr


def test_keys_in_the_jobs_ssh_folder_let_their_holder_in(gateway, people, keys):
    """Issue 26 item 8: "GPULab's .ssh storage entry mounts an empty folder and editing
    authorized_keys there has no effect". A key added to it through the job's shell logs in."""
    key, pub = keys["alice"]
    fresh_key, fresh_pub = keys["alice2"]
    job = start_job(people, "alice", [pub], storage=[SSH_ENTRY])
    assert ssh(gateway, fresh_key, job, "true").returncode == 255
    added = ssh(gateway, key, job, f"echo '{fresh_pub}' >> /root/.ssh/authorized_keys")
    assert added.returncode == 0, added.stderr
    done = ssh(gateway, fresh_key, job, "echo via-authorized-keys")
    assert done.stdout == "via-authorized-keys\n", done.stderr
    wait_event(job, "(the job's .ssh/authorized_keys)")
    # The folder is the user's (like ~/.ssh): private to root in the container.
    assert ssh(gateway, key, job, "stat -c %a /root/.ssh").stdout == "700\n"
    end(job)
    # The folder outlives the job: her next job that mounts it (GPULab's shorthand, a
    # containerPath alone) lets the key in too; one without the entry does not, nor does Bob's
    # job with his own .ssh folder.
    again = start_job(people, "alice", [pub], storage=[{"containerPath": "/root/.ssh"}])
    assert ssh(gateway, fresh_key, again, "echo again").stdout == "again\n"
    end(again)
    plain = start_job(people, "alice", [pub])
    assert ssh(gateway, fresh_key, plain, "true").returncode == 255
    end(plain)
    bob_key, bob_pub = keys["bob"]
    bobs = start_job(people, "bob", [bob_pub], storage=[SSH_ENTRY])
    refused = ssh(gateway, fresh_key, bobs, "true")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr


def test_authorized_keys_the_gateway_does_not_trust(gateway, people, keys):
    """Never through a link, at most 64 KiB, no options it cannot enforce, and nothing group-
    or world-writable (OpenSSH's StrictModes); the plain line after them gets in."""
    key, pub = keys["alice"]
    fresh_key, fresh_pub = keys["alice2"]
    job = start_job(people, "alice", [pub], storage=[SSH_ENTRY])
    keys_file = "/root/.ssh/authorized_keys"
    padding = "#" + "x" * 1023
    attempts = {
        "a symlink": f"echo '{fresh_pub}' > /tmp/keys; ln -sf /tmp/keys {keys_file}",
        "above 64 KiB": f"{{ echo '{fresh_pub}'; for i in $(seq 64); do echo '{padding}'; done; }}"
        f" > {keys_file}",
        "with options": f"echo 'from=\"10.1.2.3\" {fresh_pub}' > {keys_file}",
        "a world-writable file": f"echo '{fresh_pub}' > {keys_file}; chmod 666 {keys_file}",
        "a group-writable folder": f"echo '{fresh_pub}' > {keys_file}; chmod 770 /root/.ssh",
    }
    for what, command in attempts.items():
        made = ssh(gateway, key, job, f"rm -f {keys_file}; chmod 700 /root/.ssh; {command}")
        assert made.returncode == 0, (what, made.stderr)
        assert ssh(gateway, fresh_key, job, "true").returncode == 255, what
    made = ssh(gateway, key, job, f"chmod 700 /root/.ssh; echo '{fresh_pub}' > {keys_file}")
    assert made.returncode == 0, made.stderr
    assert ssh(gateway, fresh_key, job, "echo trusted").stdout == "trusted\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("route", ["bridge", "exec"])
def test_local_port_forward_reaches_the_container(gateway, people, keys, route, monkeypatch):
    """Straight to the container's bridge address (an engine on this host), or through
    ``nc`` run inside the container (how containers of remote engines are reached)."""
    from ssh import forward as module

    if route == "exec":
        monkeypatch.setattr(module, "_direct_forward", lambda session: False)
    by_exec, original = [], module._forward_by_exec

    async def spy(*args):
        by_exec.append(args[1])
        await original(*args)

    monkeypatch.setattr(module, "_forward_by_exec", spy)
    key, pub = keys["alice"]
    job = start_job(people, "alice", [pub])
    local = free_port()
    tunnel = subprocess.Popen(
        ["ssh", *SSH_OPTIONS, "-i", str(key), "-p", str(gateway), "-N",
         "-o", "ExitOnForwardFailure=yes", "-L", f"{local}:localhost:8080",
         f"{job.uuid}@127.0.0.1"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline, body = time.monotonic() + 20, ""
        while time.monotonic() < deadline and "hello" not in body:
            try:
                url = f"http://127.0.0.1:{local}/index.html"
                body = urllib.request.urlopen(url, timeout=3).read().decode()
            except OSError:
                time.sleep(0.3)
        assert body == "hello-from-job\n"
        assert bool(by_exec) == (route == "exec") and set(by_exec) <= {8080}
        # Other hosts than the container itself are refused (-W opens the same kind of
        # channel as a -L connection).
        refused = ssh(gateway, key, job, options=["-W", "example.org:80"])
        assert refused.returncode == 255
        assert "forwarding failed" in refused.stderr
    finally:
        tunnel.terminate()
        tunnel.wait(10)


def test_refusals(gateway, people, keys):
    alice_key, alice_pub = keys["alice"]
    bob_key, bob_pub = keys["bob"]
    alice_job = start_job(people, "alice", [alice_pub])
    bob_job = start_job(people, "bob", [bob_pub])
    # Another user's key.
    refused = ssh(gateway, bob_key, alice_job, "true")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    # The same user's key, for another user's job.
    refused = ssh(gateway, alice_key, bob_job, "true")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    # A user name that names no running job.
    refused = ssh(gateway, alice_key, alice_job, "true", user="0123456789ab")
    assert refused.returncode == 255
    # Each key gets into its own job.
    assert ssh(gateway, bob_key, bob_job, "echo ok").stdout == "ok\n"
    assert ssh(gateway, alice_key, alice_job, "echo ok").stdout == "ok\n"
    assert not any("ssh login" in m.lower() and "bob" in m for m in events(alice_job))


def test_profile_key_gets_in(gateway, people, keys):
    key, pub = keys["alice2"]
    job = start_job(people, "alice", [keys["alice"][1]])
    assert ssh(gateway, key, job, "true").returncode == 255
    Profile.objects.create(user=people["alice"], ssh_public_keys=f"{pub}\n")
    assert ssh(gateway, key, job, "echo via-profile").stdout == "via-profile\n"


def test_login_certificate_key_refused_once_revoked(gateway, people, keys, tmp_path):
    issued = login_certificate_issue(user=people["alice"])
    pem = tmp_path / "login.pem"
    pem.write_bytes(issued.pem)
    pem.chmod(0o600)
    public = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(pem)], capture_output=True, text=True, check=True
    ).stdout.strip()
    # The key is in the job's request, as gpulab-cli puts it there at submit.
    job = start_job(people, "alice", [public])
    assert ssh(gateway, pem, job, "echo with-pem").stdout == "with-pem\n"
    session = subprocess.Popen(
        ["ssh", *SSH_OPTIONS, "-i", str(pem), "-p", str(gateway), f"{job.uuid}@127.0.0.1",
         "echo started; sleep 120"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert session.stdout.readline() == "started\n"
        login_certificate_revoke(certificate=issued.certificate, user=people["alice"])
        session.wait(timeout=20)  # the open session ends too
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
    refused = ssh(gateway, pem, job, "true")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    assert any("login certificate is no longer valid" in m for m in events(job))
    assert wait_for(job, "RUNNING").status == "RUNNING"  # the job itself runs on


def test_sessions_end_when_the_job_ends(gateway, people, keys):
    key, pub = keys["alice"]
    job = start_job(people, "alice", [pub])
    session = subprocess.Popen(
        ["ssh", *SSH_OPTIONS, "-i", str(key), "-p", str(gateway), f"{job.uuid}@127.0.0.1",
         "echo started; sleep 120"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert session.stdout.readline() == "started\n"
        job_cancel(job=job, user=people["alice"])
        wait_for(job, "CANCELLED", "CANCELLING")
        session.wait(timeout=20)  # raises if the session outlives the job
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
    wait_for(job, "CANCELLED")
    refused = ssh(gateway, key, job, "true")
    assert refused.returncode == 255
    assert "sshUsername" not in job_to_gpulab(job, viewer=people["alice"])["state"]["resources"]
    assert any("ended: the job is no longer running" in m for m in events(job))


def test_host_key_is_made_once_and_private(gateway, runtime, tmp_path):
    path = Path(tmp_path / "ssh" / "host_key")
    assert path.exists()
    assert path.stat().st_mode & 0o777 == 0o600
