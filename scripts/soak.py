#!/usr/bin/env python3
"""The production soak: the README's deployment, driven by the real clients while it is broken.

    .venv/bin/python scripts/soak.py [--seconds 150] [--broker orm|redis|both]   (make soak)

For each broker (django-q2's ORM broker, then Redis) it brings up the production set-up exactly
as deploy/systemd and deploy/nginx describe it, on a fresh PostgreSQL database with the default
settings (connection pool on): ``migrate`` and ``collectstatic`` (the web unit's ExecStartPre),
two gunicorn web processes (``gunicorn -c python:portal.gunicorn_conf``), two q clusters, the
slave watcher, the SSH gateway, the session proxy (``manage.py session_proxy``), and the nginx TLS front end rendered from the shipped template
by scripts/tls-frontend.sh with both web processes as its upstream; three slaves, one on each of
three Docker engines (scripts/docker-engines.sh).

For ``--seconds`` it drives it with the real clients through nginx: gpulab-cli with a login PEM
(v2 jobs, halts, cancels, job lists), tapipy (a Tapis app job with a staged input), and plain
HTTPS with an API token (v1 jobs, an array, an OpenPAI gang across the three engines, an
interactive job, jobs whose webhooks fail twice and then succeed, hostile requests), and opens
sessions as a browser does: signed in, through the portal's hand-off to the session proxy. Meanwhile
it kills (SIGKILL) one process of each kind and restarts it; at the end it stops every process
with SIGTERM, as systemd would, and starts them all again.

It asserts, and prints as one JSON summary: every job reached its true final state, exactly
once; no 5xx answer but the front end's documented 503 while a web process restarted; no
traceback in any log; every periodic schedule ran within two of its intervals; every webhook
delivered; every process stopped within 20 s of SIGTERM. Exit status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import psycopg  # noqa: E402
import requests  # noqa: E402

from tests.cli.cli_support import install_cli  # noqa: E402
from tests.support.clients import tapipy_python  # noqa: E402

PYTHON = sys.executable
MANAGE = [PYTHON, str(ROOT / "manage.py")]
GUNICORN = [PYTHON, "-m", "gunicorn", "-c", "python:portal.gunicorn_conf"]
POSTGRES = os.environ.get(
    "PORTAL_TEST_POSTGRES_URL", "postgres://portal:portal@127.0.0.1:5432/postgres"
)
REDIS = os.environ.get("PORTAL_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ENGINES = os.environ.get(
    "SOAK_ENGINES",
    "unix:///var/run/docker.sock,unix:///var/run/gpuportal/slave2.sock,"
    "unix:///var/run/gpuportal/slave3.sock",
).split(",")
IMAGE = "gpuportal/busybox:latest"
END_STATES = {"FINISHED", "FAILED", "CANCELLED", "HALTED"}
STOP_LIMIT_S = 20
# The retry delays of this soak's webhooks (production: 10, 60, 300 s).
WEBHOOK_DELAYS = "2,4,8"
SOAK_PASSWORD = "soak-pw-4242"
CA_OVERRIDES = {"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}

SEED = r"""
import json, os, sys
from pathlib import Path
from django.conf import settings
from django.contrib.auth.models import User
from accounts.certs.services import login_certificate_issue
from accounts.models import Membership, Project
from accounts.tokens import api_token_rotate
from clusters.models import Cluster
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from datetime import timedelta
from interactive.models import SessionTemplate
from tapis.api.auth import tapis_token_wrap
from tapis.services import app_create

cluster = Cluster.objects.create(id=1, comment="soak")
for n, url in enumerate(json.loads(os.environ["SOAK_ENGINE_LIST"])):
    slave = slave_register(name=f"node{n}", cluster=cluster, docker_url=url, host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * 2)
    slave = slave_probe(slave=slave)
    assert slave.online, slave.offline_reason
user = User.objects.create_user("soaker", "soaker@example.org", os.environ["SOAK_PASSWORD"])
project = Project.objects.create(name="soak", gid=5858)
Membership.objects.create(user=user, project=project)
token = api_token_rotate(user=user)[1]
pem = login_certificate_issue(user=user).pem
Path(os.environ["SOAK_PEM"]).write_bytes(pem)
os.chmod(os.environ["SOAK_PEM"], 0o600)
folder = Path(settings.PORTAL_STORAGE_BASE) / "project" / "soak" / "inputs"
folder.mkdir(parents=True, exist_ok=True)
(folder / "data.txt").write_text("the soak's input\n")
# A session template whose app is busybox's httpd (the real JupyterLab runs in the tests): a
# session goes through the README's deployment as a whole, the proxy process included.
SessionTemplate.objects.create(
    slug="soak-httpd", title="soak httpd", kind="custom", image=os.environ["SOAK_IMAGE"],
    command="sh -c 'mkdir -p /tmp/w && echo soak-session > /tmp/w/index.html && "
            "exec httpd -f -p {port} -h /tmp/w'",
    port=8080, strip_prefix=True, landing_path="", gpus=0, cpus=1, memory_gb=1,
    time_box=timedelta(minutes=30),
)
app_create(user=user, definition={
    "id": "soak-app", "version": "1.0", "containerImage": os.environ["SOAK_IMAGE"],
    "command": "sh -c 'cat /job/inputs/in/data.txt; echo 42 > $JOB_OUTPUT_DIR/answer.txt'",
    "jobAttributes": {
        "fileInputs": [{"name": "in", "inputMode": "REQUIRED"}],
        "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
    },
})
print("SEED " + json.dumps({"token": token, "tapis": tapis_token_wrap(key=token, username="soaker")}))
"""

TAPIPY = r"""
import json, sys, time
from tapipy.tapis import Tapis
client = Tapis(base_url=sys.argv[1], access_token=sys.argv[2], tenant_id="portal",
               verify=sys.argv[3])
job = client.jobs.submitJob(name="soak-tapis", appId="soak-app", appVersion="1.0",
                            execSystemId="1",
                            fileInputs=[{"name": "in", "sourceUrl": "/project/inputs/data.txt"}])
print(json.dumps({"uuid": job.uuid}))
"""


def _alive(process: psutil.Process) -> bool:
    """Still running and not a zombie; a process may end between the two questions."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def created_uuid(response: requests.Response) -> str:
    """GPULab answers a submit with the job's uuid as a JSON string (or plain text)."""
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()
    return data["uuid"] if isinstance(data, dict) else str(data)


class Receiver(http.server.BaseHTTPRequestHandler):
    """The webhook receiver: each delivery fails twice (500), then is accepted (200)."""

    attempts: Counter = Counter()
    accepted: set = set()
    lock = threading.Lock()

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        key = body.get("id") or json.dumps(body)[:200]  # the delivery's id: same on retries
        with self.lock:
            self.attempts[key] += 1
            ok = self.attempts[key] > 2
            if ok:
                self.accepted.add(((body.get("job") or {}).get("uuid"), key))
        self.send_response(200 if ok else 500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class Site:
    """One deployment: its database, var dir, processes and front end."""

    KINDS = ("web1", "web2", "q1", "q2", "watcher", "ssh", "sessions")

    def __init__(self, broker: str, work: Path, hook_port: int):
        self.broker, self.work = broker, work
        self.var = work / "var"
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.db_name = f"portal_soak_{broker}_{uuid.uuid4().hex[:6]}"
        self.db_url = urlunparse(urlparse(POSTGRES)._replace(path=f"/{self.db_name}"))
        self.instance = f"soak-{broker}-{uuid.uuid4().hex[:8]}"
        self.web_ports = [free_port(), free_port()]
        self.tls_port, self.ssh_port = free_port(), free_port()
        self.proxy_port = free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PORTAL_")}
        self.env.update(
            PORTAL_DATABASE_URL=self.db_url,
            PORTAL_VAR_DIR=str(self.var),
            PORTAL_INSTANCE=self.instance,
            PORTAL_ALLOWED_HOSTS="localhost,127.0.0.1",
            PORTAL_HTTPS="true",
            PORTAL_Q_WORKERS="2",
            PORTAL_WEB_WORKERS="2",
            PORTAL_SSH_HOST="127.0.0.1",
            PORTAL_SSH_BIND="127.0.0.1",
            PORTAL_SSH_PORT=str(self.ssh_port),
            PORTAL_SESSION_PROXY_URL=f"http://127.0.0.1:{self.proxy_port}",
            PORTAL_SESSION_PROXY_BIND=f"127.0.0.1:{self.proxy_port}",
            PORTAL_WEBHOOK_ALLOWED_HOSTS=f"127.0.0.1:{hook_port}",
            PORTAL_WEBHOOK_RETRY_DELAYS_S=WEBHOOK_DELAYS,
            PORTAL_STOP_GRACE_S="3",
            PORTAL_HALT_GRACE_S="5",
            PYTHONUNBUFFERED="1",
            DJANGO_SETTINGS_MODULE="portal.settings",
        )
        if broker == "redis":
            self.env["PORTAL_REDIS_URL"] = REDIS
        self.children: dict[str, subprocess.Popen] = {}
        self.stop_seconds: dict[str, list[float]] = defaultdict(list)
        self.restarts: list[tuple[float, float]] = []  # (killed at, answering again) monotonic

    # --- processes ------------------------------------------------------------------------

    def command(self, kind: str) -> tuple[list[str], dict]:
        env = dict(self.env)
        if kind.startswith("web"):
            env["PORTAL_WEB_BIND"] = f"127.0.0.1:{self.web_ports[int(kind[-1]) - 1]}"
            return GUNICORN, env
        return {
            "q1": [*MANAGE, "qcluster"],
            "q2": [*MANAGE, "qcluster"],
            "watcher": [*MANAGE, "watch_slaves"],
            "ssh": [*MANAGE, "ssh_gateway"],
            "sessions": [*MANAGE, "session_proxy"],
        }[kind], env

    def start(self, kind: str) -> None:
        command, env = self.command(kind)
        with open(self.logs / f"{kind}.log", "ab") as out:
            self.children[kind] = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # a unit of its own
            )  # fmt: skip

    def manage(self, *args: str, extra: dict | None = None, timeout: int = 300) -> str:
        done = subprocess.run(
            [*MANAGE, *args], cwd=ROOT, env={**self.env, **(extra or {})},
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]}: {done.stdout[-2000:]}{done.stderr[-3000:]}")
        return done.stdout

    def frontend(self, action: str) -> None:
        args = [str(ROOT / "scripts" / "tls-frontend.sh"), action]
        if action == "start":
            first, second = (f"127.0.0.1:{port}" for port in self.web_ports)
            # The template's one `server @UPSTREAM@;` line, given both web processes.
            args += ["--port", str(self.tls_port), "--upstream", f"{first}; server {second}"]
        done = subprocess.run(
            args, cwd=ROOT, env={**self.env, "PYTHON": PYTHON}, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        if done.returncode != 0 and action == "start":
            raise RuntimeError(f"tls-frontend.sh start: {done.stdout}{done.stderr}")

    def setup(self) -> dict:
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.db_name}"')
        self.manage("migrate", "--noinput", "-v0")
        self.manage("collectstatic", "--noinput", "-v0")
        self.frontend("start")  # also makes the portal CA and the front end's secret
        out = self.manage(
            "shell", "-c", SEED,
            extra={
                "SOAK_ENGINE_LIST": json.dumps(ENGINES), "SOAK_PEM": str(self.work / "login.pem"),
                "SOAK_IMAGE": IMAGE, "SOAK_PASSWORD": SOAK_PASSWORD,
            },
        )  # fmt: skip
        seed = json.loads(next(x for x in out.splitlines() if x.startswith("SEED "))[5:])
        for kind in self.KINDS:
            self.start(kind)
        return seed

    def kill9(self, kind: str) -> None:
        child = self.children[kind]
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)

    def sigterm(self, kind: str) -> float:
        """Stop one process as its unit does (SIGTERM to the main process; the watcher and
        the SSH gateway, KillMode=control-group, to the group); the seconds until its whole
        process group was gone."""
        child = self.children[kind]
        tree = [psutil.Process(child.pid), *psutil.Process(child.pid).children(recursive=True)]
        began = time.monotonic()
        if kind in ("watcher", "ssh"):
            os.killpg(child.pid, signal.SIGTERM)
        else:
            child.send_signal(signal.SIGTERM)
        while time.monotonic() - began < STOP_LIMIT_S + 10:
            child.poll()
            alive = [p for p in tree if _alive(p)]
            if not alive:
                break
            time.sleep(0.1)
        took = time.monotonic() - began
        try:
            os.killpg(child.pid, signal.SIGKILL)  # systemd's final SIGKILL, if anything is left
        except ProcessLookupError:
            pass
        child.wait(timeout=10)
        self.stop_seconds[kind].append(round(took, 2))
        return took

    def close(self) -> None:
        for child in self.children.values():
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait(timeout=10)
        self.frontend("stop")
        from clusters.runtime.engine import DockerEngine

        for url in ENGINES:
            engine = DockerEngine(url)
            try:
                for state in engine.list_by_labels({"gpuportal.instance": self.instance}):
                    engine.remove(state.id)
            except Exception as error:  # a cleanup problem must not hide the soak's result
                log(f"cleanup of {url}: {error}")
            finally:
                engine.close()
        if self.broker == "redis":
            import redis

            connection = redis.from_url(REDIS)
            keys = list(connection.scan_iter(match=f"django_q:{self.instance}:*"))
            if keys:
                connection.delete(*keys)
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')

    def sql(self, query: str, params=()) -> list[tuple]:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            return conn.execute(query, params).fetchall()


class Soak:
    def __init__(self, site: Site, seed: dict, seconds: float, hook_port: int):
        self.site, self.seconds, self.hook_port = site, seconds, hook_port
        self.base = f"https://localhost:{site.tls_port}"
        self.ca = str(site.var / "tls" / "server-ca.pem")
        self.http = requests.Session()
        self.http.verify = self.ca
        self.http.headers["Authorization"] = f"Token {seed['token']}"
        self.tapis_token = seed["tapis"]
        self.cli = install_cli()
        self.home = site.work / "home"
        (self.home / ".ssh").mkdir(parents=True, exist_ok=True)
        self.expected: dict[str, str] = {}  # job uuid -> the final state it must reach
        self.kinds: dict[str, str] = {}  # job uuid -> what it was (for the summary)
        self.may_fail: dict[str, str] = {}  # job uuid -> the reason that makes FAILED right
        self.answers: list[tuple[float, int, str]] = []  # (monotonic, status, what)
        self.problems: list[str] = []
        self.hostile: dict[str, int] = {}
        self.schedule_runs: dict[str, list[float]] = defaultdict(list)
        self.sessions_opened = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()

    # --- clients ------------------------------------------------------------------------

    def request(self, method: str, path: str, what: str, **kwargs) -> requests.Response | None:
        try:
            # verify per request: requests lets REQUESTS_CA_BUNDLE override a session's verify.
            response = self.http.request(
                method, self.base + path, timeout=60, verify=self.ca, **kwargs
            )
        except requests.RequestException as error:
            with self.lock:
                self.answers.append((time.monotonic(), 0, f"{what}: {error}"))
            return None
        with self.lock:
            self.answers.append((time.monotonic(), response.status_code, what))
        return response

    def gpulab_cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        # requests would let these override the client's --servercert.
        env = {k: v for k, v in os.environ.items() if k not in CA_OVERRIDES}
        env.update(HOME=str(self.home), NO_PROXY="localhost,127.0.0.1")
        command = [
            str(self.cli), "--cert", str(self.site.work / "login.pem"), "--servercert", self.ca,
            "--custom-master-url", f"{self.base}/api", *args,
        ]  # fmt: skip
        done = subprocess.run(
            command, env=env, input=stdin, capture_output=True, text=True, timeout=120
        )
        failed = done.returncode != 0
        with self.lock:
            self.answers.append(
                (time.monotonic(), 599 if failed else 200, f"gpulab-cli {args[0]}: {done.stderr}")
            )
        return done

    def expect(self, job_uuid: str, state: str, kind: str, or_failed: str = "") -> None:
        """``job_uuid`` must end in ``state`` (or FAILED with ``or_failed`` in its reason)."""
        with self.lock:
            self.expected[job_uuid] = state
            self.kinds[job_uuid] = kind
            if or_failed:
                self.may_fail[job_uuid] = or_failed

    def v2(self, name: str, command: str, **scheduling) -> dict:
        return {
            "name": name,
            "request": {
                "resources": {"clusterId": 1, "gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
                "docker": {"image": IMAGE, "command": command},
                "scheduling": {"minDuration": "1 minute", **scheduling},
            },
        }

    def submit(self, document: dict, what: str) -> str | None:
        response = self.request("POST", "/api/gpulab/v4.0/jobs", what, json=document)
        if response is not None and response.status_code == 201:
            return created_uuid(response)
        self.refused(what, response)
        return None

    def refused(self, what: str, response: requests.Response | None) -> None:
        """A submit that was not accepted. The front end's 503 (a web process killed with the
        request in its hands: nginx does not resend a POST) and no answer at all are judged
        with every other answer, by whether a restart was under way (``check``)."""
        if response is not None and response.status_code != 503:
            self.problems.append(f"{what}: HTTP {response.status_code} {response.text[:300]}")

    # --- the workload -------------------------------------------------------------------

    def cli_jobs(self, n: int) -> None:
        path = self.site.work / f"cli-{n}.json"
        path.write_text(json.dumps(self.v2(f"cli-{n}", "sh -c 'echo hello; sleep 2'")))
        done = self.gpulab_cli("submit", "--project", "soak", str(path))
        job = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else ""
        if re.fullmatch(r"[0-9a-f-]{36}", job):
            self.expect(job, "FINISHED", "gpulab-cli v2")
        else:
            self.problems.append(f"gpulab-cli submit: {done.returncode} {done.stderr[-300:]}")
        self.gpulab_cli("jobs")

    def rest_jobs(self, n: int) -> None:
        v1 = {
            "jobDefinition": {
                "name": f"v1-{n}", "description": "soak v1", "clusterId": 1,
                "dockerImage": IMAGE, "command": "sh -c 'echo v1; sleep 1'",
                "resources": {"gpus": 1, "systemMemory": 1024, "cpuCores": 1},
            }
        }  # fmt: skip
        if job := self.submit(v1, "v1 submit"):
            self.expect(job, "FINISHED", "v1")
        hooked = self.v2(f"hook-{n}", "true")
        hooked["request"]["notifications"] = {
            "subscriptions": [{
                "eventTypes": ["FINISHED"],
                "deliveryTargets": [{
                    "deliveryMethod": "WEBHOOK",
                    "deliveryAddress": f"http://127.0.0.1:{self.hook_port}/hook",
                }],
            }]
        }  # fmt: skip
        if job := self.submit(hooked, "webhook job"):
            self.expect(job, "FINISHED", "webhook")
        interactive = self.v2(f"interactive-{n}", "sleep 2", interactive=True)
        interactive["request"]["resources"]["gpus"] = 0
        if job := self.submit(interactive, "interactive job"):
            # GPULab's "start now or fail": on a loaded site it may find no free CPU.
            self.expect(job, "FINISHED", "interactive", or_failed="could not start at once")
        self.request("GET", "/api/gpulab/v4.0/jobs?max_hours=1", "job list")

    def session(self, n: int) -> None:
        """A session through the portal: started over REST, opened as a browser does (signed
        in, the portal's hand-off to the session proxy, the proxy's cookie), then stopped.
        A web process or the proxy may be killed meanwhile (the chaos): the browser tries
        again, as a person would, until the app answers or the session's job has ended."""
        response = self.request(
            "POST", "/api/portal/sessions", "session start",
            json={"template": "soak-httpd", "project": "soak"},
        )  # fmt: skip
        if response is None or response.status_code != 201:
            if response is not None and response.status_code != 503:
                # "start now or fail": on a loaded site a session may find no free CPU.
                if "could not start" not in response.text:
                    self.problems.append(
                        f"session start: {response.status_code} {response.text[:300]}"
                    )
            return
        body = response.json()
        key, job = body["key"], body["job_id"]
        browser = requests.Session()
        browser.verify = self.ca
        login = self.base + "/accounts/login/"
        opened, ended = False, False
        deadline = time.monotonic() + 90
        try:
            while time.monotonic() < deadline and not (opened or ended):
                try:
                    if "sessionid" not in browser.cookies:
                        browser.get(login, timeout=30, verify=self.ca)
                        browser.post(
                            login, timeout=30, verify=self.ca, headers={"Referer": login},
                            data={"username": "soaker", "password": SOAK_PASSWORD,
                                  "csrfmiddlewaretoken": browser.cookies.get("csrftoken", "")},
                        )  # fmt: skip
                    # The app answers once its job runs; until then the proxy says it is
                    # starting (or, while it restarts, nothing answers at all).
                    page = browser.get(
                        f"{self.base}/sessions/{key}/open", timeout=30, verify=self.ca
                    )
                    opened = page.ok and "soak-session" in page.text
                except requests.RequestException:
                    pass
                if not opened:
                    state = self.request("GET", f"/api/portal/sessions/{key}", "session state")
                    ended = state is not None and state.ok and state.json()["status"] in END_STATES
                    time.sleep(2)
            if opened:
                self.sessions_opened += 1
            elif not ended:
                self.problems.append(f"session {key}: the app never answered through the proxy")
        finally:
            browser.close()
            self.request("DELETE", f"/api/portal/sessions/{key}", "session stop")
        # Stopped by GPULab's halt (the wrapper exits 123); an interactive job that found no
        # room at once FAILED, by GPULab's rule.
        self.expect(job, "HALTED", "session", or_failed="could not start at once")

    def array(self, n: int) -> None:
        body = {
            "project": "soak",
            "template": self.v2(f"sweep-{n}-${{index}}", "sh -c 'echo ${index}'"),
            "variations": [{} for _ in range(5)],
        }
        response = self.request("POST", "/api/portal/jobs/array", "array submit", json=body)
        if response is not None and response.status_code == 201:
            for job in response.json()["uuids"]:
                self.expect(job, "FINISHED", "array")
        else:
            self.refused("array", response)

    def gang(self, n: int) -> None:
        role = {
            "taskNumber": 1, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 2,
            "command": "sh -c 'echo task $PAI_TASK_INDEX; sleep 3'",
        }  # fmt: skip
        config = {
            "jobName": f"gang-{n}",
            "image": IMAGE,
            # 2 GPUs each on slaves of 2: one task per engine.
            "taskRoles": [{**role, "name": "a", "taskNumber": 2}, {**role, "name": "b"}],
        }
        response = self.request("POST", "/api/gpulab/v4.0/jobs", "openpai gang", json=config)
        if response is None or response.status_code != 201:
            self.refused("gang", response)
            return
        # Every task of the gang: read back from the database once they exist.
        with self.lock:
            self.kinds[f"gang:{created_uuid(response)}"] = "openpai gang"

    def cancel_and_halt(self, n: int) -> None:
        long = self.submit(self.v2(f"to-cancel-{n}", "sleep 300"), "job to cancel")
        haltable = self.submit(
            self.v2(
                f"to-halt-{n}", "sh -c 'trap \"exit 123\" USR1; while true; do sleep 0.2; done'"
            ),
            "job to halt",
        )
        deadline = time.monotonic() + 40
        for job, action, state in ((long, "cancel", "CANCELLED"), (haltable, "halt", "HALTED")):
            if job is None:
                continue
            while time.monotonic() < deadline and self.status(job) != "RUNNING":
                time.sleep(0.5)
            done = self.gpulab_cli(action, job)
            if done.returncode == 0:
                self.expect(job, state, action)
            else:
                self.problems.append(f"gpulab-cli {action}: {done.stderr[-300:]}")
                self.expect(job, "CANCELLED", f"{action} (fallback)")
                self.request("PUT", f"/api/gpulab/v4.0/jobs/{job}/state/status", "cancel",
                             data="CANCELLED")  # fmt: skip

    def tapis(self, n: int) -> None:
        done = subprocess.run(
            [str(tapipy_python()), "-c", TAPIPY, f"{self.base}/api/tapis", self.tapis_token,
             self.ca],
            env={**{k: v for k, v in os.environ.items() if k not in CA_OVERRIDES},
                 "REQUESTS_CA_BUNDLE": self.ca},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if done.returncode == 0:
            job = json.loads(done.stdout.strip().splitlines()[-1])["uuid"]
            self.expect(job, "FINISHED", "tapis app")
        else:
            self.problems.append(f"tapipy: {done.stderr[-500:]}")

    def hostile_requests(self) -> None:
        """Requests that once took a site down: each must be refused with a 4xx, at once."""
        big = self.v2("ports", "true")
        big["request"]["docker"]["portMappings"] = [
            {"containerPort": 1000 + i} for i in range(5000)
        ]
        many = {"jobName": "huge", "image": IMAGE,
                "taskRoles": [{"name": "r", "taskNumber": 100000, "cpuNumber": 1,
                               "memoryMB": 64, "gpuNumber": 0, "command": "true"}]}  # fmt: skip
        long_command = self.v2("long", "echo " + "x" * 200_000)
        words = self.v2("words", "true")
        words["request"]["docker"]["command"] = ["echo"] + ["w"] * 100_000
        keys = self.v2("keys", "true")
        keys["request"]["extra"] = {"sshPubKeys": ["garbage"]}
        numbers = self.v2("numbers", "true")
        numbers["request"]["resources"]["cpus"] = "1"
        mails = self.v2("mails", "true")
        mails["request"]["scheduling"]["emailOnEnd"] = [f"u{i}@example.org" for i in range(5000)]
        for what, document in (
            ("5000 ports", big), ("100000 tasks", many), ("200 KB command", long_command),
            ("100000 words", words), ("garbage ssh key", keys), ("string cpus", numbers),
            ("5000 e-mail recipients", mails),
        ):  # fmt: skip
            began = time.monotonic()
            response = self.request(
                "POST", "/api/gpulab/v4.0/jobs", f"hostile {what}", json=document
            )
            status = response.status_code if response is not None else 0
            self.hostile[what] = status
            if not 400 <= status < 500:
                self.problems.append(f"hostile {what}: HTTP {status} (want a 4xx)")
            elif time.monotonic() - began > 5:
                self.problems.append(f"hostile {what}: took {time.monotonic() - began:.1f} s")

    def status(self, job: str) -> str:
        rows = self.site.sql("select status from jobs_job where uuid = %s", (job,))
        return rows[0][0] if rows else ""

    # --- chaos and watching -------------------------------------------------------------

    def chaos(self) -> None:
        """SIGKILL one process of each kind, spread over the run, and restart it."""
        kinds = ["web1", "q1", "watcher", "ssh", "sessions", "q2", "web2"]
        gap = self.seconds / (len(kinds) + 1)
        for kind in kinds:
            if self.stop.wait(gap):
                return
            log(f"kill -9 {kind}")
            killed = time.monotonic()
            self.site.kill9(kind)
            time.sleep(1)
            self.site.start(kind)
            self.site.restarts.append((killed, time.monotonic() + 15))

    def watch_schedules(self) -> None:
        last: dict[str, object] = {}
        while not self.stop.wait(2):
            try:
                rows = self.site.sql("select name, next_run, minutes from django_q_schedule "
                                     "where repeats <> 0 and schedule_type = 'I'")  # fmt: skip
            except Exception:
                continue
            for name, next_run, _minutes in rows:
                if name in last and last[name] != next_run:
                    self.schedule_runs[name].append(time.monotonic())
                last[name] = next_run

    def loop(self, work, every: float) -> None:
        n = 0
        while not self.stop.is_set():
            try:
                work(n)
            except Exception as error:  # noqa: BLE001 (one failed step is a finding, not the end)
                self.problems.append(f"{work.__name__}: {type(error).__name__}: {error}")
            n += 1
            self.stop.wait(every)

    def run(self) -> None:
        threads = [
            threading.Thread(target=self.loop, args=(self.cli_jobs, 4)),
            threading.Thread(target=self.loop, args=(self.rest_jobs, 5)),
            threading.Thread(target=self.loop, args=(self.array, 20)),
            threading.Thread(target=self.loop, args=(self.gang, 25)),
            threading.Thread(target=self.loop, args=(self.cancel_and_halt, 30)),
            threading.Thread(target=self.loop, args=(self.tapis, 40)),
            threading.Thread(target=self.loop, args=(self.session, 30)),
            threading.Thread(target=self.chaos),
            threading.Thread(target=self.watch_schedules),
        ]
        self.started = time.monotonic()
        access = self.site.var / "tls" / "nginx" / "logs" / "access.log"
        self.access_log_offset = access.stat().st_size if access.exists() else 0
        for thread in threads:
            thread.start()
        self.hostile_requests()
        self.stop.wait(self.seconds)
        self.stop.set()
        for thread in threads:
            thread.join(timeout=180)


def gang_tasks(site: Site, soak: Soak) -> None:
    """Each gang's tasks: all must finish (the gang's policy: every task succeeds)."""
    for key in [k for k in soak.kinds if k.startswith("gang:")]:
        first = key.split(":", 1)[1]
        rows = site.sql(
            "select t.uuid from jobs_job t join jobs_job f on t.gang_id = f.gang_id "
            "where f.uuid = %s", (first,),
        )  # fmt: skip
        for (task,) in rows:
            soak.expect(str(task), "FINISHED", "openpai task")


def wait_for_ends(site: Site, soak: Soak, timeout: float) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        rows = dict(site.sql("select uuid::text, status from jobs_job"))
        open_jobs = [j for j in soak.expected if rows.get(j) not in END_STATES]
        if not open_jobs or time.monotonic() > deadline:
            return rows
        time.sleep(2)


def wait_for_deliveries(site: Site, soak: Soak, timeout: float) -> None:
    """Until every webhook job's delivery was accepted: a retry whose sender was killed comes
    due again when its claim runs out (notifications/subscriptions.py, RETRY_CLAIM_S)."""
    hooked = {j for j, kind in soak.kinds.items() if kind == "webhook"}
    deadline = time.monotonic() + timeout
    while hooked and time.monotonic() < deadline:
        rows = site.sql(
            "select distinct j.uuid::text from jobs_jobdelivery d join jobs_job j "
            "on j.id = d.job_id where d.ok"
        )
        if hooked <= {job for (job,) in rows}:
            return
        time.sleep(2)


def check(site: Site, soak: Soak, finals: dict[str, str], began_wall: dt.datetime) -> dict:
    problems = list(soak.problems)
    if not soak.sessions_opened:
        problems.append("no session was opened through the session proxy")
    reasons = dict(site.sql("select uuid::text, end_reason from jobs_job where status = 'FAILED'"))
    wrong = {
        j: (finals.get(j), want)
        for j, want in soak.expected.items()
        if finals.get(j) != want
        and not (j in soak.may_fail and soak.may_fail[j] in (reasons.get(j) or ""))
    }
    for job, (got, want) in sorted(wrong.items())[:20]:
        problems.append(f"job {job} ({soak.kinds.get(job)}): {got}, want {want}")
    doubled = site.sql(
        "select j.uuid::text, e.new_state, count(*) from jobs_jobevent e join jobs_job j "
        "on j.id = e.job_id where e.new_state = any(%s) group by 1, 2 having count(*) > 1",
        (sorted(END_STATES),),
    )
    for job, state, count in doubled:
        problems.append(f"job {job}: {count} {state} events (want one)")
    # Front end: every 5xx must be the documented 503 while a web process restarted.
    windows = site.restarts
    fives = [(t, s, w) for t, s, w in soak.answers if s >= 500 or s == 0]
    undocumented = [
        (round(t - soak.started, 1), s, w[:200]) for t, s, w in fives
        if not (s in (503, 599, 0) and any(a <= t <= b for a, b in windows))
    ]  # fmt: skip
    for item in undocumented[:10]:
        problems.append(f"answer outside a restart: {item}")
    access = site.var / "tls" / "nginx" / "logs" / "access.log"
    nginx_5xx = Counter()
    if access.exists():
        with access.open(errors="replace") as lines:
            lines.seek(soak.access_log_offset)
            text = lines.read()
        for line in text.splitlines():
            match = re.search(r'" (5\d\d) ', line)
            if match:
                nginx_5xx[match.group(1)] += 1
    if set(nginx_5xx) - {"503"}:
        problems.append(f"front end answered {dict(nginx_5xx)}")
    # Logs: no traceback anywhere.
    tracebacks = {}
    for path in sorted(site.logs.glob("*.log")):
        count = path.read_text(errors="replace").count("Traceback")
        if count:
            tracebacks[path.stem] = count
            problems.append(f"{count} traceback(s) in {path.name}")
    # Periodic schedules: each ran, never more than two intervals apart.
    schedules = {}
    for name, minutes in site.sql(
        "select name, minutes from django_q_schedule where schedule_type = 'I' and repeats <> 0"
    ):
        runs = soak.schedule_runs.get(name, [])
        interval = 60 * (minutes or 1)
        points = [soak.started, *runs, time.monotonic()]
        gap = max(b - a for a, b in zip(points, points[1:], strict=False))
        schedules[name] = {"runs": len(runs), "max_gap_s": round(gap, 1), "interval_s": interval}
        if interval <= 600 and gap > 2 * interval + 30:  # django-q2 reads schedules every 30 s
            problems.append(f"schedule {name!r}: {gap:.0f} s without a run")
    # Webhooks: every job with one got it accepted, after two failed attempts.
    hooked = [j for j, kind in soak.kinds.items() if kind == "webhook"]
    delivered = {str(j) for (j,) in site.sql(
        "select distinct j.uuid from jobs_jobdelivery d join jobs_job j on j.id = d.job_id "
        "where d.ok")}  # fmt: skip
    missing = [j for j in hooked if j not in delivered]
    if missing:
        problems.append(f"{len(missing)} of {len(hooked)} webhooks not delivered: {missing[:5]}")
    slow_stops = {k: v for k, v in site.stop_seconds.items() if max(v) >= STOP_LIMIT_S}
    if slow_stops:
        problems.append(f"stopped later than {STOP_LIMIT_S} s: {slow_stops}")
    return {
        "broker": site.broker,
        "seconds_driven": round(soak.seconds, 1),
        "jobs": len(soak.expected),
        "jobs_by_kind": dict(Counter(soak.kinds[j] for j in soak.expected)),
        "final_states": dict(Counter(finals.get(j) for j in soak.expected)),
        "wrong_final_state": len(wrong),
        "doubled_end_events": len(doubled),
        "answers": len(soak.answers),
        "answers_5xx_or_failed": len(fives),
        "answers_5xx_outside_restarts": len(undocumented),
        "front_end_5xx": dict(nginx_5xx),
        "hostile": soak.hostile,
        "kills": len(site.restarts),
        "tracebacks": tracebacks,
        "schedules": schedules,
        "sessions_opened": soak.sessions_opened,
        "webhooks": {
            "jobs": len(hooked),
            "delivered": len(hooked) - len(missing),
            "receiver_attempts": sum(Receiver.attempts.values()),
        },  # fmt: skip
        "stop_seconds": dict(site.stop_seconds),
        "problems": problems,
        "ok": not problems,
    }


def wait_for_web(soak: Soak, timeout: float = 60) -> None:
    """Until both web processes answer through the front end."""
    deadline = time.monotonic() + timeout
    answered = 0
    while time.monotonic() < deadline and answered < 4:
        try:
            ok = soak.http.get(soak.base + "/api/gpulab/v4.0/version", timeout=5, verify=soak.ca)
            answered = answered + 1 if ok.ok else 0
        except requests.RequestException:
            answered = 0
        time.sleep(0.5)


def soak_one(broker: str, seconds: float, keep: bool) -> dict:
    Receiver.attempts, Receiver.accepted = Counter(), set()  # this run's deliveries only
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix=f"gpuportal-soak-{broker}-"))
    site = Site(broker, work, server.server_address[1])
    began_wall = dt.datetime.now(dt.UTC)
    try:
        log(f"{broker}: setting up in {work}")
        seed = site.setup()
        soak = Soak(site, seed, seconds, server.server_address[1])
        wait_for_web(soak)
        log(f"{broker}: driving for {seconds:.0f} s")
        soak.run()
        gang_tasks(site, soak)
        log(f"{broker}: waiting for {len(soak.expected)} jobs to end")
        wait_for_ends(site, soak, 150)
        log(f"{broker}: SIGTERM to every process, then a fresh start")
        for kind in Site.KINDS:
            site.sigterm(kind)
        for kind in Site.KINDS:
            site.start(kind)
        restarted = time.monotonic()
        site.restarts.append((restarted - 30, restarted + 60))  # the stop and start themselves
        wait_for_web(soak)
        after = soak.submit(soak.v2("after-restart", "true"), "after restart")
        if after:
            soak.expect(after, "FINISHED", "after restart")
        finals = wait_for_ends(site, soak, 90)
        wait_for_deliveries(site, soak, 150)
        return check(site, soak, finals, began_wall)
    finally:
        server.shutdown()
        if keep:
            log(f"{broker}: kept {work} (and database {site.db_name})")
        else:
            site.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150, help="driving time per broker")
    parser.add_argument("--broker", choices=["orm", "redis", "both"], default="both")
    parser.add_argument("--keep", action="store_true", help="keep the site for a post-mortem")
    args = parser.parse_args()
    brokers = ["orm", "redis"] if args.broker == "both" else [args.broker]
    summary = {"runs": [soak_one(broker, args.seconds, args.keep) for broker in brokers]}
    summary["ok"] = all(run["ok"] for run in summary["runs"])
    print(json.dumps(summary, indent=2))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
