"""Fixtures of the gpulab-cli tests: the client itself, nginx/openssl, a HOME, a login PEM and
a `cli(...)` runner. Each test module defines its own module-scoped `portal` fixture
(cli_support.running_portal)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.cli_support import install_cli, unavailable


@pytest.fixture(scope="session")
def gpulab_cli() -> Path:
    """The gpulab-cli executable from a throwaway virtual environment, reused between runs."""
    return install_cli()


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


@pytest.fixture(scope="module")
def home(portal) -> Path:
    """A HOME for the client: it reads ~/.ssh/*.pub and writes ~/.ssh config for running jobs."""
    path = portal.var_dir / "home"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="module")
def login_pem(portal) -> Path:
    target = portal.var_dir / "login.pem"
    return portal.download_login_pem("alice", "alice-pw-2718", target)


@pytest.fixture(scope="module")
def cli(portal, gpulab_cli, login_pem, home):
    env = {
        key: value
        for key, value in os.environ.items()
        # gpulab-cli refuses https_proxy; requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE
        # override the client's --servercert (session.verify), so they must go too.
        if key.lower() not in {"https_proxy", "http_proxy", "all_proxy"}
        and key not in {"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}
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

    def run(
        *args: str,
        pem: Path | None = None,
        stdin: str | None = None,
        timeout: int = 90,
        extra_env: dict | None = None,
    ):
        done = subprocess.run(
            [*base(pem), *args],
            env={**env, **(extra_env or {})},
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
