"""Issue 31, end to end: a real portal (runserver and the nginx TLS front end, as the gpulab-cli
tests run it) configured with the real slapd and the real OIDC provider. In headless chromium a
lab member signs in through each, gets a project from a directory group, submits a job on
Create Job, downloads a login PEM, and the real gpulab-cli uses that PEM: it lists the job and
submits another in the mapped project. Needs slapd, the provider, chromium, nginx and the client
(each skips without, or fails under its PORTAL_REQUIRE_*)."""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.support import screenshot
from tests.cli.cli_support import Portal, install_cli, job_file, ok, submitted_id, unavailable
from tests.signin.directory_servers import (
    OIDC_CLIENT,
    LdapTree,
    ldap_url,
    oidc_control,
    oidc_issuer,
    oidc_portal_settings,
    unique,
)

pytestmark = [pytest.mark.browser, pytest.mark.cli, pytest.mark.ldap, pytest.mark.oidc]


@pytest.fixture(scope="module")
def lab():
    """The directory's people: lin in LDAP group nlp (gidNumber 7301), an OIDC user in a group
    that maps to project speech (made by portal_setup.py, GID 6002)."""
    tree = LdapTree(ldap_url())
    issuer = oidc_issuer()
    oidc_control("client", *OIDC_CLIENT, "http://127.0.0.1/oidc/callback/")
    tree.add_user("lin", "lin-pw", given="Lin", family="Lee", uid_number=5301)
    nlp = tree.add_group("nlp", ["lin"], gid=7301)
    oidc_name, speech_group = unique("kim"), unique("speech-")
    oidc_control("user", oidc_name, "--password", "kim-pw", "--groups", speech_group)
    yield {
        "tree": tree,
        "issuer": issuer,
        "map": {nlp: {"project": "nlp"}, speech_group: {"project": "speech"}},
        "oidc_name": oidc_name,
    }
    tree.remove()


@pytest.fixture(scope="module")
def live(lab):
    if not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
        unavailable("nginx is not installed (apt-get install nginx)")
    var_dir = Path(tempfile.mkdtemp(prefix="gpuportal-signin-"))
    portal = Portal(var_dir)
    portal.env.update(
        {
            **lab["tree"].portal_settings(),
            **oidc_portal_settings(lab["issuer"]),
            "PORTAL_SIGNIN_GROUP_MAP": json.dumps(lab["map"]),
        }
    )
    try:
        portal.manage("migrate", "--noinput")
        portal.setup("setup")  # users alice/bob, projects vision/speech, cluster 1, slave gpu1
        portal.start()
        started = portal.frontend("start")
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}"
        yield portal
    finally:
        portal.stop()
        shutil.rmtree(var_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def gpulab_cli(live):
    return install_cli()


def cli(live, gpulab_cli, pem: Path, *args: str):
    env = {
        key: value
        for key, value in os.environ.items()
        if key.lower() not in {"https_proxy", "http_proxy", "all_proxy"}
        and key not in {"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}
        and not key.startswith("GPULAB_")
    }
    home = live.var_dir / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), NO_PROXY="localhost,127.0.0.1")
    return subprocess.run(
        [str(gpulab_cli), "--cert", str(pem), "--servercert", str(live.server_ca)]
        + ["--custom-master-url", live.api_url, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )


def submit_and_download(page, live, *, project: str, job_name: str, pem: Path) -> None:
    """On Create Job, submit a job in ``project`` (offered: the directory's group granted it);
    then download a login PEM from the certificates page."""
    page.goto(live.url + "/jobs/new/")
    expect(page.locator("#id_project option", has_text=project)).to_have_count(1)
    page.select_option("#id_project", label=project)
    document = {
        "name": job_name,
        "request": {
            "resources": {"clusterId": 1, "gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": "debian:stable", "command": "echo signed in"},
            "scheduling": {"notBefore": "2099-01-01T00:00:00Z"},  # stays QUEUED
        },
    }
    page.evaluate(
        """text => {
          const cm = document.getElementById('job-editor')?.CodeMirror;
          if (cm) { cm.setValue(text); } else { document.getElementById('id_document').value = text; }
        }""",
        json.dumps(document, indent=2),
    )
    page.click("#job-submit")
    expect(page.locator(".alert-success")).to_contain_text(f"Job {job_name} submitted")
    page.goto(live.url + "/certificates/")
    with page.expect_download() as download:
        page.click("form[action$='/certificates/new/'] button[type=submit]")
    download.value.save_as(pem)
    pem.chmod(0o600)


def test_ldap_member_signs_in_submits_and_uses_the_pem(live, lab, page, gpulab_cli, js_errors):
    page.goto(live.url + "/accounts/login/")
    expect(page.locator("#signin-ldap-hint")).to_be_visible()
    page.fill("#id_username", "lin")
    page.fill("#id_password", "lin-pw")
    page.click("form[action='/accounts/login/'] button[type=submit]")
    expect(page.locator("#nav-user")).to_have_text("lin")
    pem = live.var_dir / "lin.pem"
    submit_and_download(page, live, project="nlp", job_name="ldap-job", pem=pem)
    screenshot(page, "signin-ldap-certificates")

    listed = ok(cli(live, gpulab_cli, pem, "jobs"), portal=live)
    assert "ldap-job" in listed
    job_id = submitted_id(
        cli(live, gpulab_cli, pem, "submit", "--project", "nlp", str(job_file(live.var_dir))),
        live,
    )
    assert live.setup("status", job_id)["status"] == "QUEUED"
    assert not js_errors


def test_oidc_member_signs_in_submits_and_uses_the_pem(live, lab, page, gpulab_cli, js_errors):
    page.goto(live.url + "/accounts/login/?next=/jobs/")
    expect(page.locator("#signin-oidc")).to_have_text("Sign in with Test lab")
    screenshot(page, "signin-page")
    page.click("#signin-oidc")
    # At the provider's own sign-in page.
    expect(page.locator("#idp-sign-in")).to_be_visible()
    assert page.url.startswith(lab["issuer"].rsplit("/o", 1)[0])
    page.fill("#id_username", lab["oidc_name"])
    page.fill("#id_password", "kim-pw")
    page.click("#idp-sign-in")
    expect(page.locator("#nav-user")).to_have_text(lab["oidc_name"])
    assert page.url.startswith(live.url + "/jobs/")
    pem = live.var_dir / "kim.pem"
    submit_and_download(page, live, project="speech", job_name="oidc-job", pem=pem)
    screenshot(page, "signin-oidc-certificates")

    assert "oidc-job" in ok(cli(live, gpulab_cli, pem, "jobs"), portal=live)
    job_id = submitted_id(
        cli(live, gpulab_cli, pem, "submit", "--project", "speech", str(job_file(live.var_dir))),
        live,
    )
    assert live.setup("status", job_id)["status"] == "QUEUED"
    # Not a member of nlp: the client is refused there.
    refused = cli(live, gpulab_cli, pem, "submit", "--project", "nlp", str(job_file(live.var_dir)))
    assert refused.returncode != 0
    assert not js_errors
