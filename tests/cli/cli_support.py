"""Helpers for the gpulab-cli tests: a live portal (runserver + TLS front end) in a subprocess
with its own PORTAL_VAR_DIR, and the small assertions the tests share."""

import datetime
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

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
                "PORTAL_WEB_KEEPALIVE_S",  # tests of the front end run the shipped value
            }
        }
        self.env.update(
            PORTAL_VAR_DIR=str(var_dir),
            PORTAL_TASK_MODE="inline",
            PORTAL_DEBUG="1",
            PYTHONUNBUFFERED="1",
            DJANGO_SETTINGS_MODULE="portal.settings",
            # The SSH gateway (started with start(gateway=True)) and what jobs tell clients.
            PORTAL_SSH_HOST="127.0.0.1",
            PORTAL_SSH_BIND="127.0.0.1",
            PORTAL_SSH_PORT=str(free_port()),
        )
        self.server: subprocess.Popen | None = None
        self.watcher: subprocess.Popen | None = None
        self.gateway: subprocess.Popen | None = None

    def _spawn(self, name: str, args: list[str], *, manage: bool = True) -> subprocess.Popen:
        with open(self.var_dir / f"{name}.log", "w") as log:
            return subprocess.Popen(
                [sys.executable, *(["manage.py"] if manage else []), *args],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

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

    def start(self, *, watcher: bool = False, gateway: bool = False, gunicorn: bool = False):
        if gunicorn:  # the production web process, shipped settings (log: still runserver.log)
            self.server = self._spawn(
                "runserver",
                ["-m", "gunicorn", "-c", "python:portal.gunicorn_conf"]
                + ["--bind", f"127.0.0.1:{self.port}"],
                manage=False,
            )
        else:
            self.server = self._spawn(
                "runserver", ["runserver", f"127.0.0.1:{self.port}", "--noreload"]
            )
        if watcher:  # Docker events -> finish tasks (run inline in the watcher process)
            self.watcher = self._spawn("watcher", ["watch_slaves"])
        if gateway:  # SSH into running jobs
            self.gateway = self._spawn("ssh_gateway", ["ssh_gateway"])
        import requests

        def up():
            if self.server.poll() is not None:
                raise AssertionError(f"runserver exited: {self.server_log()}")
            try:
                return requests.get(self.url + "/accounts/login/", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_until(up, timeout=60, what="the portal's runserver")

    def server_log(self, name: str = "runserver") -> str:
        path = self.var_dir / f"{name}.log"
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
        for process in (self.gateway, self.watcher, self.server):
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

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


@contextmanager
def running_portal(
    name: str,
    *,
    docker_url: str | None = None,
    watcher: bool = False,
    gateway: bool = False,
    gunicorn: bool = False,
):
    """Migrate, add the test data (users alice/bob, projects vision/speech, cluster 1 with slave
    gpu1), start runserver (gunicorn with portal/gunicorn_conf.py if asked) and the TLS front
    end; stop both and remove everything afterwards.

    The var dir is a mkdtemp of its own, not pytest's tmp_path: pytest deletes old basetemp
    directories when other pytest sessions of the same user start, which would pull the
    database from under a live server.
    """
    var_dir = Path(tempfile.mkdtemp(prefix=f"gpuportal-{name}-"))
    live = Portal(var_dir)
    try:
        live.manage("migrate", "--noinput")
        live.setup("setup", *(["--docker-url", docker_url] if docker_url else []))
        live.start(watcher=watcher, gateway=gateway, gunicorn=gunicorn)
        started = live.frontend("start")
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}"
        assert live.server_ca.exists()
        yield live
    finally:
        live.stop()
        if os.environ.get("PORTAL_KEEP_CLI_VAR") != "1":
            shutil.rmtree(var_dir, ignore_errors=True)


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


def install_cli() -> Path:
    """The gpulab-cli executable from a throwaway virtual environment, reused between runs."""
    executable = client_venv(CLI_VENV, CLI_REQUIREMENT) / "bin" / "gpulab-cli"
    version = subprocess.run([str(executable), "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == CLI_VERSION, version
    return executable


def client_venv(venv: Path, requirement: str) -> Path:
    """A virtual environment with ``requirement`` installed (a real client the tests drive),
    built once and reused. Built in place; the marker written last tells a complete
    environment from a broken one."""
    marker = venv / ".installed"
    if marker.exists() and marker.read_text().strip() == requirement:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300
        )
        pip = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", requirement],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as error:
        unavailable(f"cannot create a virtual environment for {requirement}: {error}")
    if pip.returncode != 0:
        tail = (pip.stderr or pip.stdout).strip().splitlines()[-3:]
        unavailable(f"cannot install {requirement} (no network?): {' | '.join(tail)}")
    marker.write_text(requirement + "\n")
    return venv


def foreign_login_pem(path: Path, *, san: list | None = None) -> Path:
    """A login PEM (key + certificate) that another CA signed: the front end must refuse it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mallory")])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    cert = builder.sign(key, hashes.SHA256())
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        + cert.public_bytes(serialization.Encoding.PEM)
    )
    return path
