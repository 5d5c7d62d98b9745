"""Production by default: error answers, settings made once per installation, files private.

Issue 12 items 1, 4 (the instance id), 9 and issue 10 item 4: no debug page and no secret on any
answer, JSON errors for every path under /api/, a var directory and files only the portal's
user can read, every manage.py command on a fresh clone.
"""

import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-settings-value-never-shown"


def run_python(code: str, var_dir: Path, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PORTAL_VAR_DIR": str(var_dir), "PYTHONPATH": str(ROOT), **env}
    for name in ("PORTAL_DEBUG", "PORTAL_SECRET_KEY", "PORTAL_INSTANCE", "PORTAL_DATABASE_URL"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True
    )


def read_settings(var_dir: Path, **env) -> dict:
    code = (
        "import os, json, django; os.environ['DJANGO_SETTINGS_MODULE']='portal.settings';"
        "django.setup(); from django.conf import settings as s;"
        "print(json.dumps([s.DEBUG, s.SECRET_KEY, s.PORTAL_INSTANCE, s.ALLOWED_HOSTS]))"
    )
    done = run_python(code, var_dir, **env)
    assert done.returncode == 0, done.stderr
    debug, secret_key, instance, hosts = json.loads(done.stdout.strip().splitlines()[-1])
    return {"debug": debug, "secret_key": secret_key, "instance": instance, "hosts": hosts}


def private_bits(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode) & 0o077


# --- Settings made once per installation ------------------------------------------------------


def test_defaults_are_production_and_kept_per_installation(tmp_path):
    var_dir = tmp_path / "fresh" / "var"  # does not exist yet
    first = read_settings(var_dir)
    assert first["debug"] is False
    assert len(first["secret_key"]) >= 50 and "insecure" not in first["secret_key"]
    assert first["instance"].startswith("gp-") and first["instance"] != "gpuportal"
    assert socket.gethostname().lower() in first["hosts"]
    assert stat.S_IMODE(var_dir.stat().st_mode) == 0o700
    for name in ("secret_key", "instance-id"):
        assert stat.S_IMODE((var_dir / name).stat().st_mode) == 0o600

    again = read_settings(var_dir)  # the web, the workers and the watcher agree
    assert (again["secret_key"], again["instance"]) == (first["secret_key"], first["instance"])
    other = read_settings(tmp_path / "other-install")
    assert other["instance"] != first["instance"] and other["secret_key"] != first["secret_key"]

    chosen = read_settings(var_dir, PORTAL_INSTANCE="site-a", PORTAL_DEBUG="true")
    assert chosen["instance"] == "site-a" and chosen["debug"] is True


def test_https_behind_the_front_end_makes_cookies_secure(tmp_path):
    code = (
        "import os, django; os.environ['DJANGO_SETTINGS_MODULE']='portal.settings';"
        "django.setup(); from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    plain = run_python(code, tmp_path / "var")
    assert plain.stdout.split() == ["False", "False", "None"], plain.stderr
    https = run_python(code, tmp_path / "var", PORTAL_HTTPS="true")
    assert https.stdout.strip() == "True True ('HTTP_X_FORWARDED_PROTO', 'https')", https.stderr


def test_reconcile_takes_only_its_own_slaves_containers(slave, settings):
    from types import SimpleNamespace

    from jobs.execution.container_spec import (
        LABEL_INSTANCE,
        LABEL_JOB,
        LABEL_SLAVE,
        LEGACY_INSTANCE,
    )
    from jobs.execution.reconcile import _belongs_to

    settings.PORTAL_INSTANCE = "gp-mine"

    def container(instance="gp-mine", **labels):
        return SimpleNamespace(labels={LABEL_INSTANCE: instance, **labels})

    here = str(slave.pk)
    running_here = {"job-here": object()}
    cases = {
        "mine": (container(**{LABEL_JOB: "job-here", LABEL_SLAVE: here}), True),
        "stray of mine": (container(**{LABEL_JOB: "gone", LABEL_SLAVE: here}), True),
        "other slave": (container(**{LABEL_JOB: "x", LABEL_SLAVE: str(slave.pk + 1)}), False),
        "other portal": (container("gp-other", **{LABEL_JOB: "x", LABEL_SLAVE: here}), False),
        "no slave label, my job": (container(**{LABEL_JOB: "job-here"}), True),
        "no slave label, unknown": (container(**{LABEL_JOB: "gone"}), False),
        "legacy, my job": (container(LEGACY_INSTANCE, **{LABEL_JOB: "job-here"}), True),
        "legacy, unknown": (container(LEGACY_INSTANCE, **{LABEL_JOB: "gone"}), False),
        "legacy with slave": (
            container(LEGACY_INSTANCE, **{LABEL_JOB: "job-here", LABEL_SLAVE: here}),
            False,
        ),
    }
    got = {name: _belongs_to(c, slave=slave, jobs=running_here) for name, (c, _) in cases.items()}
    assert got == {name: expected for name, (_, expected) in cases.items()}


def test_a_var_dir_made_by_hand_with_open_modes_is_made_private(tmp_path):
    var_dir = tmp_path / "var"
    var_dir.mkdir(mode=0o755)
    os.chmod(var_dir, 0o755)
    (var_dir / "instance-id").write_text("kept-id\n")
    os.chmod(var_dir / "instance-id", 0o644)
    assert read_settings(var_dir)["instance"] == "kept-id"
    assert private_bits(var_dir) == 0 and private_bits(var_dir / "instance-id") == 0


def test_migrate_on_a_fresh_clone_makes_the_var_dir_schedules_and_a_private_database(tmp_path):
    var_dir = tmp_path / "clone" / "var"
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k != "PORTAL_DATABASE_URL"},
            "PORTAL_VAR_DIR": str(var_dir),
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    database = var_dir / "portal.sqlite3"
    assert stat.S_IMODE(var_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    with sqlite3.connect(database) as db:
        rows = dict(db.execute("SELECT name, func FROM django_q_schedule").fetchall())
    assert rows == {
        "scheduler tick (safety net)": "jobs.tasks.scheduler_tick",
        "reconcile slaves": "jobs.tasks.reconcile",
        "purge old job outputs": "jobs.tasks.outputs_purge",
        "sync directory users": "accounts.tasks.directory_sync",
        "monthly usage reports": "reports.tasks.reports_mail_monthly",
        "police interactive sessions": "interactive.tasks.sessions_sweep",
    }


@pytest.mark.django_db
def test_schedules_exist_after_migrate_without_run_portal():
    from django_q.models import Schedule

    # The test database was made by `migrate`; nothing here ran run_portal.
    names = set(Schedule.objects.values_list("func", flat=True))
    assert {"jobs.tasks.scheduler_tick", "jobs.tasks.reconcile"} <= names


def test_files_with_secrets_are_private_to_the_portal_user(tmp_path, settings, submit):
    from accounts.certs.ca import CERT_FILE, ca_get_or_create
    from core.installation import private_dir
    from portal.bootstrap import _admin_password

    var_dir = private_dir(tmp_path / "var")
    settings.PORTAL_LOG_ARCHIVE_DIR = var_dir / "logs"
    settings.PORTAL_CA_DIR = var_dir / "ca"
    old_umask = os.umask(0o022)  # what most accounts have: files 0644 unless the portal cares
    try:
        from jobs.execution.logs import job_log_archive

        job_log_archive(job=submit(), data=b"secret output\n")
        ca_get_or_create()
        _admin_password(var_dir / "admin-password.txt")
    finally:
        os.umask(old_umask)
    paths = [p for p in var_dir.rglob("*") if p.name != CERT_FILE]  # the CA certificate is public
    names = {p.name for p in paths}
    assert {"logs", "ca", "ca.key", "admin-password.txt"} <= names
    assert any(name.endswith(".log") for name in names)
    assert [str(p) for p in paths if private_bits(p)] == []
    assert private_bits(var_dir) == 0


@pytest.mark.django_db
def test_the_sqlite_file_is_made_private_when_opened(tmp_path):
    from django.db import connections

    from portal.apps import _sqlite_file_private

    path = tmp_path / "db.sqlite3"
    sqlite3.connect(path).close()
    os.chmod(path, 0o644)

    class Fake:
        vendor = "sqlite"
        settings_dict = {"NAME": str(path)}

    _sqlite_file_private(sender=None, connection=Fake())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert connections["default"].vendor in {"sqlite", "postgresql"}


# --- Error answers ----------------------------------------------------------------------------


def assert_json_error(response, status: int) -> dict:
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    return body


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request, settings):
    """Both with DEBUG off (the default) and with PORTAL_DEBUG=true: /api/ answers JSON."""
    settings.DEBUG = request.param
    return request.param


@pytest.mark.django_db
def test_unknown_api_route_answers_json_404(client, debug):
    body = assert_json_error(client.get("/api/gpulab/v4.0/nope"), 404)
    assert "/api/gpulab/v4.0/nope" in body["error"]
    assert_json_error(client.get("/api/"), 404)
    assert_json_error(client.post("/api/nothing/here", data={}), 404)


@pytest.mark.django_db
def test_wrong_method_under_api_answers_json_405(client, debug):
    assert_json_error(client.delete("/api/docs/"), 405)
    assert_json_error(client.put("/api/gpulab/v4.0/version"), 405)


@pytest.mark.django_db
def test_bad_host_under_api_answers_json_400_and_names_the_setting(client, debug):
    body = assert_json_error(
        client.get("/api/gpulab/v4.0/version", HTTP_HOST="evil.example.org"), 400
    )
    assert "evil.example.org" in body["error"] and "ALLOWED_HOSTS" in body["error"]


@pytest.mark.django_db
def test_the_machines_own_host_name_is_served(client):
    host = socket.gethostname().lower()
    response = client.get("/api/gpulab/v4.0/version", HTTP_HOST=host)
    assert response.status_code == 200 and response.json()["api_version"] == "4.0"


@pytest.mark.django_db
def test_bad_host_on_a_page_is_a_plain_400_without_debug_information(client):
    response = client.get("/accounts/login/", HTTP_HOST="evil.example.org")
    assert response.status_code == 400
    assert b"Bad request" in response.content and b"ALLOWED_HOSTS" not in response.content


@pytest.mark.django_db
def test_unknown_page_is_the_styled_404(client, member):
    client.force_login(member)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html and "/no/such/page/" in html
    assert "portal-nav" in html and member.username in html  # the portal's own layout
    assert "URLconf" not in html and "urlpatterns" not in html  # not Django's debug page


@pytest.mark.django_db
@pytest.mark.urls("tests.portal.error_urls")
def test_crash_answers_a_styled_500_or_json_and_never_settings(client, settings, debug):
    settings.SECRET_KEY = SECRET
    client.raise_request_exception = False
    api = client.get("/api/test/boom")
    body = assert_json_error(api, 500)
    assert SECRET not in api.content.decode() and "boom" not in body["error"]
    page = client.get("/test/boom")
    assert page.status_code == 500
    if not debug:
        html = page.content.decode()
        assert "Something went wrong" in html and "portal-nav" in html
        assert SECRET not in html and "Traceback" not in html


@pytest.mark.django_db
@pytest.mark.urls("tests.portal.error_urls")
def test_not_allowed_answers_a_styled_403_or_json(client):
    body = assert_json_error(client.get("/api/test/forbidden"), 403)
    assert body["error"] == "members of project vision only"
    page = client.get("/test/forbidden")
    assert page.status_code == 403
    html = page.content.decode()
    assert "Not allowed" in html and "members of project vision only" in html
    assert "portal-nav" in html


@pytest.mark.django_db
def test_footer_api_link_lands_on_the_api_docs(client):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b'<a href="/api/docs">API docs</a>' in page.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


def test_debug_is_off_in_this_process_as_well():
    # pytest-django forces DEBUG off; the settings module's own default is tested above.
    assert django_settings.DEBUG is False


# --- Service definitions ----------------------------------------------------------------------


def test_systemd_units_start_the_production_processes(tmp_path):
    import importlib
    import shutil

    from django.core.management import get_commands

    units = ROOT / "deploy" / "systemd"
    started = {}
    for unit in sorted(units.glob("*.service")):
        for line in unit.read_text().splitlines():
            key, _, command = line.partition("=")
            if key in {"ExecStart", "ExecStartPre"}:
                started.setdefault(unit.name, []).append(command.split())
    commands = {
        name: [c[2] if "manage.py" in c else c[0] for c in cs] for name, cs in started.items()
    }
    assert commands == {
        "gpuportal-qcluster.service": ["qcluster"],
        "gpuportal-ssh.service": ["ssh_gateway"],
        "gpuportal-sessions.service": ["session_proxy"],
        "gpuportal-watcher.service": ["watch_slaves"],
        "gpuportal-web.service": [
            "migrate",
            "collectstatic",
            "/opt/gpuportal/.venv/bin/gunicorn",
        ],
    }
    known = get_commands()
    names = ("migrate", "collectstatic", "qcluster", "watch_slaves", "ssh_gateway", "session_proxy")
    assert all(name in known for name in names)
    gunicorn = started["gpuportal-web.service"][-1]
    assert gunicorn[1:] == ["-c", "python:portal.gunicorn_conf"]
    conf = importlib.import_module("portal.gunicorn_conf")
    assert conf.wsgi_app == "portal.wsgi:application" and conf.workers >= 2

    analyze = shutil.which("systemd-analyze")
    if analyze:  # the units' syntax, with this checkout's paths in place of /opt/gpuportal
        venv_bin = str(Path(sys.executable).parent)
        for unit in units.iterdir():
            text = unit.read_text().replace("/opt/gpuportal/.venv/bin", venv_bin)
            (tmp_path / unit.name).write_text(text.replace("/opt/gpuportal", str(ROOT)))
        done = subprocess.run(
            [
                analyze,
                "verify",
                "--man=no",
                *sorted(str(p) for p in tmp_path.iterdir() if p.suffix in {".service", ".target"}),
            ],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and "gpuportal" not in done.stderr, done.stderr


def test_bench_commands_migrate_a_fresh_database_first(tmp_path):
    """`bench/scheduler.py` (then `manage.py bench_scheduler`) on a fresh clone (no migrate yet)
    used to fail with "no such table"; every command works on a fresh clone."""
    import subprocess
    import sys

    env = {**os.environ, "PORTAL_VAR_DIR": str(tmp_path / "fresh-var")}
    env.pop("PORTAL_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "bench/scheduler.py", "--queued", "50", "--slaves", "5",
         "--gpus-per-slave", "2", "--repeat", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "running migrate first" in done.stderr
    assert '"full_tick_s"' in done.stdout
