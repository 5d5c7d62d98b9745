"""The real gpulab-cli (PyPI imecilabt-gpulab-cli 3.11.x) against a live portal behind the local
TLS front end (scripts/tls-frontend.sh), logged in with a login PEM downloaded from the portal.

Needs network access to install the client once (cached in var/test-cli-venv/<version>/),
nginx and openssl. Without them the tests skip with the reason, unless PORTAL_REQUIRE_CLI=1
(CI), where they fail.
"""

import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parents[2]
CLI_VERSION = "3.11.12"
CLI_REQUIREMENT = f"imecilabt-gpulab-cli=={CLI_VERSION}"
CLI_VENV = Path(os.environ.get("PORTAL_CLI_VENV_DIR", ROOT / "var" / "test-cli-venv")) / (
    CLI_VERSION
)
SETUP = [sys.executable, str(ROOT / "tests" / "cli" / "portal_setup.py")]
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ALICE_URN = "urn:publicid:IDN+gpuportal.local+user+alice"


def unavailable(reason: str):
    if os.environ.get("PORTAL_REQUIRE_CLI") == "1":
        pytest.fail(f"PORTAL_REQUIRE_CLI=1 but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate, *, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# --- the client -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def gpulab_cli() -> Path:
    """The gpulab-cli executable from a throwaway virtual environment, reused between runs."""
    executable = CLI_VENV / "bin" / "gpulab-cli"
    marker = CLI_VENV / ".installed"
    if executable.exists() and marker.exists():
        return executable
    # Built in place; the marker written last tells a complete environment from a broken one.
    shutil.rmtree(CLI_VENV, ignore_errors=True)
    CLI_VENV.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", str(CLI_VENV)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        pip = subprocess.run(
            [str(CLI_VENV / "bin" / "python"), "-m", "pip", "install", "-q", CLI_REQUIREMENT],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as error:
        unavailable(f"cannot create a virtual environment for gpulab-cli: {error}")
    if pip.returncode != 0:
        tail = (pip.stderr or pip.stdout).strip().splitlines()[-3:]
        unavailable(f"cannot install {CLI_REQUIREMENT} (no network?): {' | '.join(tail)}")
    version = subprocess.run(
        [str(executable), "--version"], capture_output=True, text=True
    )
    assert version.stdout.strip() == CLI_VERSION, version
    marker.write_text(CLI_REQUIREMENT + "\n")
    return executable


@pytest.fixture(scope="session")
def tools():
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if not nginx:
        unavailable("nginx is not installed (apt-get install nginx)")
    if not shutil.which("openssl"):
        unavailable("openssl is not installed")
    return {"nginx": nginx}


# --- the portal and its TLS front end ---------------------------------------------------------


class Portal:
    def __init__(self, var_dir: Path):
        self.var_dir = var_dir
        self.port = free_port()
        self.tls_port = free_port()
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key
            not in {
                "PORTAL_DATABASE_URL",
                "PORTAL_CA_DIR",
                "PORTAL_LOG_ARCHIVE_DIR",
                "PORTAL_STORAGE_BASE",
                "DJANGO_SETTINGS_MODULE",
            }
        }
        self.env.update(
            PORTAL_VAR_DIR=str(var_dir),
            PORTAL_TASK_MODE="inline",
            PORTAL_DEBUG="1",
            PYTHONUNBUFFERED="1",
            DJANGO_SETTINGS_MODULE="portal.settings",
        )
        self.server: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"https://localhost:{self.tls_port}/api"

    @property
    def server_ca(self) -> Path:
        return self.var_dir / "tls" / "server-ca.pem"

    def manage(self, *args: str, timeout: int = 120) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"manage.py {args}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def setup(self, *args: str) -> dict:
        done = subprocess.run(
            [*SETUP, *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"portal_setup {args}: {done.stdout}\n{done.stderr}"
        return json.loads(done.stdout.strip().splitlines()[-1])

    def start(self):
        log = open(self.var_dir / "runserver.log", "w")  # noqa: SIM115 (closed with the process)
        self.server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        import requests

        def up():
            if self.server.poll() is not None:
                raise AssertionError(f"runserver exited: {self.server_log()}")
            try:
                return requests.get(self.url + "/accounts/login/", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_until(up, timeout=60, what="the portal's runserver")

    def server_log(self) -> str:
        path = self.var_dir / "runserver.log"
        return path.read_text()[-5000:] if path.exists() else ""

    def frontend(self, action: str) -> subprocess.CompletedProcess:
        args = [str(ROOT / "scripts" / "tls-frontend.sh"), action]
        if action == "start":
            args += ["--port", str(self.tls_port), "--upstream", f"127.0.0.1:{self.port}"]
        return subprocess.run(
            args,
            cwd=ROOT,
            env={**self.env, "PYTHON": sys.executable},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def stop(self):
        self.frontend("stop")
        if self.server and self.server.poll() is None:
            self.server.send_signal(signal.SIGINT)
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()

    def download_login_pem(self, username: str, password: str, target: Path) -> Path:
        """Log in with the browser form and download a login PEM from /certificates/."""
        import requests

        session = requests.Session()
        session.get(self.url + "/accounts/login/", timeout=10)
        response = session.post(
            self.url + "/accounts/login/",
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            headers={"Referer": self.url + "/accounts/login/"},
            timeout=10,
        )
        assert response.status_code == 200 and "sessionid" in session.cookies, response.text
        page = session.get(self.url + "/certificates/", timeout=10)
        assert page.status_code == 200
        response = session.post(
            self.url + "/certificates/new/",
            data={"csrfmiddlewaretoken": session.cookies["csrftoken"]},
            headers={"Referer": self.url + "/certificates/"},
            timeout=30,
        )
        assert response.status_code == 200, response.text[:500]
        assert response.headers["Content-Type"] == "application/x-pem-file"
        target.write_bytes(response.content)
        target.chmod(0o600)
        self.session = session
        return target

    def revoke_newest(self) -> None:
        """Revoke, through the web page, the newest certificate of the logged-in user."""
        page = self.session.get(self.url + "/certificates/", timeout=10).text
        ids = re.findall(r'action="/certificates/(\d+)/revoke/"', page)
        assert ids, page[:1000]
        response = self.session.post(
            self.url + f"/certificates/{ids[0]}/revoke/",
            data={"csrfmiddlewaretoken": self.session.cookies["csrftoken"]},
            headers={"Referer": self.url + "/certificates/"},
            timeout=10,
        )
        assert response.status_code == 200  # redirected back to the list
        assert "revoked" in response.text


@pytest.fixture(scope="module")
def portal(gpulab_cli, tools, tmp_path_factory):
    var_dir = tmp_path_factory.mktemp("cli-portal")
    live = Portal(var_dir)
    live.manage("migrate", "--noinput")
    live.setup("setup")
    live.start()
    try:
        started = live.frontend("start")
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}"
        assert live.server_ca.exists()
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A HOME for the client: it reads ~/.ssh/*.pub and writes ~/.ssh config for running jobs."""
    return tmp_path_factory.mktemp("cli-home")


@pytest.fixture(scope="module")
def login_pem(portal, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("cli-pem") / "login.pem"
    return portal.download_login_pem("alice", "alice-pw-2718", target)


@pytest.fixture(scope="module")
def cli(portal, gpulab_cli, login_pem, home):
    env = {
        key: value
        for key, value in os.environ.items()
        if key.lower() not in {"https_proxy", "http_proxy", "all_proxy"}
        and not key.startswith("GPULAB_")
    }
    env.update(HOME=str(home), PYTHONUNBUFFERED="1", NO_PROXY="localhost,127.0.0.1")

    def base(pem: Path | None = None) -> list[str]:
        return [
            str(gpulab_cli),
            "--cert",
            str(pem or login_pem),
            "--servercert",
            str(portal.server_ca),
            "--custom-master-url",
            portal.api_url,
        ]

    def run(*args: str, pem: Path | None = None, stdin: str | None = None, timeout: int = 90):
        done = subprocess.run(
            [*base(pem), *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        done.output = done.stdout + done.stderr
        return done

    def popen(*args: str):
        return subprocess.Popen(
            [*base(), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    run.popen = popen
    return run


def ok(done, *, portal=None) -> str:
    assert done.returncode == 0, (
        f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
        + (f"\nportal log: {portal.server_log()}" if portal else "")
    )
    return done.stdout


def job_file(tmp_path: Path, *, name: str = "HelloWorld", project: str | None = None) -> Path:
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=2)
    document = {
        "name": name,
        "description": "Hello world!",
        "request": {
            "resources": {"clusterId": 1, "gpus": 1, "cpus": 2, "cpuMemoryGb": 1},
            "docker": {
                "image": "debian:stable",
                "command": "echo 'Hello World!'",
                "environment": {},
                "storage": [],
                "portMappings": [],
            },
            # Stays QUEUED: the test slave has no Docker engine behind it.
            "scheduling": {"interactive": False, "notBefore": later.strftime("%Y-%m-%dT%H:%M:%SZ")},
        },
    }
    if project:
        document["owner"] = {"projectUrn": f"urn:publicid:IDN+gpuportal.local+project+{project}"}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


def submitted_id(done, portal=None) -> str:
    job_id = ok(done, portal=portal).strip().splitlines()[-1]
    assert UUID_RE.match(job_id), done.stdout
    return job_id


def job_status(portal, job_id: str) -> str:
    return portal.setup("status", job_id)["status"]


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
    assert ok(cli("rm", job_id), portal=portal).strip() == job_id
    assert job_status(portal, job_id) == "DELETED"
    assert job_id not in ok(cli("jobs", "-U"))


def test_rm_real_needs_admin(cli, portal, tmp_path):
    job_id = submitted_id(cli("submit", "--project", "vision", str(job_file(tmp_path))))
    ok(cli("cancel", job_id))
    done = cli("rm", "--real", job_id)
    assert done.returncode != 0
    assert "Error while revoking request" in done.output
    assert job_status(portal, job_id) == "CANCELLED"
    assert ok(cli("rm", "--finished", job_id)).strip() == job_id
    assert job_status(portal, job_id) == "DELETED"


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

    done = cli("jobs", "-c", "200")
    out = ok(done, portal=portal)
    assert "Could not check availability" not in done.stderr  # GET version works
    assert "Error parsing availability" not in done.stderr
    header = out.splitlines()[0]
    assert header.split()[:3] == ["TASK", "ID", "NAME"]
    row = next(line for line in out.splitlines() if line.startswith(mine))
    assert "HelloWorld" in row and "alice@gpuportal.local" in row and "vision" in row
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
    # -u: the caller's jobs plus other users' running jobs (other_user_running=True)
    out = ok(cli("jobs", "-u"), portal=portal)
    assert mine in out
    assert bob_running["uuid"] in out
    assert bob_queued["uuid"] not in out
    # -c limits the number of rows
    out = ok(cli("jobs", "-c", "1"), portal=portal)
    assert len([line for line in out.splitlines() if UUID_RE.match(line[:36])]) == 1
    # --raw prints the JSON the server sent
    raw = json.loads(ok(cli("jobs", "-U", "--raw")))
    assert {item["uuid"] for item in raw} >= {mine}


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
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.UniformResourceIdentifier(ALICE_URN), x509.RFC822Name("alice@example.org")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    pem = tmp_path / "forged.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        + cert.public_bytes(serialization.Encoding.PEM)
    )
    done = cli("jobs", "-U", pem=pem)
    assert done.returncode != 0
