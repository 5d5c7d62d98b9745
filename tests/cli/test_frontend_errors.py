"""Errors the TLS front end makes itself answer JSON under /api/, never nginx's HTML pages:
gpulab-cli and scripts print the `error` text instead of an HTML dump or "could not parse"."""

import pytest
import requests

from tests.cli.cli_support import foreign_login_pem, running_portal, wait_until

pytestmark = pytest.mark.cli


@pytest.fixture(scope="module")
def portal(tools):
    with running_portal("frontend-errors") as live:
        yield live


def _get(portal, path, **kwargs):
    return requests.get(portal.api_url + path, verify=str(portal.server_ca), timeout=10, **kwargs)


def test_certificate_of_another_ca_gets_json(portal, tmp_path):
    pem = foreign_login_pem(tmp_path / "foreign.pem")
    answer = _get(portal, "/gpulab/v4.0/jobs", cert=(str(pem), str(pem)))
    assert answer.status_code == 400
    assert answer.headers["Content-Type"].startswith("application/json")
    assert "not accepted by the TLS front end" in answer.json()["error"]


def test_body_too_large_for_the_front_end_gets_json(portal):
    answer = requests.post(
        portal.api_url + "/gpulab/v4.0/jobs",
        data=b"x" * (3 * 1024 * 1024),
        verify=str(portal.server_ca),
        timeout=20,
    )
    assert answer.status_code == 413
    assert "larger than the TLS front end accepts" in answer.json()["error"]


def test_portal_down_gets_json_without_retry_after(portal):
    assert _get(portal, "/gpulab/v4.0/version").status_code == 200
    portal.server.terminate()
    portal.server.wait(timeout=20)
    wait_until(
        lambda: _get(portal, "/gpulab/v4.0/version").status_code == 503,
        timeout=20,
        what="the front end to notice the portal is down",
    )
    answer = _get(portal, "/gpulab/v4.0/jobs")
    assert answer.status_code == 503
    # gpulab-cli would retry every read five times, sleeping Retry-After each time
    # (tests/cli/test_frontend_keepalive.py)
    assert "Retry-After" not in answer.headers
    assert "not answering" in answer.json()["error"]
    # pages (not /api/) keep nginx's own page: browsers show it
    assert "json" not in requests.get(
        portal.api_url.removesuffix("/api") + "/", verify=str(portal.server_ca), timeout=10
    ).headers.get("Content-Type", "")
